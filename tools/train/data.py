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
"""

from __future__ import annotations

import random
from typing import List, Tuple

import torch

from tokenizer import Tokenizer, chat_prompt
from world import Entity, World


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

    # --- items -------------------------------------------------------------------------------

    def _qa_ids(self, e: Entity, chat: bool) -> List[int]:
        return self._qa(e, chat)[0]

    def _qa(self, e: Entity, chat: bool) -> Tuple[List[int], int, str]:
        """The item's ids, where its answer starts (the prompt's tokens are a prefix of the
        whole item's: SentencePiece never merges across the space before the answer) and the
        relation asked."""
        rel, q, a = self.rng.choice(self.world.questions(e))
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
        items, starts, ref_lists = [], [], []
        for _ in range(rows):
            fresh = self.rng.random() < self.fresh_share
            e = self.world.fresh(self.rng) if fresh else self.rng.choice(self.train)
            chat = self.rng.random() < 0.7
            ids, start, rel = self._qa(e, chat)
            items.append(ids)
            starts.append(start)
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
                    d = self.world.fresh(self.rng, e.kind if same else None) if self.rng.random() < 0.5 \
                        else self.rng.choice(self.readable_of[e.kind] if same else self.readable)
                if d.id == e.id and not fresh:
                    continue
                facts = self.world.fact_spans(d, self.rng)
                texts.append(facts[list(d.facts).index(rel)] if same else self.rng.choice(facts))
            self.rng.shuffle(texts)
            ref_lists.append([self.tok.encode_marking(*t) for t in texts])
        return self._pad(items, starts, ref_lists, refs)

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
