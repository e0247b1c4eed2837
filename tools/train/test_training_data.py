#!/usr/bin/python3
"""What the default model's claims rest on, checked on the shipped files (assets/world,
assets/default-model) and on the generator: the world is a pure function of its seed, held-out
entities never reach training text or the tokenizer's text, relations point at training
entities only, the corpus is one fact per paragraph, and the training batches look as designed."""

import json
import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from world import HELD_OUT_QUESTIONS, MORE_QUESTIONS, QUESTIONS, UNSEEN_SPLITS, World  # noqa: E402

ASSETS = os.path.join(ROOT, "assets")


class WorldTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.world = World(14)

    def test_same_seed_same_world_other_seed_other_world(self):
        self.assertEqual(World(14).to_json(), self.world.to_json())
        self.assertNotEqual(World(15).to_json(), self.world.to_json())

    def test_shipped_question_sets_are_this_world(self):
        for split in ("train", "held_out", "practice"):
            want = {(e.name, v) for e in self.world.split(split) for v in e.facts.values()}
            with open(os.path.join(ASSETS, "world", f"questions-{split}.jsonl")) as f:
                items = [json.loads(line) for line in f]
            self.assertEqual(len(items), 3 * len(self.world.split(split)))
            for it in items:
                self.assertEqual(it["set"], split)
                self.assertTrue(any(name in it["question"] and v == it["answer"] for name, v in want), it)

    def test_relations_point_at_training_entities_or_unseen_ones(self):
        """Train and practice entities' relations point at training entities only; held-out and
        novel entities' relations point at held-out or novel ones, so their answers are names
        training never produced (the unseen_names set)."""
        train_names = {e.name for e in self.world.split("train")}
        unseen = {e.name for e in self.world.entities if e.split in UNSEEN_SPLITS}
        names = {e.name for e in self.world.entities}
        others = names - train_names
        for e in self.world.entities:
            for rel, v in e.facts.items():
                if e.split in UNSEEN_SPLITS and v in names:
                    self.assertIn(v, unseen, f"{e.name}.{rel} points at a seen entity")
                elif e.split not in UNSEEN_SPLITS:
                    self.assertNotIn(v, others, f"{e.name} points at a non-training entity")

    def test_unseen_names_never_reach_training_text(self):
        """No held-out or novel name is in any text training shows: documents and every training
        wording of the train entities, nor a fresh entity's name or value."""
        held = [e.name for e in self.world.entities if e.split in UNSEEN_SPLITS]
        rng = random.Random(0)
        text = []
        for e in self.world.split("train"):
            text.append(self.world.document(e, rng))
            text.extend(q + " " + a for _, q, a in self.world.questions(e, "train"))
        for _ in range(2000):
            f = self.world.fresh(rng, new_names=0.5)
            text.append(f.name + " " + " ".join(f.facts.values()))
        blob = "\n".join(text)
        for name in held:
            self.assertNotIn(name, blob)

    def test_held_out_wordings_are_not_training_wordings(self):
        for key, held in HELD_OUT_QUESTIONS.items():
            for q in held:
                self.assertNotIn(q, QUESTIONS[key] + MORE_QUESTIONS[key])

    def test_reading_sets(self):
        """The shipped reading sets: what each claims to measure holds for every item."""
        def items(name):
            with open(os.path.join(ASSETS, "world", f"questions-{name}.jsonl")) as f:
                return [json.loads(line) for line in f]
        unseen = {e.name for e in self.world.entities if e.split in UNSEEN_SPLITS}
        names = items("unseen_names")
        self.assertGreaterEqual(len(names), 500)
        for it in names:
            self.assertIn(it["answer"], unseen, it)
        wordings = items("held_out_wordings")
        self.assertGreaterEqual(len(wordings), 500)
        held_wordings = {q.split("{e}")[0] for qs in HELD_OUT_QUESTIONS.values() for q in qs}
        for it in wordings:
            self.assertTrue(any(it["question"].startswith(w) for w in held_wordings), it)
        follow = items("follow_up")
        self.assertGreaterEqual(sum(1 for it in follow if it["turn"] > 1), 500)
        for it in follow:
            self.assertEqual(len(it["history"]), it["turn"] - 1)
        corrected = items("corrected")
        self.assertGreaterEqual(len(corrected), 500)
        for it in corrected:
            self.assertNotEqual(it["answer"], it["old"], it)
        new_names = items("new_names")
        self.assertGreaterEqual(len(new_names), 500)
        with open(os.path.join(ASSETS, "world", "additions.jsonl")) as f:
            added = {d["id"]: d for d in map(json.loads, f)}
        known = {e.name.lower() for e in self.world.entities}
        for it in new_names:   # the answer is stated by its own added document, and is no world name
            self.assertIn(it["answer"], added[it["id"].split(".")[0]]["text"], it)
            self.assertNotIn(it["answer"].lower(), known, it)

    def test_new_names_are_of_a_make_training_never_draws(self):
        """The new_names set's names (English make: a stem and a town ending such as "thorpe")
        are never drawn by training's fresh entities, of the world's make or of the other makes
        the reading drill adds (foreign=1)."""
        with open(os.path.join(ASSETS, "world", "questions-new_names.jsonl")) as f:
            answers = {json.loads(line)["answer"] for line in f}
        rng = random.Random(4)
        drawn = set()
        for _ in range(3000):
            for foreign in (0.0, 1.0):
                e = self.world.fresh(rng, new_names=1.0, foreign=foreign)
                drawn.add(e.name)
                drawn.update(e.facts.values())
        self.assertFalse(answers & drawn)
        self.assertFalse({e.name for e in self.world.entities} & answers)

    def test_fresh_entities_are_new(self):
        names = {e.name.lower() for e in self.world.entities}
        rng = random.Random(3)
        for _ in range(200):
            self.assertNotIn(self.world.fresh(rng).name.lower(), names)

    def test_corpus_is_every_entity_one_fact_per_paragraph(self):
        with open(os.path.join(ASSETS, "world", "knowledge.jsonl")) as f:
            docs = [json.loads(line) for line in f]
        self.assertEqual(len(docs), len(self.world.entities))
        by_name = {e.name: e for e in self.world.entities}
        for d in docs:
            e = by_name[d["title"]]
            self.assertEqual(d["metadata"]["split"], e.split)
            paragraphs = d["text"].split("\n\n")
            self.assertEqual(len(paragraphs), len(e.facts))
            for p, v in zip(paragraphs, e.facts.values()):
                self.assertIn(e.name.lower(), p.lower())
                self.assertIn(v, p)


