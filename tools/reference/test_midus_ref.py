"""Checks of the MIDUS-HML reference (run: /usr/bin/python3 -m unittest -v tools/reference/test_midus_ref.py).

1. Product-key selection: the two-stage top-k (eq. 14, 15) selects the same pairs as the paper's
   "Fused Cartesian Top-k" over the whole n x n grid (appendix G.1) whenever scores are distinct,
   and the same score values even with ties (the k best of the grid always lie in I x J).
2. HIVE (eq. 4) equals the cached per-head tables V_h^cache = V W_h of appendix G.2, and the
   vectorised HML equals a loop-by-loop implementation written straight from appendix D.3.
3. A zero latent value bank makes every memory block the identity (appendix D.2): the whole
   model then equals the independent numpy Llama reference on the base weights.
4. Causality (a memory block's attention sees only the past) and a hand-worked 2x2 lookup.
5. The checked-in test model's goldens are this reference's output.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOOLS, "common"))
import llama_core  # noqa: E402
import llama_ref  # noqa: E402
import midus_ref  # noqa: E402
import safetensors_io as st  # noqa: E402

TINY = os.path.join(REPO, "tests", "data", "models", "midus_hml-tiny-f32")
DT = torch.float64


def naive_hml_token(a_t: np.ndarray, keys: np.ndarray, bank: np.ndarray, proj: np.ndarray, k: int) -> np.ndarray:
    """One token, loops only: a_t [H, d_h] -> [H * d_h]."""
    H, dh = a_t.shape
    dp, n = dh // 2, keys.shape[2]
    out = []
    for h in range(H):
        s_row = [sum(a_t[h, d] * keys[h, 0, i, d] for d in range(dp)) for i in range(n)]
        s_col = [sum(a_t[h, dp + d] * keys[h, 1, j, d] for d in range(dp)) for j in range(n)]
        rows = sorted(range(n), key=lambda i: (-s_row[i], i))[:k]
        cols = sorted(range(n), key=lambda j: (-s_col[j], j))[:k]
        cand = [(s_row[i] + s_col[j], a * k + b, i, j) for a, i in enumerate(rows) for b, j in enumerate(cols)]
        chosen = sorted(cand, key=lambda c: (-c[0], c[1]))[:k]
        top = max(c[0] for c in chosen)
        e = [math.exp(c[0] - top) for c in chosen]
        alpha = [v / sum(e) for v in e]
        latent = [sum(alpha[u] * bank[chosen[u][2] * n + chosen[u][3], c] for u in range(k))
                  for c in range(bank.shape[1])]
        out += [sum(latent[c] * proj[h, c, d] for c in range(len(latent))) for d in range(dh)]
    return np.array(out)


def write_variant(src: str, dst: str, edit_tensor=None, edit_config=None) -> None:
    """Copy a model folder with some tensors (float64 -> same dtype) and/or config fields changed."""
    os.makedirs(dst, exist_ok=True)
    tensors = st.read_checkpoint(src)
    out = {}
    for name, t in tensors.items():
        v = t.to_float64()
        if edit_tensor is not None:
            v = edit_tensor(name, v)
        out[name] = st.Tensor(t.dtype, st.encode(v, t.dtype))
    st.write_safetensors(os.path.join(dst, "model.safetensors"), out)
    with open(os.path.join(src, "config.json"), "r", encoding="utf-8") as f:
        cfg = json.load(f)
    if edit_config is not None:
        edit_config(cfg)
    with open(os.path.join(dst, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f)


class ProductKeySelection(unittest.TestCase):
    def test_two_stage_equals_fused_cartesian_topk_for_distinct_scores(self):
        g = torch.Generator().manual_seed(5)
        for n, k in [(8, 1), (8, 3), (8, 8), (5, 4), (16, 4), (64, 4)]:
            s_row = torch.randn(7, 3, n, generator=g, dtype=DT)
            s_col = torch.randn(7, 3, n, generator=g, dtype=DT)
            pi2, sig2 = midus_ref.product_key_topk(s_row, s_col, k)
            pif, sigf = midus_ref.fused_cartesian_topk(s_row, s_col, k)
            self.assertTrue(torch.equal(pi2, pif), f"n={n} k={k}")
            self.assertTrue(torch.allclose(sig2, sigf, rtol=0, atol=1e-14))
            self.assertTrue(bool((sig2[..., :-1] >= sig2[..., 1:]).all()), "best pair first")

    def test_same_scores_with_ties(self):
        # Integer scores tie often; which tied slot wins is a convention (ties to the lower index
        # at each stage), but the selected score values are the grid's k best in every case.
        g = torch.Generator().manual_seed(6)
        for n, k in [(6, 3), (4, 4), (9, 2)]:
            s_row = torch.randint(0, 3, (50, n), generator=g).to(DT)
            s_col = torch.randint(0, 3, (50, n), generator=g).to(DT)
            _, sig2 = midus_ref.product_key_topk(s_row, s_col, k)
            _, sigf = midus_ref.fused_cartesian_topk(s_row, s_col, k)
            self.assertTrue(torch.equal(sig2, sigf))

    def test_ties_go_to_the_lower_index(self):
        x = torch.tensor([[1.0, 3.0, 3.0, 0.0, 3.0]], dtype=DT)
        self.assertEqual(midus_ref.topk_stable(x, 3).tolist(), [[1, 2, 4]])

    def test_value_index_is_row_major_zero_based(self):
        # n = 4; rows favour i = 2, columns favour j = 3: pi = 2 * 4 + 3 = 11.
        s_row = torch.tensor([0.0, 0.1, 5.0, 0.2], dtype=DT)
        s_col = torch.tensor([0.0, 0.3, 0.1, 7.0], dtype=DT)
        pi, sigma = midus_ref.product_key_topk(s_row, s_col, 1)
        self.assertEqual(pi.tolist(), [11])
        self.assertEqual(sigma.tolist(), [12.0])

    def test_hand_worked_lookup(self):
        # H = 1, d_h = 2 (d_p = 1), n = 2, k = 2, r = 1, W = [[1, 10]].
        # q = (1, 2); row keys (1, -1) -> S_row = (1, -1); column keys (0.5, 1) -> S_col = (1, 2).
        # Rows I = (0, 1), columns J = (1, 0); pair scores: (0,1) 3, (0,0) 2, (1,1) 1, (1,0) 0.
        # Top-2: (0,1) -> slot 1 and (0,0) -> slot 0 with alpha = softmax(3, 2).
        a = torch.tensor([[[1.0, 2.0]]], dtype=DT)
        keys = torch.tensor([[[[1.0], [-1.0]], [[0.5], [1.0]]]], dtype=DT)
        bank = torch.tensor([[100.0], [1.0], [7.0], [9.0]], dtype=DT)
        proj = torch.tensor([[[1.0, 10.0]]], dtype=DT)
        out = midus_ref.hml(a, keys, bank, proj, 2)
        w1 = math.exp(3) / (math.exp(3) + math.exp(2))
        latent = w1 * 1.0 + (1 - w1) * 100.0
        self.assertTrue(torch.allclose(out, torch.tensor([[latent, 10 * latent]], dtype=DT), rtol=1e-14, atol=0))


class Hive(unittest.TestCase):
    def test_equals_cached_head_tables(self):
        g = torch.Generator().manual_seed(7)
        T, H, k, n2, r, dh = 5, 4, 3, 36, 6, 8
        bank = torch.randn(n2, r, generator=g, dtype=DT)
        proj = torch.randn(H, r, dh, generator=g, dtype=DT)
        pi = torch.randint(0, n2, (T, H, k), generator=g)
        alpha = torch.softmax(torch.randn(T, H, k, generator=g, dtype=DT), dim=-1)
        a = midus_ref.hive(bank, pi, alpha, proj)
        b = midus_ref.hive_cached(bank, pi, alpha, proj)
        self.assertEqual(tuple(a.shape), (T, H, dh))
        self.assertTrue(torch.allclose(a, b, rtol=0, atol=1e-12))

    def test_vectorised_hml_equals_loops(self):
        rng = np.random.default_rng(8)
        T, H, dh, n, k, r = 4, 3, 6, 5, 3, 4
        a = rng.standard_normal((T, H, dh))
        keys = rng.standard_normal((H, 2, n, dh // 2))
        bank = rng.standard_normal((n * n, r))
        proj = rng.standard_normal((H, r, dh))
        got = midus_ref.hml(torch.from_numpy(a), torch.from_numpy(keys), torch.from_numpy(bank),
                            torch.from_numpy(proj), k).numpy()
        for t in range(T):
            np.testing.assert_allclose(got[t], naive_hml_token(a[t], keys, bank, proj, k), rtol=0, atol=1e-12)


class WholeModel(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="midus-ref-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def ids(self):
        with open(os.path.join(TINY, "golden_ids.txt"), "r", encoding="utf-8") as f:
            return [int(t) for t in f.read().strip().split(",")]

    def test_zero_value_bank_is_the_llama_backbone(self):
        zero = os.path.join(self.tmp, "zero")
        write_variant(TINY, zero, lambda name, v: 0 * v if name.endswith(".hml.values") else v)
        llama = os.path.join(self.tmp, "llama")
        write_variant(TINY, llama, edit_config=lambda c: c.update(model_type="llama"))
        ids = self.ids()
        got = midus_ref.forward(zero, ids)
        want = llama_ref.forward(llama, ids)  # the numpy reference ignores the memory tensors
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10 * np.abs(want).max())
        # with the random bank the memory blocks matter
        self.assertGreater(np.abs(midus_ref.forward(TINY, ids) - want).max(), 1e-2 * np.abs(want).max())

    def test_memory_block_with_zero_bank_is_the_identity(self):
        cfg = midus_ref.MidusConfig.load(TINY)
        W = midus_ref.Weights(TINY)
        W.cache["model.memory_blocks.1.hml.values"] = torch.zeros(cfg.n_keys ** 2, cfg.latent_dim, dtype=DT)
        x = torch.randn(5, cfg.hidden, generator=torch.Generator().manual_seed(9), dtype=DT)
        rope = llama_core.Rope(cfg, torch.arange(5))
        self.assertTrue(torch.equal(midus_ref.memory_block(cfg, W, 1, x, rope), x))

    def test_causal(self):
        ids = self.ids()
        full = midus_ref.forward(TINY, ids)
        for t in (0, 4, 9):
            part = midus_ref.forward(TINY, ids[:t + 1])
            np.testing.assert_allclose(part[-1], full[t], rtol=0, atol=1e-10)

    def test_memory_blocks_run_before_their_anchor(self):
        # Moving the memory blocks (same weights) to other anchors changes the output; putting
        # memory block 0 before block 0 equals applying it to the embeddings by hand.
        cfg = midus_ref.MidusConfig.load(TINY)
        W = midus_ref.Weights(TINY)
        ids = self.ids()
        rope = llama_core.Rope(cfg, torch.arange(len(ids)))
        x = W("model.embed_tokens.weight")[torch.tensor(ids)]
        x = midus_ref.memory_block(cfg, W, 0, x, rope)
        for i in range(cfg.layers):
            if i == 2:
                x = midus_ref.memory_block(cfg, W, 1, x, rope)
            x = llama_core.decoder_layer(cfg, W, i, x, rope)
        by_hand = llama_core.rms_norm(x, W("model.norm.weight"), cfg.eps) @ W("lm_head.weight").T
        self.assertEqual(cfg.anchors, [0, 2])
        np.testing.assert_allclose(midus_ref.forward(TINY, ids), by_hand.numpy(), rtol=0, atol=1e-12)
        cfg.anchors = [0, 1]
        moved = midus_ref.forward_loaded(cfg, W, ids).numpy()
        self.assertGreater(np.abs(moved - by_hand.numpy()).max(), 1e-3)

    def test_goldens_are_the_reference_output(self):
        ids = self.ids()
        stats = midus_ref.LookupStats()
        want = midus_ref.forward(TINY, ids, stats)
        golden = np.load(os.path.join(TINY, "golden_logits.npy"))
        self.assertEqual(golden.shape, (len(ids), midus_ref.MidusConfig.load(TINY).vocab))
        np.testing.assert_allclose(golden, want, rtol=0, atol=1e-6 * np.abs(want).max())
        # 12 tokens x 4 heads x 2 memory blocks x 3 selections (rows, columns, pairs)
        self.assertEqual(stats.lookups, 12 * 4 * 2 * 3)
        self.assertGreater(stats.min_margin, 1e-4)

    def test_config_errors(self):
        with open(os.path.join(TINY, "config.json"), "r", encoding="utf-8") as f:
            base = json.load(f)
        for field, value in [("memory_anchors", [2, 0]), ("memory_anchors", [0, 3]), ("memory_anchors", []),
                             ("memory_topk", 9), ("head_dim", 6)]:
            c = dict(base)
            c[field] = value
            with self.assertRaises(ValueError, msg=f"{field}={value}"):
                midus_ref.MidusConfig.from_dict(c)


if __name__ == "__main__":
    unittest.main()
