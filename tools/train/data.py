#!/usr/bin/python3
"""Training batches drawn from the synthetic world (world.py), tokenized as the engine does.

Stage 1 (warm-up, Memory3 §4): packed rows of whole items about `train` entities, each item a
document, a plain question ("Question: ... Answer: ...") or a chat exchange, every item starting
at context position 0 with its own causal mask (exactly what the engine sees for one prompt).

Stage 2 (Memory3 §4, continued training with memories): one chat or plain question per row and
references_per_chunk one-fact references for it, encoded on the fly into sparse memories by the
model being trained. The question is about a fresh entity made up for this row (its facts are
only in the references: the model must read them) or a `train` entity (sometimes with its facts
missing from the references, so that the model keeps answering from its weights when retrieval
misses). The loss is on the answer only. ("paragraphs" is the first recipe, see
_stage2_paragraphs.)

The dialogue stage (stage2_data "dialogue", issue 27): a row is a conversation of one to six
turns in the chat template, each turn about another entity and reading its own references, as
`mnemo chat` reads them (each user turn is a prompt whose chunk retrieves with its own text; the
answer keeps that chunk's memories). Fresh entities' relations often name other made-up entities,
so answers are strings the model never produced; questions come in every training wording.
"""

from __future__ import annotations

import random
from typing import List, Tuple

import torch

from tokenizer import Tokenizer, chat_prompt
from world import Entity, World


def conversation(tok: Tokenizer, turns: List[Tuple[str, str]]) -> Tuple[List[int], List[int], List[int]]:
    """A conversation of (question, answer) turns as the engine's chat renders it
    (tokenizer.CHAT_TEMPLATE, each answer as the single-turn items write it): its ids, where each
    turn's prompt ends (its answer starts) and where each answer ends (at its <|im_end|>, which a
    chat feeds with the next turn: where turn t + 1 begins). Every boundary is at a special token
    or before the answer's space, where encoding a prefix gives a prefix of the whole (checked)."""
    text, ends = "", []
    for t, (q, a) in enumerate(turns):
        text += ("\n" if t else "") + chat_prompt(q)
        ends.append(len(text))
        text += " " + a
        ends.append(len(text))
        text += "<|im_end|>"
    ids = [tok.bos] + tok.encode(text)
    cut = [1 + len(tok.encode(text[:c])) for c in ends]
    for c, c_text in zip(cut, ends):
        assert ids[1:c] == tok.encode(text[:c_text]), "a turn boundary inside a token"
    return ids, cut[0::2], cut[1::2]


def turns_of_tokens(length: int, answer_ends: List[int]) -> List[int]:
    """The turn of every token of a conversation: turn t + 1 begins at answer t's <|im_end|>."""
    turn, out = 0, []
    for i in range(length):
        while turn < len(answer_ends) - 1 and i >= answer_ends[turn]:
            turn += 1
        out.append(turn)
    return out


def qa_text(q: str, a: str, chat: bool) -> str:
    if chat:
        return chat_prompt(q) + " " + a + "<|im_end|>"
    return f"Question: {q} Answer: {a}"


