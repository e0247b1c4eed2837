"""Checks of the Memory3 torch reference (run: /usr/bin/python3 -m unittest -v tools/reference/test_memory3.py).

1. Token selection (§3.3) on crafted queries/keys whose weights are worked out by hand: the tie
   rule, GQA group sums, softmax vs exp_sum ranking differently, BOS/padding masking, short
   references; then on a real tiny model against explicit per-query loops over the activations of
   a separate token-by-token pass at positions -b.., which also supplies the expected post-RoPE
   keys (rotated at j), values and retrieval vector.
2. With no memories the model is llama_ref.py's independent numpy Llama: exactly so without a
   reference BOS; with one, it is llama_ref run on "<s>Reference:" + text at positions -b..-1 then
   R + t.
3. The batched chunkwise pass equals the token-by-token decoder with 0, 1 and 5 memories per chunk,
   across prompt chunks, the inherited first decoded chunk and a freshly retrieved one; and the
   old layout (everything shifted by +b, stored keys rotated by b more) gives the same logits.
4. A memory changes nothing before its chunk; read only at the last layer it changes exactly its
   chunk; the first decoded chunk reads the last prompt chunk's memories.
5. Retrieval vectors: layer 0 by hand, writer == query path, the BOS matters past layer 0, the
   last layer, cosine ranking and its tie rule, query texts of decoded chunks.
6. Config parsing (retrieval_layer default and range), shape checks, and main() writing goldens.
7. UltraMemV2 memory layers in a memory3 checkpoint (make_memory3_checkpoint.py --memory-layers):
   the generated Tucker buffers and shuffle, placement a:b in the writer's pass (checked by hand
   against ultramem_ref's memory output), chunkwise == token-by-token with them, that they reach
   the logits and retrieval vectors, and the mem_* config errors.
The tiny checkpoint (4 layers, hidden 64, 4 heads / 2 kv heads, vocab 128) is made in a temp dir
by tools/test_models/make_memory3_checkpoint.py's own functions.
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
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOOLS, "common"))
sys.path.insert(0, os.path.join(TOOLS, "test_models"))
import llama_core  # noqa: E402
import llama_ref  # noqa: E402
import make_checkpoint  # noqa: E402
import make_memory3_checkpoint  # noqa: E402
import memory3 as m3ref  # noqa: E402
import safetensors_io  # noqa: E402
import ultramem_ref  # noqa: E402

BOS_IDS = [1, 17, 42, 99]           # stands for the tokenized "<s>Reference:" (b = 4)


def make_memory3_model(out: str, memory3: dict, vocab: int = 128, memory_layers: dict = None) -> str:
    a = make_checkpoint.parse_args(["--hidden", "64", "--layers", "4", "--heads", "4", "--kv-heads", "2",
                                    "--ffn", "96", "--vocab", str(vocab), "--seed", "3", "--dtype", "f32",
                                    "--out", out])
    make_memory3_checkpoint.generate(a, memory3, memory_layers)
    return out


# UltraMemV2 layers: memory 0 reads block 0 and adds after block 2, memory 1 reads and adds at 3.
MEMORY_LAYERS = {"mem_insert_way": "0:2/3:3", "mem_knum": 4, "mem_kdim": 8, "mem_vdim": 8, "mem_knn": 4,
                 "mem_head": 2, "mem_tucker_rank": 2, "mem_tucker_multihead": 2, "mem_value_expand_time": 1,
                 "mem_pre_vdim": 8, "mem_share_ratio": 0.75, "mem_key_expand_time": 2,
                 "mem_q_for_each_tucker_rank": True, "mem_use_glu_act": True}


def crafted_qk(S: torch.Tensor, Hkv: int):
    """q, k whose score q_i . k_j / sqrt(d) is exactly S[h, i, j]: k_j = sqrt(d) e_j, q_i^h = S[h, i]."""
    _, n, _ = S.shape
    k = (math.sqrt(n) * torch.eye(n))[None].repeat(Hkv, 1, 1)
    return S.clone(), k


def t64(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.float64)


class SelectionByHand(unittest.TestCase):
    def test_exact_tie_goes_to_lower_index(self):
        # zero queries: every softmax row is uniform, every w_j is equal -> tokens 0..7
        q = torch.zeros(2, 20, 4)
        k = torch.from_numpy(np.random.default_rng(0).standard_normal((1, 20, 4)))
        valid = torch.ones(20, dtype=torch.bool)
        lw = m3ref.selection_log_weights(q, k, valid, "softmax")
        torch.testing.assert_close(torch.exp(lw), torch.full((1, 20), 2.0), rtol=1e-14, atol=0)  # 2 heads x 20 rows x 1/20
        idx, margin, ties = m3ref.top_tokens(lw, valid, 8)
        self.assertEqual(idx.tolist(), [list(range(8))])
        self.assertEqual((margin, ties), (math.inf, 1))

    def test_four_favoured_tokens_then_ties(self):
        # every query scores 5 on tokens {2, 5, 9, 11} and 0 elsewhere: those four take the top
        # ranks; the other eight are tied, so 0, 1, 3, 4 complete the top 8.
        n = 12
        S = torch.zeros(1, n, n)
        S[:, :, [2, 5, 9, 11]] = 5.0
        q, k = crafted_qk(S, 1)
        valid = torch.ones(n, dtype=torch.bool)
        lw = m3ref.selection_log_weights(q, k, valid, "softmax")
        z = 4 * math.exp(5) + 8
        fav = torch.isin(torch.arange(n), torch.tensor([2, 5, 9, 11]))
        expect = torch.where(fav, torch.tensor(n * math.exp(5) / z), torch.tensor(n / z))
        torch.testing.assert_close(torch.exp(lw[0]), expect, rtol=1e-12, atol=0)
        idx, margin, ties = m3ref.top_tokens(lw, valid, 8)
        self.assertEqual((margin, ties), (math.inf, 1))             # 4 and 6 tie at the cut
        self.assertEqual(idx.tolist(), [[0, 1, 2, 3, 4, 5, 9, 11]])

    def test_group_sum_and_softmax_vs_exp_sum(self):
        # Head 0: query 0 scores 10 on token 0; queries 1..5 score 1 on token 1. Head 1 (same kv
        # head) has zero queries, i.e. uniform rows. By hand, with e = exp(1):
        #   softmax: w_0 = e^10/(e^10+5) + 5/(e+5) + 1,  w_1 = 1/(e^10+5) + 5e/(e+5) + 1  -> token 1
        #   exp_sum: w_0 = e^10 + 5 + 6,                 w_1 = 1 + 5e + 6                 -> token 0
        n = 6
        S = torch.zeros(2, n, n)
        S[0, 0, 0] = 10.0
        S[0, 1:, 1] = 1.0
        q, k = crafted_qk(S, 1)
        e, e10 = math.e, math.exp(10)
        valid = torch.ones(n, dtype=torch.bool)
        soft = torch.exp(m3ref.selection_log_weights(q, k, valid, "softmax")[0])
        self.assertAlmostEqual(float(soft[0]), e10 / (e10 + 5) + 5 / (e + 5) + 1, places=12)
        self.assertAlmostEqual(float(soft[1]), 1 / (e10 + 5) + 5 * e / (e + 5) + 1, places=12)
        self.assertAlmostEqual(float(soft[2]), 1 / (e10 + 5) + 5 / (e + 5) + 1, places=12)
        self.assertAlmostEqual(float(soft.sum()), 2 * n, places=12)   # each (head, query) row sums to 1
        expo = torch.exp(m3ref.selection_log_weights(q, k, valid, "exp_sum")[0])
        self.assertAlmostEqual(float(expo[0]) / (e10 + 11), 1.0, places=12)
        self.assertAlmostEqual(float(expo[1]), 1 + 5 * e + 6, places=9)
        self.assertEqual(m3ref.top_tokens(torch.log(soft)[None], valid, 1)[0].tolist(), [[1]])
        self.assertEqual(m3ref.top_tokens(torch.log(expo)[None], valid, 1)[0].tolist(), [[0]])

    def test_masked_tokens_neither_query_nor_key(self):
        # the weights of 7 valid tokens among 10 (3 masked, as BOS or padding) equal the weights
        # computed on the 7 alone; too few tokens leave -1 slots
        rng = np.random.default_rng(1)
        q, k = t64(rng.standard_normal((4, 10, 8))), t64(rng.standard_normal((2, 10, 8)))
        valid = torch.tensor([0, 1, 1, 0, 1, 1, 1, 0, 1, 1], dtype=torch.bool)
        for mode in m3ref.SELECTIONS:
            full = m3ref.selection_log_weights(q, k, valid, mode)
            alone = m3ref.selection_log_weights(q[:, valid], k[:, valid], torch.ones(7, dtype=torch.bool), mode)
            torch.testing.assert_close(full[:, valid], alone, rtol=1e-13, atol=0)
            self.assertTrue(bool(torch.all(torch.isneginf(full[:, ~valid]))))
            idx, margin, _ = m3ref.top_tokens(full, valid, 8)
            self.assertEqual(idx[:, -1].tolist(), [-1, -1])
            self.assertEqual(sorted(idx[0, :7].tolist()), torch.nonzero(valid).flatten().tolist())
            self.assertEqual(margin, math.inf)

    def test_chunks_and_query_texts(self):
        # prompt 40, chunks of 16: prompt chunks 0, 1, 2 (32..39); decoded 40..55 keep chunk 2;
        # 56..63 are chunk 3, retrieved with the 16 tokens decoded in 40..55
        self.assertEqual(m3ref.chunk_indices(64, 40, 16).tolist(), [0] * 16 + [1] * 16 + [2] * 24 + [3] * 8)
        self.assertEqual(m3ref.query_ranges(64, 40, 16), [(0, 16), (16, 32), (32, 40), (40, 56)])
        self.assertEqual(m3ref.query_ranges(40, 40, 16), [(0, 16), (16, 32), (32, 40)])
        self.assertEqual(m3ref.query_ranges(56, 40, 16), [(0, 16), (16, 32), (32, 40)])   # decoded chunk 0 only
        # a conversation's turns: chunks restart at each segment start (10 and 30), then decoded
        # 40..55 keep the last prompt chunk (30..39), 56.. is the next chunk
        self.assertEqual(m3ref.chunk_indices(64, 40, 16, [10, 30]).tolist(),
                         [0] * 10 + [1] * 16 + [2] * 4 + [3] * 26 + [4] * 8)
        with self.assertRaises(ValueError):
            m3ref.chunk_indices(40, 40, 16, [40])
        self.assertEqual(m3ref.query_ranges(57, 40, 16), [(0, 16), (16, 32), (32, 40), (40, 56)])

    def test_cosine_ranking(self):
        bank = torch.nn.functional.normalize(torch.tensor([[1.0, 0, 0], [0.6, 0.8, 0], [1.0, 0, 0], [0, 0, 1.0]]), dim=1)
        idx, scores = m3ref.retrieve(torch.tensor([1.0, 0, 0]), bank, 3)
        self.assertEqual(idx.tolist(), [0, 2, 1])            # 0 and 2 tie at 1.0: lower number first
        torch.testing.assert_close(scores, torch.tensor([1.0, 1.0, 0.6]), rtol=0, atol=1e-15)


class ModelTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = make_memory3_model(os.path.join(cls.tmp.name, "m3"), {"reference_bos_ids": BOS_IDS})
        cls.cfg, cls.m3 = m3ref.load_config(cls.dir)
        cls.npW = llama_ref.Weights(cls.dir)
        cls.W = m3ref.Weights(cls.npW)
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
        return max(1.0, float(torch.as_tensor(x).abs().max()))

    def test_config(self):
        self.assertEqual(self.m3.memory_layers, (0, 1))                # first half of 4 layers
        self.assertEqual((self.m3.tokens_per_head, self.m3.reference_length, self.m3.chunk_length,
                          self.m3.references_per_chunk, self.m3.reference_bos, self.m3.selection,
                          self.m3.retrieval_layer),
                         (8, 128, 64, 5, "<s>Reference:", "softmax", 1))
        self.assertEqual(self.model.b, 4)
        # retrieval_layer: max(1, layers // 4) by default, any of 0..layers when given
        for layers, want in ((1, 1), (2, 1), (4, 1), (8, 2), (44, 11)):
            self.assertEqual(m3ref.Memory3Config.from_json({}, layers).retrieval_layer, want)
        self.assertEqual(m3ref.Memory3Config.from_json({"retrieval_layer": 0}, 4).retrieval_layer, 0)
        self.assertEqual(m3ref.Memory3Config.from_json({"retrieval_layer": 4}, 4).retrieval_layer, 4)
        for bad in (-1, 5):
            with self.assertRaisesRegex(ValueError, "retrieval_layer"):
                m3ref.Memory3Config.from_json({"retrieval_layer": bad}, 4)
        with self.assertRaisesRegex(ValueError, "unknown field"):
            m3ref.Memory3Config.from_json({"memory_layer": [0]}, 4)
        with self.assertRaisesRegex(ValueError, "unknown field"):
            m3ref.Memory3Config.from_json({"retrieval_layers": 1}, 4)
        with self.assertRaisesRegex(ValueError, "memory_layers"):
            m3ref.Memory3Config.from_json({"memory_layers": [1, 0]}, 4)
        with self.assertRaisesRegex(ValueError, "reference BOS ids"):
            m3ref.Memory3(self.cfg, self.W, replace(self.m3, reference_bos_ids=None))
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump({"model_type": "llama"}, f)
            with self.assertRaisesRegex(ValueError, "memory3"):
                m3ref.load_config(d)
        # the checkpoint generator refuses a bad memory3 object before writing anything
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "x")
            with self.assertRaisesRegex(ValueError, "unknown field"):
                make_memory3_model(out, {"tokens_per_heads": 4})
            self.assertFalse(os.path.exists(out))

    def test_write_matches_explicit_loops(self):
        """Selection recomputed with per-query softmax loops over the attention inputs of an
        independent token-by-token pass of "<s>Reference:" + reference at positions -b.. (BOS rows
        skipped), whose cached keys/values are the expected memory contents and whose residual
        stream gives the expected retrieval vector."""
        plain = self.variant(bos=[])
        b, d, group = len(BOS_IDS), self.cfg.head_dim, self.cfg.heads // self.cfg.kv_heads
        for ref, mem in zip(self.refs[4:], self.mems[4:]):                  # 128, 50 and 5 tokens
            seq = BOS_IDS + ref
            n = len(ref)
            _, trace, states = plain._token_by_token(seq, list(range(-b, n)), torch.zeros(len(seq), dtype=torch.long),
                                                     lambda c: [])
            for li, l in enumerate(self.m3.memory_layers):
                p = f"model.layers.{l}.self_attn."
                X = trace[l]["x"][b:]                                       # reference tokens only
                Q = (X @ self.W(p + "q_proj.weight").T).reshape(n, self.cfg.heads, d)
                K = (X @ self.W(p + "k_proj.weight").T).reshape(n, self.cfg.kv_heads, d)
                for g in range(self.cfg.kv_heads):
                    w = torch.zeros(n)
                    for h in range(g * group, (g + 1) * group):
                        for i in range(n):
                            row = torch.exp(K[:, g] @ Q[i, h] / math.sqrt(d))
                            w += row / row.sum()
                    # repeated tokens tie exactly at layer 0 (input = embedding, no RoPE); compare
                    # at 1e-10 so the loops' own rounding cannot break a tie the rule must decide
                    ranked = sorted(range(n), key=lambda j: (-round(float(w[j]), 10), j))[:8]
                    got = mem.indices[li, g]
                    self.assertEqual(got[got >= 0].tolist(), sorted(ranked))
                    self.assertTrue(bool(torch.all(got[len(ranked):] == -1)))
                    torch.testing.assert_close(torch.exp(mem.log_weights[li, g]), w, rtol=1e-11, atol=0)
                    sel = torch.tensor(sorted(ranked))
                    # keys rotated at j: the token-by-token cache rotated token b + j at position j
                    torch.testing.assert_close(mem.keys[li, g, :len(sel)], trace[l]["k"][g, b + sel], rtol=0, atol=1e-12)
                    torch.testing.assert_close(mem.values[li, g, :len(sel)], trace[l]["v"][g, b + sel], rtol=0, atol=1e-12)
                    self.assertTrue(bool(torch.all(mem.keys[li, g, len(sel):] == 0)))
            want = states[self.m3.retrieval_layer][b:].mean(dim=0)
            torch.testing.assert_close(mem.retrieval, want / torch.linalg.vector_norm(want), rtol=0, atol=1e-12)
        # the BOS keys are the same pass's first b rows: positions -b..-1
        for i in range(self.cfg.layers):
            torch.testing.assert_close(self.model.bos_k[i], trace[i]["k"][:, :b], rtol=0, atol=1e-12)
            torch.testing.assert_close(self.model.bos_v[i], trace[i]["v"][:, :b], rtol=0, atol=1e-12)
        # padding content is irrelevant; one reference alone = the same reference in a batch
        again = self.model.write_batch([self.refs[5]], pad_id=77)[0]
        self.assertTrue(torch.equal(again.indices, self.mems[5].indices))
        torch.testing.assert_close(again.keys, self.mems[5].keys, rtol=0, atol=1e-12)
        torch.testing.assert_close(again.retrieval, self.mems[5].retrieval, rtol=0, atol=1e-12)

    def test_zero_memories_is_plain_llama(self):
        ids = self.ids(90)
        none = lambda c: []  # noqa: E731
        # without a reference BOS: exactly llama_ref (RoPE is relative, so the R offset of the
        # context positions cannot matter)
        plain = self.variant(bos=[]).forward_chunkwise(ids, none).numpy()
        want = llama_ref.forward_loaded(self.cfg, self.npW, ids)
        self.assertLess(np.abs(plain - want).max(), 1e-10 * self.scale(want))
        # with it: llama_ref's own attention over BOS + text, positions -b..-1 then R + t
        b, R = len(BOS_IDS), self.m3.reference_length
        pos = np.concatenate([np.arange(-b, 0), R + np.arange(len(ids))])
        cos, sin = llama_ref.rope_cos_sin(self.cfg, pos)
        gapped = lambda cfg, W, i, x, _c, _s: llama_ref.attention(cfg, W, i, x, cos, sin)  # noqa: E731
        want = llama_ref.forward_loaded(self.cfg, self.npW, BOS_IDS + ids, attention_fn=gapped)[b:]
        got = self.model.forward_chunkwise(ids, none).numpy()
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
            self.assertLess(float((a - b).abs().max()), 1e-10 * self.scale(a), per_chunk)
        # the paper's chunk length, 5 memories, two prompt chunks and a retrieval while decoding
        ids = self.ids(100, seed=12)
        a = self.model.forward_chunkwise(ids, self.source(5), prompt_len=70)
        b = self.model.forward_token_by_token(ids, self.source(5), prompt_len=70)
        self.assertLess(float((a - b).abs().max()), 1e-10 * self.scale(a))

    def test_old_layout_gives_the_same_logits(self):
        """Everything shifted by +b (BOS at 0..b-1, memory token j at b + j, context at b + R + t)
        with the stored keys rotated by b more: the logits do not change (decision A)."""
        small = self.variant(chunk_length=16)
        b, R, T = small.b, self.m3.reference_length, 40
        turn = llama_core.Rope(self.cfg, torch.tensor([float(b)]))   # RoPE(k, j) -> RoPE(k, j + b)
        old = self.variant(chunk_length=16)
        old.bos_k = [turn(k) for k in small.bos_k]
        shifted = [replace(m, keys=turn(m.keys) * (m.indices[..., None] >= 0)) for m in self.mems]
        ids = self.ids(T)
        chunk = m3ref.chunk_indices(T, 25, 16)
        want = small.forward_chunkwise(ids, self.source(5), prompt_len=25)
        got = old._token_by_token(ids, (b + R + torch.arange(T)).tolist(), chunk, self.source(5, shifted))[0]
        self.assertLess(float((got - want).abs().max()), 1e-10 * self.scale(want))
        # but the stored keys themselves differ: the engine must rotate at j, not at b + j
        self.assertGreater(float((shifted[0].keys - self.mems[0].keys).abs().max()), 1e-2)

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
        diff = (with_mem - base).abs().max(dim=1).values
        self.assertLess(float(diff[:C].max()), 1e-12)
        self.assertGreater(float(diff[C:2 * C].min()), 1e-6)
        # read at the last layer only, nothing else can carry it: exactly its own chunk changes
        last = self.variant(chunk_length=C, memory_layers=(3,))
        mems = last.write_batch(self.refs[:2])
        base = last.forward_chunkwise(ids, none)
        diff = (last.forward_chunkwise(ids, only(mems, 1)) - base).abs().max(dim=1).values
        self.assertLess(max(float(diff[:C].max()), float(diff[2 * C:].max())), 1e-12)
        self.assertGreater(float(diff[C:2 * C].min()), 1e-6)
        # decoding: prompt 40 = chunks 0, 1, 2 (32..39); positions 40..55 are decoded chunk 0, which
        # keeps chunk 2's memories; 56.. are decoded chunk 1 = chunk index 3, asked for afresh
        asked = []

        def src(c):
            asked.append(c)
            return mems if c == 2 else []

        got = last.forward_token_by_token(ids, src, prompt_len=40)
        self.assertEqual(asked, [0, 1, 2, 3])                              # retrieved once per chunk
        diff = (got - base).abs().max(dim=1).values
        self.assertLess(max(float(diff[:32].max()), float(diff[56:].max())), 1e-12)
        self.assertGreater(float(diff[32:56].min()), 1e-6)

    def test_one_and_five_memories_per_chunk(self):
        ids = self.ids(70)
        base = self.model.forward_chunkwise(ids, lambda c: [])
        for per_chunk in (1, 5):
            got = self.model.forward_chunkwise(ids, self.source(per_chunk))
            self.assertTrue(bool(torch.all(torch.isfinite(got))))
            self.assertGreater(float((got - base).abs().max()), 1e-4)
            self.assertEqual(tuple(got.shape), (70, 128))
        with self.assertRaisesRegex(ValueError, "references_per_chunk"):
            self.model.forward_chunkwise(ids, self.source(6))
        other = self.variant(memory_layers=(2, 3)).write(self.refs[0])
        with self.assertRaisesRegex(ValueError, "does not match the model"):
            self.model.forward_chunkwise(ids, lambda c: [other])
        with self.assertRaisesRegex(ValueError, "1..128 tokens"):
            self.model.write(list(range(129)))

    def test_retrieval_vector(self):
        ref = self.refs[5]
        mem = self.mems[5]
        # unit norm; the writer's vector is the query path's vector of the same text
        self.assertAlmostEqual(float(torch.linalg.vector_norm(mem.retrieval)), 1.0, places=14)
        torch.testing.assert_close(self.model.retrieval_vector(ref), mem.retrieval, rtol=0, atol=1e-13)
        # a reference's own text retrieves it first, with cosine 1
        bank = torch.stack([m.retrieval for m in self.mems])
        idx, scores = m3ref.retrieve(self.model.retrieval_vector(ref), bank, 3)
        self.assertEqual(int(idx[0]), 5)
        self.assertAlmostEqual(float(scores[0]), 1.0, places=12)
        self.assertLess(float(scores[1]), 1.0 - 1e-6)
        # layer 0 by hand: the mean of the text's embeddings (no BOS in the mean, nor in the value)
        embed = self.W("model.embed_tokens.weight")
        want = embed[torch.tensor(ref)].mean(dim=0)
        want = want / torch.linalg.vector_norm(want)
        for bos in (BOS_IDS, []):
            got = self.variant(bos=bos, retrieval_layer=0).retrieval_vector(ref)
            torch.testing.assert_close(got, want, rtol=0, atol=1e-14)
        # past layer 0 the text is read after the reference BOS, which changes the vector
        self.assertGreater(float((self.variant(bos=[]).retrieval_vector(ref) - mem.retrieval).abs().max()), 1e-3)
        # the last layer: the residual stream before the final norm, from the token-by-token pass
        b, n = len(BOS_IDS), len(ref)
        _, _, states = self.variant(bos=[])._token_by_token(BOS_IDS + ref, list(range(-b, n)),
                                                  torch.zeros(b + n, dtype=torch.long), lambda c: [])
        top = self.variant(retrieval_layer=self.cfg.layers)
        want = states[self.cfg.layers][b:].mean(dim=0)
        torch.testing.assert_close(top.retrieval_vector(ref), want / torch.linalg.vector_norm(want), rtol=0, atol=1e-12)
        self.assertGreater(float((top.retrieval_vector(ref) - mem.retrieval).abs().max()), 1e-3)
        with self.assertRaisesRegex(ValueError, "at least one token"):
            self.model.retrieval_vector([])

    def test_main_writes_goldens(self):
        settings = {"memory_layers": [0, 1], "tokens_per_head": 4, "reference_length": 24, "chunk_length": 16,
                    "references_per_chunk": 5, "reference_bos_ids": [1, 5, 9], "selection": "softmax",
                    "retrieval_layer": 1}
        with tempfile.TemporaryDirectory() as d:
            model = make_memory3_model(os.path.join(d, "tiny"), settings, vocab=320)
            out = os.path.join(d, "golden")
            self.assertEqual(m3ref.main([model, out]), 0)
            with open(os.path.join(out, "meta.json")) as f:
                meta = json.load(f)
            self.assertEqual((meta["chunks"]["prompt_len"], meta["chunks"]["tokens"]), (40, 64))
            self.assertEqual(meta["memories_per_chunk"]["5"][3], [3, 4, 5, 6, 7])
            self.assertEqual(meta["query_text_ranges"], [[0, 16], [16, 32], [32, 40], [40, 56]])
            for n in ("0", "1", "5"):
                self.assertLess(meta["max_abs_chunkwise_minus_token_by_token"][n], 1e-9)
                a = np.load(os.path.join(out, f"logits_{n}.npy"))
                self.assertEqual((a.dtype, a.shape), (np.float32, (64, 320)))
            idx = np.load(os.path.join(out, "memory_indices.npy"))
            self.assertEqual((idx.dtype, idx.shape), (np.int32, (8, 2, 2, 4)))
            self.assertTrue(np.all(idx[0, :, :, 3] == -1) and np.all(idx[0, :, :, :3] == [0, 1, 2]))   # 3 tokens
            self.assertTrue(np.all(idx[3] == [0, 1, 2, 3]))                                         # exactly 4
            self.assertEqual(np.load(os.path.join(out, "reference_lengths.npy")).tolist(), [3, 10, 24, 4, 24, 18, 24, 21])
            self.assertEqual(np.load(os.path.join(out, "reference_bos_keys.npy")).shape, (4, 2, 3, 16))
            vec = np.load(os.path.join(out, "retrieval_vectors.npy"))
            np.testing.assert_allclose(np.linalg.norm(vec, axis=1), 1.0, rtol=1e-6)
            self.assertEqual(np.load(os.path.join(out, "query_scores.npy")).shape, (4, 8))
            # a margin demand no seed can meet is refused, not written
            self.assertEqual(m3ref.main([model, os.path.join(d, "refused"), "--min-margin", "1e9"]), 1)


class MemoryLayerTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = make_memory3_model(os.path.join(cls.tmp.name, "m3u"),
                                     {"reference_bos_ids": BOS_IDS, "retrieval_layer": 3, "chunk_length": 8,
                                      "reference_length": 16, "tokens_per_head": 4},
                                     memory_layers=MEMORY_LAYERS)
        cls.model = m3ref.Memory3.load(cls.dir)
        cls.plain = m3ref.Memory3(cls.model.cfg, cls.model.W, cls.model.m3)    # same weights, no memory layers

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def ids(self, T, seed=5):
        return [1] + np.random.default_rng(seed).integers(0, 128, T - 1).tolist()

    def test_generated_tensors(self):
        t = safetensors_io.read_checkpoint(self.dir)
        f = self.model.memory.mem_cfg
        self.assertEqual(len(f.insert), 2)
        for l in range(2):
            p = f"model.mem_blocks.{l}."
            perm = t[p + "shuffle_index"].data
            self.assertEqual(t[p + "shuffle_index"].dtype, "I32")
            self.assertEqual(sorted(perm.tolist()), list(range(f.virtual)))
            core = sum(t[p + f"tucker_core.{c}"].to_float64() for c in range(f.cores))   # [H, R, R]
            u, v = t[p + "tucker_core_u"].to_float64(), t[p + "tucker_core_v"].to_float64()
            for h in range(f.mem_heads):
                uu, sv, vt = np.linalg.svd(core[h])
                self.assertGreater(np.abs(u[h]).sum(), 0.5)
                # the leading singular pair (up to a common sign): u^T core v = sigma_1
                self.assertAlmostEqual(float(u[h] @ core[h] @ v[h]), sv[0], places=5)
        self.assertEqual(t["model.full_memory_layer.values_for_look_up"].shape, (f.table_rows, f.vdim))
        self.assertNotIn("model.mem_blocks.0.values_for_look_up", t)      # V2: one shared table
        with open(os.path.join(self.dir, "config.json"), encoding="utf-8") as fh:
            cfg = json.load(fh)
        self.assertEqual({k: cfg[k] for k in MEMORY_LAYERS}, MEMORY_LAYERS)  # top level, contract names

    def test_placement_in_the_writer_pass(self):
        """states[3] (after block 2) = the plain block 2 on states[2] + memory 0 of block 0's x."""
        m, cfg, W = self.model, self.model.cfg, self.model.W
        ids = list(m.bos_ids) + self.ids(10)[1:]
        trace, states = m._encode(ids)
        rope = llama_core.Rope(cfg, torch.arange(len(ids)) - m.b)

        def causal(i, x, r):
            q, k, v = m3ref.project(cfg, W, i, x)
            return m3ref.attend_output(cfg, W, i, r(q), r(k), v, llama_core.causal_mask(len(ids)))

        def block(i, h):
            return llama_core.decoder_layer(cfg, W, i, h, rope, attention=causal)

        def ffn_input(i, h):
            """x of block i: post_attention_layernorm(h + attention(input_layernorm(h)))."""
            p = f"model.layers.{i}."
            h = h + causal(i, llama_core.rms_norm(h, W(p + "input_layernorm.weight"), cfg.eps), rope)
            return llama_core.rms_norm(h, W(p + "post_attention_layernorm.weight"), cfg.eps)

        torch.testing.assert_close(states[1], block(0, states[0]), rtol=0, atol=1e-12)  # 0:2 adds nothing yet
        torch.testing.assert_close(states[2], block(1, states[1]), rtol=0, atol=1e-12)
        want3 = block(2, states[2]) + m.memory.memory(0, ffn_input(0, states[0]))
        torch.testing.assert_close(states[3], want3, rtol=0, atol=1e-12)
        want4 = block(3, states[3]) + m.memory.memory(1, ffn_input(3, states[3]))
        torch.testing.assert_close(states[4], want4, rtol=0, atol=1e-12)

    def test_chunkwise_equals_token_by_token(self):
        mems = self.model.write_batch([self.ids(16, 1)[1:], self.ids(9, 2)[1:]])
        ids = self.ids(20)
        for source in (lambda c: [], lambda c: mems[c % 2:c % 2 + 1], lambda c: mems):
            a = self.model.forward_chunkwise(ids, source, prompt_len=12)
            b = self.model.forward_token_by_token(ids, source, prompt_len=12)
            self.assertLess(float((a - b).abs().max()), 1e-9)

    def test_memory_layers_reach_logits_and_retrieval(self):
        ids = self.ids(12)
        with_mem = self.model.forward_chunkwise(ids, lambda c: [])
        without = self.plain.forward_chunkwise(ids, lambda c: [])
        self.assertGreater(float((with_mem - without).abs().max()), 1e-3)
        # retrieval_layer 3 reads after block 2, where memory 0 is added
        text = self.ids(8, 3)
        self.assertGreater(float((self.model.retrieval_vector(text) - self.plain.retrieval_vector(text)).abs().max()),
                           1e-4)

    def test_config_errors(self):
        base = {"num_hidden_layers": 4, **MEMORY_LAYERS}
        self.assertIsNone(m3ref.memory_layer_fields({"num_hidden_layers": 4}, 4))
        stray = dict(base)
        del stray["mem_insert_way"]
        with self.assertRaisesRegex(ValueError, "config.json: mem_knum is set but mem_insert_way is not"):
            m3ref.memory_layer_fields(stray, 4)
        for f in m3ref.V2_FIELDS:
            v1 = dict(base)
            del v1[f]
            with self.assertRaisesRegex(ValueError, f"config.json: {f} is missing: memory3 reads UltraMemV2"):
                m3ref.memory_layer_fields(v1, 4)
        with self.assertRaisesRegex(ValueError, "overlap"):
            m3ref.memory_layer_fields(dict(base, mem_insert_way="0:2/1:3"), 4)
        self.assertIsInstance(m3ref.memory_layer_fields(base, 4), ultramem_ref.MemoryFields)


if __name__ == "__main__":
    unittest.main()
