"""Checks of the Memory3 reference (run: /usr/bin/python3 -m unittest -v tools/reference/test_memory3_ref.py).

1. Token selection (§3.3) on crafted queries/keys whose weights are worked out by hand: the tie
   rule, GQA group sums, softmax vs exp_sum ranking differently, BOS/padding masking, short
   references; then on a real tiny model against explicit per-query loops over the activations of
   a separate token-by-token pass (which also supplies the expected post-RoPE keys and values).
2. With no memories the model is the plain Llama of llama_ref.py: exactly so without a reference
   BOS; with one, it is llama_ref run on "<s>Reference:" + text with the 128-position memory
   interval left empty between them.
3. The batched chunkwise pass equals the token-by-token decoder with 0, 1 and 5 memories per chunk,
   across prompt chunks, the inherited first decoded chunk and a freshly retrieved one.
4. A memory changes nothing before its chunk; read only at the last layer it changes exactly its
   chunk; the first decoded chunk reads the last prompt chunk's memories.
5. Config parsing, shape checks, and main() writing the goldens.
The tiny checkpoint (4 layers, hidden 64, 4 heads / 2 kv heads, vocab 128) is made in a temp dir
by tools/make_checkpoint.py's own functions.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import unittest
from dataclasses import replace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, TOOLS)
import llama_ref  # noqa: E402
import make_checkpoint  # noqa: E402
import memory3_ref as m3ref  # noqa: E402

BOS_IDS = [1, 17, 42, 99]           # stands for the tokenized "<s>Reference:" (b = 4)


def make_memory3_model(out: str, memory3: dict) -> str:
    """A seeded random llama turned into a memory3 folder: same tensors, model_type and the
    memory3 object changed in config.json."""
    a = make_checkpoint.parse_args(["--hidden", "64", "--layers", "4", "--heads", "4", "--kv-heads", "2",
                                    "--ffn", "96", "--vocab", "128", "--seed", "3", "--out", out])
    make_checkpoint.generate(a)
    path = os.path.join(out, "config.json")
    with open(path, "r", encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["model_type"] = "memory3"
    cfg["architectures"] = ["Memory3ForCausalLM"]
    cfg["memory3"] = memory3
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)
    return out


def crafted_qk(S: np.ndarray, H: int, Hkv: int):
    """q, k whose score q_i . k_j / sqrt(d) is exactly S[h, i, j]: k_j = sqrt(d) e_j, q_i^h = S[h, i]."""
    _, n, _ = S.shape
    d = n
    k = np.repeat((math.sqrt(d) * np.eye(n))[None], Hkv, axis=0)
    return S.astype(np.float64), k


class SelectionByHand(unittest.TestCase):
    def test_exact_tie_goes_to_lower_index(self):
        # zero queries: every softmax row is uniform, every w_j is equal -> tokens 0..7
        q, k = np.zeros((2, 20, 4)), np.random.default_rng(0).standard_normal((1, 20, 4))
        lw = m3ref.selection_log_weights(q, k, np.ones(20, bool), "softmax")
        np.testing.assert_allclose(np.exp(lw), np.full((1, 20), 2.0), rtol=1e-14)   # 2 heads x 20 rows x 1/20
        idx, margin, ties = m3ref.top_tokens(lw, np.ones(20, bool), 8)
        self.assertEqual(idx.tolist(), [list(range(8))])
        self.assertEqual((margin, ties), (math.inf, 1))

    def test_four_favoured_tokens_then_ties(self):
        # every query scores 5 on tokens {2, 5, 9, 11} and 0 elsewhere: those four take the top
        # ranks; the other eight are tied, so 0, 1, 3, 4 complete the top 8.
        n = 12
        S = np.zeros((1, n, n))
        S[:, :, [2, 5, 9, 11]] = 5.0
        q, k = crafted_qk(S, 1, 1)
        lw = m3ref.selection_log_weights(q, k, np.ones(n, bool), "softmax")
        z = 4 * math.exp(5) + 8
        expect = np.where(np.isin(np.arange(n), [2, 5, 9, 11]), n * math.exp(5) / z, n / z)
        np.testing.assert_allclose(np.exp(lw[0]), expect, rtol=1e-12)
        idx, margin, ties = m3ref.top_tokens(lw, np.ones(n, bool), 8)
        self.assertEqual((margin, ties), (math.inf, 1))             # 4 and 6 tie at the cut
        self.assertEqual(idx.tolist(), [[0, 1, 2, 3, 4, 5, 9, 11]])

    def test_group_sum_and_softmax_vs_exp_sum(self):
        # Head 0: query 0 scores 10 on token 0; queries 1..5 score 1 on token 1. Head 1 (same kv
        # head) has zero queries, i.e. uniform rows. By hand, with e = exp(1):
        #   softmax: w_0 = e^10/(e^10+5) + 5/(e+5) + 1,  w_1 = 1/(e^10+5) + 5e/(e+5) + 1  -> token 1
        #   exp_sum: w_0 = e^10 + 5 + 6,                 w_1 = 1 + 5e + 6                 -> token 0
        n = 6
        S = np.zeros((2, n, n))
        S[0, 0, 0] = 10.0
        S[0, 1:, 1] = 1.0
        q, k = crafted_qk(S, 2, 1)
        e, e10 = math.e, math.exp(10)
        valid = np.ones(n, bool)
        soft = np.exp(m3ref.selection_log_weights(q, k, valid, "softmax")[0])
        self.assertAlmostEqual(soft[0], e10 / (e10 + 5) + 5 / (e + 5) + 1, places=12)
        self.assertAlmostEqual(soft[1], 1 / (e10 + 5) + 5 * e / (e + 5) + 1, places=12)
        self.assertAlmostEqual(soft[2], 1 / (e10 + 5) + 5 / (e + 5) + 1, places=12)
        self.assertAlmostEqual(soft.sum(), 2 * n, places=12)          # each (head, query) row sums to 1
        expo = np.exp(m3ref.selection_log_weights(q, k, valid, "exp_sum")[0])
        self.assertAlmostEqual(expo[0] / (e10 + 11), 1.0, places=12)
        self.assertAlmostEqual(expo[1], 1 + 5 * e + 6, places=9)
        self.assertEqual(m3ref.top_tokens(np.log(soft)[None], valid, 1)[0].tolist(), [[1]])
        self.assertEqual(m3ref.top_tokens(np.log(expo)[None], valid, 1)[0].tolist(), [[0]])

    def test_masked_tokens_neither_query_nor_key(self):
        # the weights of 7 valid tokens among 10 (3 masked, as BOS or padding) equal the weights
        # computed on the 7 alone; too few tokens leave -1 slots
        rng = np.random.default_rng(1)
        q, k = rng.standard_normal((4, 10, 8)), rng.standard_normal((2, 10, 8))
        valid = np.array([0, 1, 1, 0, 1, 1, 1, 0, 1, 1], bool)
        for mode in m3ref.SELECTIONS:
            full = m3ref.selection_log_weights(q, k, valid, mode)
            alone = m3ref.selection_log_weights(q[:, valid], k[:, valid], np.ones(7, bool), mode)
            np.testing.assert_allclose(full[:, valid], alone, rtol=1e-13)
            self.assertTrue(np.all(np.isneginf(full[:, ~valid])))
            idx, margin, _ = m3ref.top_tokens(full, valid, 8)
            self.assertEqual(idx[:, -1].tolist(), [-1, -1])
            self.assertEqual(sorted(idx[0, :7].tolist()), np.flatnonzero(valid).tolist())
            self.assertEqual(margin, math.inf)


class ModelTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = make_memory3_model(os.path.join(cls.tmp.name, "m3"), {"reference_bos_ids": BOS_IDS})
        cls.cfg, cls.m3 = m3ref.load_config(cls.dir)
        cls.W = llama_ref.Weights(cls.dir)
        cls.model = m3ref.Memory3(cls.cfg, cls.W, cls.m3)
        rng = np.random.default_rng(7)
        cls.refs = [rng.integers(0, 128, n).tolist() for n in (128, 128, 128, 128, 128, 50, 5)]
        cls.mems = cls.model.write_batch(cls.refs)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def variant(self, bos=BOS_IDS, **m3):
        return m3ref.Memory3(self.cfg, self.W, replace(self.m3, **m3), bos)

    def ids(self, T, seed=11):
        return [1] + np.random.default_rng(seed).integers(0, 128, T - 1).tolist()

    @staticmethod
    def scale(x):
        return max(1.0, float(np.abs(x).max()))

    def test_config(self):
        self.assertEqual(self.m3.memory_layers, (0, 1))                # first half of 4 layers
        self.assertEqual((self.m3.tokens_per_head, self.m3.reference_length, self.m3.chunk_length,
                          self.m3.references_per_chunk, self.m3.reference_bos, self.m3.selection),
                         (8, 128, 64, 5, "<s>Reference:", "softmax"))
        self.assertEqual(self.model.b, 4)
        with self.assertRaisesRegex(ValueError, "unknown field"):
            m3ref.Memory3Config.from_json({"memory_layer": [0]}, 4)
        with self.assertRaisesRegex(ValueError, "memory_layers"):
            m3ref.Memory3Config.from_json({"memory_layers": [1, 0]}, 4)
        with self.assertRaisesRegex(ValueError, "reference BOS ids"):
            m3ref.Memory3(self.cfg, self.W, replace(self.m3, reference_bos_ids=None))
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump({"model_type": "llama"}, f)
            with self.assertRaisesRegex(ValueError, "memory3"):
                m3ref.load_config(d)

    def test_write_matches_explicit_loops(self):
        """Selection recomputed with per-query softmax loops over the attention inputs of an
        independent token-by-token pass of "<s>Reference:" + reference at positions 0.. (BOS rows
        skipped), whose cached keys/values are the expected memory contents."""
        plain = self.variant(bos=[])
        b, d, group = len(BOS_IDS), self.cfg.head_dim, self.cfg.heads // self.cfg.kv_heads
        for ref, mem in zip(self.refs[4:], self.mems[4:]):                  # 128, 50 and 5 tokens
            seq = BOS_IDS + ref
            _, trace = plain._token_by_token(seq, np.arange(len(seq)), np.zeros(len(seq), int), lambda c: [])
            n = len(ref)
            for li, l in enumerate(self.m3.memory_layers):
                p = f"model.layers.{l}.self_attn."
                X = trace[l]["x"][b:]                                       # reference tokens only
                Q = (X @ self.W(p + "q_proj.weight").T).reshape(n, self.cfg.heads, d)
                K = (X @ self.W(p + "k_proj.weight").T).reshape(n, self.cfg.kv_heads, d)
                for g in range(self.cfg.kv_heads):
                    w = np.zeros(n)
                    for h in range(g * group, (g + 1) * group):
                        for i in range(n):
                            row = np.exp(K[:, g] @ Q[i, h] / math.sqrt(d))
                            w += row / row.sum()
                    # repeated tokens tie exactly at layer 0 (input = embedding, no RoPE); compare
                    # at 1e-10 so the loops' own rounding cannot break a tie the rule must decide
                    ranked = sorted(range(n), key=lambda j: (-round(w[j], 10), j))[:8]
                    got = mem.indices[li, g]
                    self.assertEqual(got[got >= 0].tolist(), sorted(ranked))
                    self.assertTrue(np.all(got[len(ranked):] == -1))
                    np.testing.assert_allclose(np.exp(mem.log_weights[li, g]), w, rtol=1e-11)
                    sel = np.array(sorted(ranked))
                    np.testing.assert_allclose(mem.keys[li, g, :len(sel)], trace[l]["k"][g, b + sel], atol=1e-12)
                    np.testing.assert_allclose(mem.values[li, g, :len(sel)], trace[l]["v"][g, b + sel], atol=1e-12)
                    self.assertTrue(np.all(mem.keys[li, g, len(sel):] == 0))
        # padding content is irrelevant; one reference alone = the same reference in a batch
        again = self.model.write_batch([self.refs[5]], pad_id=77)[0]
        np.testing.assert_array_equal(again.indices, self.mems[5].indices)
        np.testing.assert_allclose(again.keys, self.mems[5].keys, atol=1e-12)

    def test_zero_memories_is_plain_llama(self):
        ids = self.ids(90)
        none = lambda c: []  # noqa: E731
        # without a reference BOS: exactly llama_ref (RoPE is relative, so the b + R offset of the
        # context positions cannot matter)
        plain = self.variant(bos=[]).forward_chunkwise(ids, none)
        want = llama_ref.forward_loaded(self.cfg, self.W, ids)
        self.assertLess(np.abs(plain - want).max(), 1e-10 * self.scale(want))
        # with it: llama_ref's own attention over BOS + text, positions 0..b-1 then b+R+t
        b, R = len(BOS_IDS), self.m3.reference_length
        pos = np.concatenate([np.arange(b), b + R + np.arange(len(ids))])
        cos, sin = llama_ref.rope_cos_sin(self.cfg, pos)
        gapped = lambda cfg, W, i, x, _c, _s: llama_ref.attention(cfg, W, i, x, cos, sin)  # noqa: E731
        want = llama_ref.forward_loaded(self.cfg, self.W, BOS_IDS + ids, attention_fn=gapped)[b:]
        got = self.model.forward_chunkwise(ids, none)
        self.assertLess(np.abs(got - want).max(), 1e-10 * self.scale(want))
        # and the reference BOS does matter
        self.assertGreater(np.abs(got - plain).max(), 1e-3)

    def source(self, per_chunk, mems=None):
        mems = self.mems if mems is None else mems
        return lambda c: [mems[(per_chunk * c + r) % len(mems)] for r in range(per_chunk)]

    def test_chunkwise_equals_token_by_token(self):
        small = self.variant(chunk_length=16)
        ids = self.ids(60)
        for per_chunk in (0, 1, 5):
            # prompt 37 tokens = chunks 0, 1, 2 (partial); decoded chunk 0 (37..52) reads chunk 2's
            # memories; decoded chunk 1 (53..59) is chunk 3
            a = small.forward_chunkwise(ids, self.source(per_chunk), prompt_len=37)
            b = small.forward_token_by_token(ids, self.source(per_chunk), prompt_len=37)
            self.assertLess(np.abs(a - b).max(), 1e-10 * self.scale(a), per_chunk)
        # the paper's chunk length, 5 memories, two prompt chunks and a retrieval while decoding
        ids = self.ids(150, seed=12)
        a = self.model.forward_chunkwise(ids, self.source(5), prompt_len=80)
        b = self.model.forward_token_by_token(ids, self.source(5), prompt_len=80)
        self.assertLess(np.abs(a - b).max(), 1e-10 * self.scale(a))

    def test_memories_act_only_in_their_chunk(self):
        C, T = 16, 60
        ids = self.ids(T)
        only = lambda mems, target: (lambda c: mems if c == target else [])  # noqa: E731
        none = lambda c: []  # noqa: E731
        # memory layers 0, 1: earlier chunks untouched, its chunk changed (later chunks change too,
        # through the context keys/values of layers 1..3 that the memory already influenced)
        m = self.variant(chunk_length=C)
        base = m.forward_chunkwise(ids, none)
        with_mem = m.forward_chunkwise(ids, only(self.mems[:2], 1))
        diff = np.abs(with_mem - base).max(axis=1)
        self.assertLess(diff[:C].max(), 1e-12)
        self.assertGreater(diff[C:2 * C].min(), 1e-6)
        # read at the last layer only, nothing else can carry it: exactly its own chunk changes
        last = self.variant(chunk_length=C, memory_layers=(3,))
        mems = last.write_batch(self.refs[:2])
        base = last.forward_chunkwise(ids, none)
        diff = np.abs(last.forward_chunkwise(ids, only(mems, 1)) - base).max(axis=1)
        self.assertLess(max(diff[:C].max(), diff[2 * C:].max()), 1e-12)
        self.assertGreater(diff[C:2 * C].min(), 1e-6)
        # decoding: prompt 40 = chunks 0, 1, 2 (32..39); positions 40..55 are decoded chunk 0, which
        # keeps chunk 2's memories; 56.. are decoded chunk 1 = chunk index 3, asked for afresh
        self.assertEqual(m3ref.chunk_indices(T, 40, C).tolist(),
                         [0] * 16 + [1] * 16 + [2] * 24 + [3] * 4)
        asked = []

        def src(c):
            asked.append(c)
            return mems if c == 2 else []

        got = last.forward_token_by_token(ids, src, prompt_len=40)
        self.assertEqual(asked, [0, 1, 2, 3])                              # retrieved once per chunk
        diff = np.abs(got - base).max(axis=1)
        self.assertLess(max(diff[:32].max(), diff[56:].max()), 1e-12)
        self.assertGreater(diff[32:56].min(), 1e-6)

    def test_one_and_five_memories_per_chunk(self):
        ids = self.ids(70)
        base = self.model.forward_chunkwise(ids, lambda c: [])
        for per_chunk in (1, 5):
            got = self.model.forward_chunkwise(ids, self.source(per_chunk))
            self.assertTrue(np.all(np.isfinite(got)))
            self.assertGreater(np.abs(got - base).max(), 1e-4)
            self.assertEqual(got.shape, (70, 128))
        with self.assertRaisesRegex(ValueError, "references_per_chunk"):
            self.model.forward_chunkwise(ids, self.source(6))
        other = self.variant(memory_layers=(2, 3)).write(self.refs[0])
        with self.assertRaisesRegex(ValueError, "does not match the model"):
            self.model.forward_chunkwise(ids, lambda c: [other])
        with self.assertRaisesRegex(ValueError, "1..128 tokens"):
            self.model.write(list(range(129)))

    def test_main_writes_goldens(self):
        with tempfile.TemporaryDirectory() as out:
            self.assertEqual(m3ref.main([self.dir, out, "--prompt-len", "70", "--decode-len", "70"]), 0)
            with open(os.path.join(out, "meta.json")) as f:
                meta = json.load(f)
            self.assertEqual(meta["prompt_len"], 70)
            for n in ("0", "1", "5"):
                self.assertLess(meta["max_abs_chunkwise_minus_token"][n], 1e-9)
                a = np.load(os.path.join(out, f"logits_chunkwise_{n}.npy"))
                self.assertEqual((a.dtype, a.shape), (np.float32, (140, 128)))
            idx = np.load(os.path.join(out, "memory_indices.npy"))
            self.assertEqual((idx.dtype, idx.shape), (np.int32, (8, 2, 2, 8)))
            self.assertTrue(np.all(idx[-1, :, :, 5:] == -1))               # the 5-token reference
            self.assertEqual(np.load(os.path.join(out, "schedule_5.npy")).shape, (3, 5))


if __name__ == "__main__":
    unittest.main()