class Batches:
    def __init__(self, world: World, tok: Tokenizer, seed: int):
        self.world, self.tok = world, tok
        self.rng = random.Random(seed)
        self.train = world.split("train")
        self.practice = world.split("practice")
        self.readable = self.train + self.practice   # distractor references
        self.readable_of = {k: [e for e in self.readable if e.kind == k] for k in {e.kind for e in self.readable}}
        self.fresh_share = 0.6                       # stage-2 questions about fresh entities
        self.stage2_data = "facts"                   # or "paragraphs" (the first recipe)
        self.lookalike_share = 0.0                   # distractors named like the entity asked
        self.wordings = "base"                       # question wordings (world.questions)
        self.new_names = 0.0                         # fresh facts naming made-up entities
        self.max_turns = 6                           # dialogue rows: turns at most
        self.name_questions = 0.0                    # dialogue: share of fresh turns asking a made-up name
        self.foreign_names = 0.0                     # made-up names of other makes (other_names.foreign_name)

    # --- items -------------------------------------------------------------------------------

    def _qa_ids(self, e: Entity, chat: bool) -> List[int]:
        return self._qa(e, chat)[0]

    def _qa(self, e: Entity, chat: bool) -> Tuple[List[int], int, str]:
        """The item's ids, where its answer starts (the prompt's tokens are a prefix of the
        whole item's: SentencePiece never merges across the space before the answer) and the
        relation asked."""
        rel, q, a = self.rng.choice(self.world.questions(e, self.wordings))
        ids = [self.tok.bos] + self.tok.encode(qa_text(q, a, chat))
        prompt = chat_prompt(q) if chat else f"Question: {q} Answer:"
        return ids + ([] if chat else [self.tok.eos]), 1 + len(self.tok.encode(prompt)), rel

    def stage1_item(self) -> List[int]:
        e = self.rng.choice(self.train)
        r = self.rng.random()
        if r < 0.3:
            return [self.tok.bos] + self.tok.encode(self.world.document(e, self.rng)) + [self.tok.eos]
        return self._qa_ids(e, chat=r >= 0.55)

    def stage1(self, rows: int, length: int) -> Tuple[torch.Tensor, ...]:
        """ids, targets, positions, item ids [rows, length]; target -100 where no loss."""
        ids = torch.zeros(rows, length, dtype=torch.long)
        tgt = torch.full((rows, length), -100, dtype=torch.long)
        pos = torch.zeros(rows, length, dtype=torch.long)
        item = torch.full((rows, length), -1, dtype=torch.long)
        for r in range(rows):
            at, k = 0, 0
            while True:
                x = self.stage1_item()[:length]
                if at + len(x) > length:
                    break
                ids[r, at:at + len(x)] = torch.tensor(x)
                tgt[r, at:at + len(x) - 1] = torch.tensor(x[1:])
                pos[r, at:at + len(x)] = torch.arange(len(x))
                item[r, at:at + len(x)] = k
                at, k = at + len(x), k + 1
        return ids, tgt, pos, item

    def stage2(self, rows: int, refs: int) -> Tuple[torch.Tensor, ...]:
        """ids, targets, positions, item [rows, T] and references, validity and value marks
        [rows, refs, n]."""
        if self.stage2_data == "paragraphs":
            return self._stage2_paragraphs(rows, refs)
        if self.stage2_data == "dialogue":
            return self._dialogues(rows, refs)
        items, starts, ref_lists = [], [], []
        for _ in range(rows):
            fresh = self.rng.random() < self.fresh_share
            e = self.world.fresh(self.rng) if fresh else self.rng.choice(self.train)
            chat = self.rng.random() < 0.7
            ids, start, rel = self._qa(e, chat)
            items.append(ids)
            starts.append(start)
            ref_lists.append(self._references(e, fresh, rel, refs))
        return self._pad(items, starts, ref_lists, refs)

    def _references(self, e: Entity, fresh: bool, rel: str, refs: int) -> List[Tuple[List[int], List[bool]]]:
        """The references a question about e reads, encoded with their value marks."""
        # References as the knowledge server cuts them: one fact each. The entity's own facts
        # (all of them, as a lexical retrieval on its name finds them), the rest facts of
        # other world or fresh entities, so that the right reference is told apart by its
        # name and relation, not by looking unfamiliar. Sometimes a train entity's facts are
        # missing: the model must then answer from its weights.
        own = self.world.fact_spans(e, self.rng) if fresh or self.rng.random() < 0.8 else []
        texts = own[:refs]
        while len(texts) < refs:
            same = self.rng.random() < 0.5
            if self.lookalike_share > 0 and self.rng.random() < self.lookalike_share:
                same, d = True, self._lookalike(e)
            else:
                d = self.world.fresh(self.rng, e.kind if same else None, self.new_names, self.foreign_names) \
                    if self.rng.random() < 0.5 \
                    else self.rng.choice(self.readable_of[e.kind] if same else self.readable)
            if d.id == e.id and not fresh:
                continue
            facts = self.world.fact_spans(d, self.rng)
            texts.append(facts[list(d.facts).index(rel)] if same else self.rng.choice(facts))
        self.rng.shuffle(texts)
        return [self.tok.encode_marking(*t) for t in texts]

    def _entity(self, fresh: bool) -> Entity:
        return self.world.fresh(self.rng, new_names=self.new_names, foreign=self.foreign_names) if fresh \
            else self.rng.choice(self.train)

    def _dialogues(self, rows: int, refs: int) -> Tuple[torch.Tensor, ...]:
        """Conversations (module doc): ids, targets, positions, item [rows, T], references,
        validity, value marks [rows, turns * refs, n], each reference's turn [rows, turns * refs]
        and each token's turn [rows, T]. A turn's tokens run from the end of the previous answer
        (its <|im_end|>, which the chat feeds with the next prompt) to the end of its answer; the
        loss is on every answer. A fifth of the conversations are about training entities with no
        references at all: a chat without the knowledge server."""
        items, turns_of, losses, ref_lists, ref_turns = [], [], [], [], []
        for _ in range(rows):
            n = 1 + int(self.rng.random() * self.max_turns) if self.rng.random() < 0.8 else 1
            offline = self.rng.random() < 0.2
            pairs, rl, rt = [], [], []
            for t in range(n):
                fresh = not offline and self.rng.random() < self.fresh_share
                e = self._entity(fresh)
                qs = self.world.questions(e, self.wordings)
                made_up = [x for x in qs if fresh and x[2] not in self.world.known_values]
                # Copying a name never seen is the skill being taught; ask it often enough.
                if made_up and self.rng.random() < self.name_questions:
                    qs = made_up
                rel, q, a = self.rng.choice(qs)
                pairs.append((q, a))
                if not offline:
                    for r in self._references(e, fresh, rel, refs):
                        rl.append(r)
                        rt.append(t)
            ids, prompt_ends, answer_ends = conversation(self.tok, pairs)
            turn_ids = turns_of_tokens(len(ids), answer_ends)
            loss_spans = [(p, a + 1) for p, a in zip(prompt_ends, answer_ends)]   # each answer and its <|im_end|>
            items.append(ids)
            turns_of.append(turn_ids)
            losses.append(loss_spans)
            ref_lists.append(rl)
            ref_turns.append(rt)
        M = max(1, max(len(r) for r in ref_lists))
        T = max(len(x) for x in items)
        n = max([len(r) for rs in ref_lists for r, _ in rs] + [1])
        ids = torch.zeros(rows, T, dtype=torch.long)
        tgt = torch.full((rows, T), -100, dtype=torch.long)
        pos = torch.arange(T).expand(rows, T).clone()
        item = torch.full((rows, T), -1, dtype=torch.long)
        tok_turn = torch.full((rows, T), -1, dtype=torch.long)
        R = torch.zeros(rows, M, n, dtype=torch.long)
        V = torch.zeros(rows, M, n, dtype=torch.bool)
        K = torch.zeros(rows, M, n, dtype=torch.bool)
        ref_turn = torch.full((rows, M), -2, dtype=torch.long)
        for r, x in enumerate(items):
            ids[r, :len(x)] = torch.tensor(x)
            item[r, :len(x)] = 0
            tok_turn[r, :len(x)] = torch.tensor(turns_of[r])
            for a, b in losses[r]:
                tgt[r, a - 1:b - 1] = torch.tensor(x[a:b])
            for j, (ref, marks) in enumerate(ref_lists[r]):
                R[r, j, :len(ref)] = torch.tensor(ref)
                V[r, j, :len(ref)] = True
                K[r, j, :len(ref)] = torch.tensor(marks)
                ref_turn[r, j] = ref_turns[r][j]
        return ids, tgt, pos, item, R, V, K, ref_turn, tok_turn

    def _lookalike(self, e: Entity) -> Entity:
        """A distractor of e's kind whose name shares the most SentencePiece pieces with e's
        name: what mnemo-kb's BM25 over token ids ranks next to e's own facts ("Quear Mousaim"
        brings "Mousairt Staitriox"'s birthplace). Random distractors are told apart by any
        unfamiliar piece; these only by reading the whole name, which is what the held-out
        questions need."""
        mine = set(self.tok.encode(e.name))
        pool = [self.world.fresh(self.rng, e.kind) for _ in range(8)] + \
            self.rng.sample(self.readable_of[e.kind], 24)
        pool = [d for d in pool if d.name != e.name]
        return max(pool, key=lambda d: (len(mine & set(self.tok.encode(d.name))), self.rng.random()))

    def _stage2_paragraphs(self, rows: int, refs: int) -> Tuple[torch.Tensor, ...]:
        """The first stage-2 recipe, kept to reproduce the shipped model's training: questions
        about the fixed `practice` entities (or train ones), whole-entity paragraphs as
        references, loss on every token. It did not teach reading (see the model card): the
        model memorised the 220 practice entities, and a paragraph's memory keeps mostly the
        repeated name."""
        items, starts, ref_lists = [], [], []
        for _ in range(rows):
            practice = self.rng.random() < 0.6
            e = self.rng.choice(self.practice if practice else self.train)
            chat = self.rng.random() < 0.7
            items.append(self._qa_ids(e, chat))
            starts.append(1)
            others = [d for d in self.rng.sample(self.readable, refs + 1) if d.id != e.id][: refs - 1]
            docs = others + ([e] if practice or self.rng.random() < 0.8 else [self.rng.choice(self.readable)])
            self.rng.shuffle(docs)
            ref_lists.append([(self.tok.encode(self.world.document(d, self.rng)), None) for d in docs])
        return self._pad(items, starts, ref_lists, refs)

    def _pad(self, items, starts, ref_lists, refs) -> Tuple[torch.Tensor, ...]:
        """ref_lists: per row, (ids, marks or None) per reference; marks flag the tokens that
        state the fact's value (the answer a memory must keep)."""
        rows = len(items)
        T = max(len(x) for x in items)
        n = max(len(r) for rs in ref_lists for r, _ in rs)
        ids = torch.zeros(rows, T, dtype=torch.long)
        tgt = torch.full((rows, T), -100, dtype=torch.long)
        pos = torch.arange(T).expand(rows, T).clone()
        item = torch.full((rows, T), -1, dtype=torch.long)
        R = torch.zeros(rows, refs, n, dtype=torch.long)
        V = torch.zeros(rows, refs, n, dtype=torch.bool)
        K = torch.zeros(rows, refs, n, dtype=torch.bool)
        for r, x in enumerate(items):
            ids[r, :len(x)] = torch.tensor(x)
            # Loss on the answer only (its first token predicted from the prompt's last): the
            # question's fresh name is noise, the answer is what reading must get right.
            tgt[r, starts[r] - 1:len(x) - 1] = torch.tensor(x[starts[r]:])
            item[r, :len(x)] = 0
            for j, (ref, marks) in enumerate(ref_lists[r]):
                R[r, j, :len(ref)] = torch.tensor(ref)
                V[r, j, :len(ref)] = True
                if marks is not None:
                    K[r, j, :len(ref)] = torch.tensor(marks)
        return ids, tgt, pos, item, R, V, K
