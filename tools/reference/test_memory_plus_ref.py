"""Checks of the Memory+ torch reference (run: /usr/bin/python3 -m unittest tools/reference/test_memory_plus_ref.py).

1. The two-stage product-key search returns exactly the best knn of all n_keys^2 pair scores
   (Lample et al. 2019 §3.2), found here by brute force.
2. A second, deliberately naive implementation (token by token with a KV cache, loops over heads,
   RoPE pairs and every one of the n_keys^2 value rows, sigmoid written out) agrees with the
   vectorised memory_plus_ref.forward on every test model and on configurations the test models
   do not cover (no projection at all, several tables, GQA 1:1).
3. Hand-checkable cases: a zero value_proj makes a memory layer add exactly its bias; a zero
   gating weight scales the memory by sigmoid(bias); with knn = 1 one row is read with weight 1;
   RoPE at position 0 is the identity and interleaved RoPE rotates pairs (2j, 2j+1).
4. The committed goldens (tests/data/models/memory_plus*) are what the reference gives now.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOOLS, "test_models"))
import llama_core  # noqa: E402
import memory_plus_ref as ref  # noqa: E402
import make_memory_plus_checkpoint as gen  # noqa: E402

MODELS = os.path.join(REPO, "tests", "data", "models")
TEST_MODELS = ["memory_plus-tiny-f32", "memory_plus-tiny-bf16values", "memory_plus_gated-tiny-f32",
               "memory_plus_peer-tiny-f32"]


def make_model(out: str, *flags: str) -> str:
    gen.main(["--out", out, "--dim", "16", "--heads", "2", "--kv-heads", "2", "--vocab", "40",
              "--n-keys", "6", "--knn", "3", "--k-dim", "8", "--mem-heads", "2", *flags])
    return out


def naive_forward(model_dir: str, ids) -> np.ndarray:
    cfg = ref.Config.load(model_dir)
    W = ref.Weights(model_dir)

    def w(name):
        return W(name).numpy()

    def norm(v, g):
        return g * v / math.sqrt(sum(e * e for e in v) / len(v) + cfg.eps)

    def rope(vec, pos):
        d = len(vec)
        out = vec.copy()
        for j in range(d // 2):
            a, b = (2 * j, 2 * j + 1) if cfg.rope_interleaved else (j, j + d // 2)
            ang = pos * cfg.rope_theta ** (-2.0 * j / d)
            out[a] = vec[a] * math.cos(ang) - vec[b] * math.sin(ang)
            out[b] = vec[a] * math.sin(ang) + vec[b] * math.cos(ang)
        return out

    def silu(z):
        return z / (1.0 + np.exp(-z))

    def gelu(z):
        return 0.5 * z * (1.0 + math.erf(z / math.sqrt(2.0)))

    def memory(l, x):
        p = f"layers.{l}.feed_forward."
        q = w(p + "query_proj.query_mlps.0.weight") @ x
        if cfg.query_bias:
            q = q + w(p + "query_proj.query_mlps.0.bias")
        half, n = cfg.k_dim // 2, cfg.n_keys
        keys = w(p + "keys")                              # rows: ((h * 2 + side) * n + i)
        vp = cfg.values_prefix(l)
        out = np.zeros(cfg.hidden if (cfg.peer or cfg.swilu or cfg.v_dim_given) else cfg.v_dim)
        bag = np.zeros(cfg.v_dim)
        for h in range(cfg.mem_heads):
            qh = q[h * cfg.k_dim:(h + 1) * cfg.k_dim]
            pairs = []
            for i in range(n):
                s1 = float(qh[:half] @ keys[(h * 2 + 0) * n + i])
                for j in range(n):
                    pairs.append((s1 + float(qh[half:] @ keys[(h * 2 + 1) * n + j]), i * n + j))
            pairs.sort(key=lambda t: -t[0])
            best = pairs[:cfg.knn]
            m = max(s for s, _ in best)
            z = sum(math.exp(s - m) for s, _ in best)
            for s, row in best:
                wt = math.exp(s - m) / z
                if cfg.peer:
                    out += gelu(float(x @ w(vp + "values_u.weight")[row])) * wt * w(vp + "values_v.weight")[row]
                else:
                    bag += wt * w(vp + "values.weight")[row]
        if not cfg.peer:
            if cfg.swilu:
                bag = bag * silu(w(p + "swilu_projection.weight") @ x + w(p + "swilu_projection.bias"))
            out = (w(p + "value_proj.weight") @ bag + w(p + "value_proj.bias")) if (cfg.swilu or cfg.v_dim_given) else bag
        if cfg.gated:
            g = float(w(p + "gating.weight") @ x + w(p + "gating.bias"))
            out = out / (1.0 + math.exp(-g))
        return out

    d, H, Hkv = cfg.head_dim, cfg.heads, cfg.kv_heads
    kc = [[[] for _ in range(Hkv)] for _ in range(cfg.layers)]
    vc = [[[] for _ in range(Hkv)] for _ in range(cfg.layers)]
    rows = []
    for pos, tok in enumerate(ids):
        h = w("tok_embeddings.weight")[tok].copy()
        for l in range(cfg.layers):
            p = f"layers.{l}."
            x = norm(h, w(p + "attention_norm.weight"))
            q, k, v = (w(p + f"attention.{n}.weight") @ x for n in ("wq", "wk", "wv"))
            for g in range(Hkv):
                kc[l][g].append(rope(k[g * d:(g + 1) * d], pos))
                vc[l][g].append(v[g * d:(g + 1) * d])
            att = np.zeros(H * d)
            for hh in range(H):
                g = hh // (H // Hkv)
                qh = rope(q[hh * d:(hh + 1) * d], pos)
                sc = [float(qh @ kk) / math.sqrt(d) for kk in kc[l][g]]
                m = max(sc)
                e = [math.exp(s - m) for s in sc]
                att[hh * d:(hh + 1) * d] = sum(ei / sum(e) * vv for ei, vv in zip(e, vc[l][g]))
            h = h + w(p + "attention.wo.weight") @ att
            x = norm(h, w(p + "ffn_norm.weight"))
            if l in cfg.mem_layers:
                h = h + memory(l, x)
            else:
                f = p + "feed_forward."
                h = h + w(f + "w2.weight") @ (silu(w(f + "w1.weight") @ x) * (w(f + "w3.weight") @ x))
        head = w("output.weight")
        rows.append(head @ norm(h, w("norm.weight")))
    return np.array(rows)


class ProductKeySearch(unittest.TestCase):
    def test_two_stage_search_is_exact(self):
        g = torch.Generator().manual_seed(5)
        for heads, n, knn, k in [(2, 8, 3, 8), (4, 16, 4, 16), (3, 5, 5, 6), (2, 32, 1, 4)]:
            T = 7
            q = torch.randn(T, heads, k, generator=g, dtype=torch.float64)
            keys = torch.randn(2 * heads * n, k // 2, generator=g, dtype=torch.float64)
            scores, rows = ref.product_key_search(q, keys, heads, knn)
            K = keys.view(heads, 2, n, k // 2)
            for t in range(T):
                for h in range(heads):
                    s1 = K[h, 0] @ q[t, h, :k // 2]
                    s2 = K[h, 1] @ q[t, h, k // 2:]
                    full = (s1[:, None] + s2[None, :]).flatten()     # row i * n + j
                    best, at = full.topk(knn)
                    torch.testing.assert_close(scores[t, h], best, rtol=0, atol=1e-12)
                    self.assertEqual(sorted(rows[t, h].tolist()), sorted(at.tolist()))


class AgainstNaive(unittest.TestCase):
    def check(self, model_dir: str, ids):
        a = ref.forward(model_dir, ids)
        b = naive_forward(model_dir, ids)
        self.assertEqual(a.shape, b.shape)
        self.assertLess(np.abs(a - b).max(), 1e-10 * max(1.0, np.abs(b).max()), model_dir)

    def test_committed_models(self):
        ids = [3, 17, 250, 9, 9, 101, 64, 0]
        for name in TEST_MODELS:
            self.check(os.path.join(MODELS, name), ids)

    def test_other_configurations(self):
        ids = [1, 5, 39, 7, 22, 5]
        variants = [
            ("plain-bag", ["--no-swilu", "--mem-layers", "1"]),           # out = bag (v = D)
            ("swilu-vdim", ["--v-dim", "12", "--gated", "--mem-layers", "0,1,2"]),
            ("peer-gated-split", ["--peer", "--gated", "--per-layer-values", "--mem-layers", "0,2"]),
            ("halves-rope", ["--mem-layers", "2"]),
        ]
        with tempfile.TemporaryDirectory() as tmp:
            for name, flags in variants:
                d = make_model(os.path.join(tmp, name), *flags, "--seed", str(len(name)))
                if name == "halves-rope":
                    path = os.path.join(d, "config.json")
                    with open(path, encoding="utf-8") as f:
                        c = json.load(f)
                    c["rope_interleaved"] = False
                    with open(path, "w", encoding="utf-8") as f:
                        json.dump(c, f)
                self.check(d, ids)


class HandChecked(unittest.TestCase):
    D, H, n, k = 4, 2, 3, 4

    def weights(self, **extra):
        rng = np.random.default_rng(0)
        p = "layers.0.feed_forward."
        t = {p + "keys": rng.standard_normal((2 * self.H * self.n, self.k // 2)),
             p + "query_proj.query_mlps.0.weight": rng.standard_normal((self.H * self.k, self.D)),
             p + "query_proj.query_mlps.0.bias": rng.standard_normal(self.H * self.k),
             p + "values.weight": rng.standard_normal((self.n * self.n, self.D)),
             p + "swilu_projection.weight": rng.standard_normal((self.D, self.D)),
             p + "swilu_projection.bias": rng.standard_normal(self.D),
             p + "value_proj.weight": rng.standard_normal((self.D, self.D)),
             p + "value_proj.bias": rng.standard_normal(self.D)}
        t.update({p + k: v for k, v in extra.items()})
        return llama_core.Weights(tensors=t)

    def config(self, **kw):
        c = dict(model_type="memory_plus", hidden_size=self.D, num_hidden_layers=1, num_attention_heads=1,
                 intermediate_size=8,
                 vocab_size=5, mem_layers=[0], mem_n_keys=self.n, mem_heads=self.H, mem_knn=2,
                 mem_k_dim=self.k)
        c.update(kw)
        return ref.Config.from_dict(c)

    def test_zero_value_proj_adds_its_bias(self):
        b = np.array([0.5, -1.0, 2.0, 0.25])
        W = self.weights(**{"value_proj.weight": np.zeros((self.D, self.D)), "value_proj.bias": b})
        x = torch.randn(3, self.D, dtype=torch.float64)
        out = ref.memory(self.config(), W, 0, x)
        torch.testing.assert_close(out, torch.tensor(b).expand(3, self.D), rtol=0, atol=0)

    def test_zero_gate_weight_scales_by_sigmoid_of_bias(self):
        x = torch.randn(3, self.D, dtype=torch.float64)
        plain = ref.memory(self.config(), self.weights(), 0, x)
        W = self.weights(**{"gating.weight": np.zeros((1, self.D)), "gating.bias": np.array([0.7])})
        gated = ref.memory(self.config(mem_gated=True), W, 0, x)
        torch.testing.assert_close(gated, plain / (1 + math.exp(-0.7)), rtol=1e-14, atol=0)

    def test_knn_one_reads_the_best_row_of_each_head_with_weight_one(self):
        W = self.weights()
        x = torch.randn(1, self.D, dtype=torch.float64)
        cfg = self.config(mem_knn=1, swilu_projection=False)   # out = bag (no projection)
        q = (x @ W("layers.0.feed_forward.query_proj.query_mlps.0.weight").T
             + W("layers.0.feed_forward.query_proj.query_mlps.0.bias")).view(self.H, self.k)
        K = W("layers.0.feed_forward.keys").view(self.H, 2, self.n, self.k // 2)
        expect = torch.zeros(self.D, dtype=torch.float64)
        for h in range(self.H):
            i = int((K[h, 0] @ q[h, :self.k // 2]).argmax())
            j = int((K[h, 1] @ q[h, self.k // 2:]).argmax())
            expect += W("layers.0.feed_forward.values.weight")[i * self.n + j]
        torch.testing.assert_close(ref.memory(cfg, W, 0, x)[0], expect, rtol=0, atol=1e-14)

    def test_rope(self):
        x = torch.randn(3, 2, 8, dtype=torch.float64)              # [heads, T, d]
        for inter in (True, False):
            cfg = self.config(head_dim=8, rope_theta=1e4, rope_interleaved=inter)
            torch.testing.assert_close(ref.LinguaRope(cfg, torch.zeros(2, dtype=torch.long))(x), x)
        y = ref.LinguaRope(self.config(head_dim=8, rope_theta=100.0), torch.tensor([0, 5]))(x)
        ang = 5 * 100.0 ** (-2 * 1 / 8)                          # pair j = 1: elements 2, 3
        c, s = math.cos(ang), math.sin(ang)
        torch.testing.assert_close(y[:, 1, 2], x[:, 1, 2] * c - x[:, 1, 3] * s)
        torch.testing.assert_close(y[:, 1, 3], x[:, 1, 2] * s + x[:, 1, 3] * c)
        torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))


class Goldens(unittest.TestCase):
    def test_committed_goldens_are_current(self):
        for name in TEST_MODELS:
            d = os.path.join(MODELS, name)
            with open(os.path.join(d, "golden_ids.txt"), encoding="utf-8") as f:
                ids = [int(t) for t in f.read().strip().split(",")]
            golden = np.load(os.path.join(d, "golden_logits.npy"))
            now = ref.forward(d, ids)
            self.assertLess(np.abs(now - golden).max(), 1e-5 * np.abs(now).max(), name)
            self.assertGreater(ref.selection_margin(d, ids), 1e-3, name)


if __name__ == "__main__":
    unittest.main()
