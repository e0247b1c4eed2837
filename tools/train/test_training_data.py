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
from world import World  # noqa: E402

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

    def test_relations_point_at_training_entities_only(self):
        train_names = {e.name for e in self.world.split("train")}
        others = {e.name for e in self.world.entities} - train_names
        for e in self.world.entities:
            for v in e.facts.values():
                self.assertNotIn(v, others, f"{e.name} points at a non-training entity")

    def test_held_out_names_never_reach_training_text(self):
        held = [e.name for e in self.world.split("held_out")]
        rng = random.Random(0)
        text = []
        for e in self.world.split("train"):
            text.append(self.world.document(e, rng))
            text.extend(q for _, q, _ in self.world.questions(e))
        blob = "\n".join(text)
        for name in held:
            self.assertNotIn(name, blob)

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

    def test_stage2_batches_are_seeded(self):
        """A resumed run redraws the same batches: the data depends on the seed alone."""
        from data import Batches
        a = Batches(World(14), self.tok, seed=5).stage2(4, 5)
        b = Batches(World(14), self.tok, seed=5).stage2(4, 5)
        self.assertTrue(all(bool((x == y).all()) for x, y in zip(a, b)))

if __name__ == "__main__":
    unittest.main()