class BatchTests(unittest.TestCase):
    """The batches as train.py draws them (needs python3-torch and python3-sentencepiece)."""

    def setUp(self):
        try:
            from data import Batches
            from tokenizer import Tokenizer
        except ImportError as e:  # no torch or sentencepiece: say so, do not pass silently
            self.skipTest(f"training dependencies missing: {e}")
        self.tok = Tokenizer(os.path.join(ASSETS, "default-model"))
        self.batches = Batches(World(14), self.tok, seed=1)

    def test_stage1_items_start_at_position_zero_with_bos(self):
        ids, tgt, pos, item = self.batches.stage1(4, 64)
        for r in range(4):
            for t in range(64):
                if item[r, t] >= 0 and pos[r, t] == 0:
                    self.assertEqual(int(ids[r, t]), self.tok.bos)

    def test_stage2_loss_is_on_the_answer_only(self):
        ids, tgt, pos, item, refs, valid, marks = self.batches.stage2(8, 5)
        for r in range(8):
            scored = [int(t) for t in tgt[r] if t >= 0]
            answer = self.tok.decode([t for t in scored if t not in (self.tok.eos, self.tok.im_end)])
            self.assertTrue(answer.strip(), "some answer tokens are scored")
            self.assertLessEqual(len(scored), 12)
        self.assertEqual(refs.shape[:2], (8, 5))
        self.assertTrue(bool(valid.any(-1).all()), "every reference has tokens")

    def test_stage2_marks_each_references_value(self):
        """keep_loss trains on these marks: each reference's marked tokens must spell the value
        its sentence states, and a fresh question's answer must be one reference's value."""
        ids, tgt, pos, item, refs, valid, marks = self.batches.stage2(16, 5)
        self.assertFalse(bool((marks & ~valid).any()), "marks only on reference tokens")
        values = {v.lower() for e in self.batches.world.entities for v in e.facts.values()}
        for r in range(16):
            stated = []
            for j in range(5):
                text = self.tok.decode(refs[r, j][valid[r, j]].tolist())
                value = self.tok.decode(refs[r, j][marks[r, j]].tolist()).strip()
                self.assertTrue(value and value in text, (text, value))
                stated.append(value.lower())
            answer = self.tok.decode([int(t) for t in tgt[r] if t >= 0 and t not in (self.tok.eos, self.tok.im_end)])
            if answer.strip().lower() not in values:      # a fresh entity's own value: must be read
                self.assertIn(answer.strip().lower(), stated)

    def test_lookalike_distractors_share_name_pieces(self):
        """A look-alike distractor is another entity of the same kind whose name shares more
        pieces with the asked entity's than a random one does on average: the hard negative that
        BM25 over token ids returns (e.g. "Mousairt Staitriox" for "Quear Mousaim")."""
        world = self.batches.world
        rng = random.Random(3)
        shared, random_shared = 0, 0
        for _ in range(40):
            e = world.fresh(rng)
            d = self.batches._lookalike(e)
            self.assertEqual(d.kind, e.kind)
            self.assertNotEqual(d.name, e.name)
            mine = set(self.tok.encode(e.name))
            shared += len(mine & set(self.tok.encode(d.name)))
            random_shared += len(mine & set(self.tok.encode(rng.choice(self.batches.readable_of[e.kind]).name)))
        self.assertGreater(shared, 2 * random_shared)

    def test_dialogue_rows_read_their_own_turns_references(self):
        """A conversation row is the chat template's rendering; the loss is on the answers (and
        their <|im_end|>) only; each turn's references are its own (its entity's facts among
        them when it reads any); the <|im_end|> closing a turn is fed with the next one."""
        b = self.batches
        b.stage2_data, b.wordings, b.new_names, b.fresh_share = "dialogue", "train", 0.5, 1.0
        ids, tgt, pos, item, refs, valid, marks, ref_turn, tok_turn = b.stage2(12, 5)
        for r in range(12):
            n = int(tok_turn[r].max()) + 1
            text = self.tok.decode(ids[r][item[r] >= 0].tolist())
            self.assertEqual(text.count("user"), n, text)
            scored = [t for t in range(ids.shape[1]) if tgt[r, t] >= 0]
            answers = self.tok.decode([int(tgt[r, t]) for t in scored if int(tgt[r, t]) != self.tok.im_end])
            for t in range(n):
                turn_tokens = [i for i in range(ids.shape[1]) if tok_turn[r, i] == t]
                self.assertEqual(turn_tokens, list(range(turn_tokens[0], turn_tokens[-1] + 1)), "a turn is contiguous")
                if t > 0:
                    self.assertEqual(int(ids[r, turn_tokens[0]]), self.tok.im_end)
                mine = [j for j in range(refs.shape[1]) if ref_turn[r, j] == t]
                if mine:   # this turn's answer is stated by one of its own references
                    stated = [self.tok.decode(refs[r, j][marks[r, j]].tolist()).strip() for j in mine]
                    self.assertTrue(any(v and v in answers for v in stated), (stated, answers))
            self.assertEqual(int(tgt[r, scored[-1]]), self.tok.im_end)

    def test_stage2_batches_are_seeded(self):
        """A resumed run redraws the same batches: the data depends on the seed alone."""
        from data import Batches
        a = Batches(World(14), self.tok, seed=5).stage2(4, 5)
        b = Batches(World(14), self.tok, seed=5).stage2(4, 5)
        self.assertTrue(all(bool((x == y).all()) for x, y in zip(a, b)))

if __name__ == "__main__":
    unittest.main()
