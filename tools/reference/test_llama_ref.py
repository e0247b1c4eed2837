"""Checks of the reference forward pass (run: /usr/bin/python3 -m unittest tools/reference/test_llama_ref.py).

1. A second, deliberately naive implementation (token by token with a KV cache, explicit loops
   over heads, cached positions and RoPE pairs) must agree with the vectorised llama_ref.forward
   on every architecture and option the generator can produce.
2. Hand-checkable cases: with o_proj = down_proj = 0 the logits are rms_norm(embedding) @ lm_head^T;
   for one token attention returns o_proj(v) whatever q, k and RoPE are; RoPE at position 0 is
   the identity; the llama3 frequency bands match values worked out by hand.
3. Storage round trips: f16/bf16 values read back exactly; sharded == single-file.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOOLS, "common"))
import llama_ref  # noqa: E402
import safetensors_io as st  # noqa: E402


def naive_forward(model_dir: str, ids) -> np.ndarray:
    """Incremental decoding, one token at a time, loops instead of tensor algebra."""
    cfg = llama_ref.Config.load(model_dir)
    raw = st.read_checkpoint(model_dir)

    def w(name):
        return raw[name].to_float64()

    def has(name):
        return name in raw

    def norm(v, weight):
        ms = sum(float(e) * float(e) for e in v) / len(v)
        return np.array([weight[j] * v[j] / math.sqrt(ms + cfg.eps) for j in range(len(v))])

    def rope(vec, pos, inv_freq):
        half = cfg.head_dim // 2
        out = vec.copy()
        for j in range(half):
            angle = pos * inv_freq[j]
            a, b = vec[j], vec[j + half]
            out[j] = a * math.cos(angle) - b * math.sin(angle)
            out[j + half] = b * math.cos(angle) + a * math.sin(angle)
        return out

    def proj(x, name):
        y = w(name + ".weight") @ x
        return y + w(name + ".bias") if has(name + ".bias") else y

    inv_freq = llama_ref.rope_inv_freq(cfg)
    d, H, Hkv = cfg.head_dim, cfg.heads, cfg.kv_heads
    k_cache = [[[] for _ in range(Hkv)] for _ in range(cfg.layers)]
    v_cache = [[[] for _ in range(Hkv)] for _ in range(cfg.layers)]
    embed = w("model.embed_tokens.weight")
    head = embed if cfg.tied else w("lm_head.weight")
    rows = []
    for pos, tok in enumerate(ids):
        x = embed[tok].copy()
        for i in range(cfg.layers):
            p = f"model.layers.{i}."
            a_in = x if cfg.model_type == "olmo2" else norm(x, w(p + "input_layernorm.weight"))
            q = proj(a_in, p + "self_attn.q_proj")
            k = proj(a_in, p + "self_attn.k_proj")
            v = proj(a_in, p + "self_attn.v_proj")
            if cfg.model_type == "olmo2":
                q = norm(q, w(p + "self_attn.q_norm.weight"))
                k = norm(k, w(p + "self_attn.k_norm.weight"))
            for g in range(Hkv):
                k_cache[i][g].append(rope(k[g * d:(g + 1) * d], pos, inv_freq))
                v_cache[i][g].append(v[g * d:(g + 1) * d])
            heads_out = []
            for h in range(H):
                g = h // (H // Hkv)
                qh = rope(q[h * d:(h + 1) * d], pos, inv_freq)
                scores = [float(np.dot(qh, kk)) / math.sqrt(d) for kk in k_cache[i][g]]
                top = max(scores)
                e = [math.exp(s - top) for s in scores]
                total = sum(e)
                acc = np.zeros(d)
                for weight, vv in zip(e, v_cache[i][g]):
                    acc += (weight / total) * vv
                heads_out.append(acc)
            attn = proj(np.concatenate(heads_out), p + "self_attn.o_proj")
            if cfg.model_type == "olmo2":
                x = x + norm(attn, w(p + "post_attention_layernorm.weight"))
                m_in = x
            else:
                x = x + attn
                m_in = norm(x, w(p + "post_attention_layernorm.weight"))
            gate = proj(m_in, p + "mlp.gate_proj")
            up = proj(m_in, p + "mlp.up_proj")
            act = np.array([g_ / (1.0 + math.exp(-g_)) * u for g_, u in zip(gate, up)])
            down = proj(act, p + "mlp.down_proj")
            x = x + (norm(down, w(p + "post_feedforward_layernorm.weight")) if cfg.model_type == "olmo2" else down)
        rows.append(head @ norm(x, w("model.norm.weight")))
    return np.array(rows)


def make(out, *args):
    subprocess.run([sys.executable, os.path.join(TOOLS, "test_models", "make_checkpoint.py"), "--out", out, *args],
                   check=True, stdout=subprocess.DEVNULL)


TINY = ["--hidden", "32", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--ffn", "48", "--vocab", "50"]


class ReferenceAgreesWithNaive(unittest.TestCase):
    CASES = {
        "llama": ["--arch", "llama"],
        "llama_mha_bias": ["--arch", "llama", "--kv-heads", "4", "--attention-bias", "--mlp-bias"],
        "llama3_tied_headdim": ["--arch", "llama", "--tied", "--rope-scaling", "llama3", "--head-dim", "16",
                                "--rope-theta", "500000"],
        "linear": ["--arch", "llama", "--rope-scaling", "linear", "--rope-factor", "4"],
        "qwen2": ["--arch", "qwen2", "--tied"],
        "olmo2": ["--arch", "olmo2"],
        "bf16": ["--arch", "llama", "--dtype", "bf16"],
    }

    def test_all_cases(self):
        ids = [3, 17, 0, 49, 17, 8, 22]
        with tempfile.TemporaryDirectory() as tmp:
            for name, extra in self.CASES.items():
                with self.subTest(case=name):
                    out = os.path.join(tmp, name)
                    make(out, *TINY, *extra, "--seed", "5")
                    fast = llama_ref.forward(out, ids)
                    slow = naive_forward(out, ids)
                    self.assertEqual(fast.shape, (len(ids), 50))
                    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-10)
                    self.assertGreater(fast.std(), 0.5)  # not a degenerate model

    def test_positions_matter(self):
        # Without positions attention is order-blind: the last token of [5, 9, 7] and [9, 5, 7]
        # sees the same set of keys and values. RoPE must make them differ.
        with tempfile.TemporaryDirectory() as tmp:
            make(tmp, *TINY, "--seed", "2")
            a = llama_ref.forward(tmp, [5, 9, 7])[-1]
            b = llama_ref.forward(tmp, [9, 5, 7])[-1]
            self.assertGreater(np.abs(a - b).max(), 1e-3)


class HandCheckable(unittest.TestCase):
    def _zeroed(self, tmp, *extra):
        """One-layer model whose attention and MLP outputs are forced to zero."""
        make(tmp, "--hidden", "8", "--layers", "1", "--heads", "2", "--ffn", "8", "--vocab", "5", *extra)
        tensors = st.read_checkpoint(tmp)
        for name in ("model.layers.0.self_attn.o_proj.weight", "model.layers.0.mlp.down_proj.weight"):
            tensors[name] = st.Tensor("F32", np.zeros(tensors[name].shape, np.float32))
        st.write_safetensors(os.path.join(tmp, "model.safetensors"), tensors)
        return tensors

    def test_residual_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            t = self._zeroed(tmp)
            e = t["model.embed_tokens.weight"].to_float64()
            g = t["model.norm.weight"].to_float64()
            head = t["lm_head.weight"].to_float64()
            ids = [4, 1, 1]
            want = np.array([head @ (g * e[i] / math.sqrt(np.mean(e[i] ** 2) + 1e-5)) for i in ids])
            np.testing.assert_allclose(llama_ref.forward(tmp, ids), want, rtol=1e-12)

    def test_single_token_attention_is_o_of_v(self):
        with tempfile.TemporaryDirectory() as tmp:
            make(tmp, "--hidden", "8", "--layers", "1", "--heads", "2", "--ffn", "8", "--vocab", "5")
            t = st.read_checkpoint(tmp)
            f = {n: v.to_float64() for n, v in t.items()}
            cfg = llama_ref.Config.load(tmp)
            W = llama_ref.Weights(tmp)
            x = np.array([[0.3, -1.0, 2.0, 0.5, 0.0, 1.5, -0.7, 0.2]])
            cos, sin = llama_ref.rope_cos_sin(cfg, np.array([5]))  # any position: one key only
            got = llama_ref.attention(cfg, W, 0, x, cos, sin)
            want = f["model.layers.0.self_attn.o_proj.weight"] @ (f["model.layers.0.self_attn.v_proj.weight"] @ x[0])
            np.testing.assert_allclose(got[0], want, rtol=1e-12)

    def test_rope_position_zero_is_identity_and_rotation_keeps_norm(self):
        with tempfile.TemporaryDirectory() as tmp:
            make(tmp, *TINY)
            cfg = llama_ref.Config.load(tmp)
            v = np.random.default_rng(0).standard_normal((1, 3, cfg.head_dim))
            cos, sin = llama_ref.rope_cos_sin(cfg, np.array([0, 1, 100]))
            r = llama_ref.apply_rope(v, cos, sin)
            np.testing.assert_allclose(r[0, 0], v[0, 0])
            np.testing.assert_allclose(np.linalg.norm(r, axis=-1), np.linalg.norm(v, axis=-1))
            # Pair (0, d/2) at position 1 rotates by angle inv_freq[0] = 1.
            a, b = v[0, 1, 0], v[0, 1, cfg.head_dim // 2]
            self.assertAlmostEqual(r[0, 1, 0], a * math.cos(1) - b * math.sin(1))

    def test_llama3_bands(self):
        # d = 16, theta 500000: wavelengths 2*pi*500000^(i/8) = 6.28, 32.5, 168, 872, 4443, 23000,
        # 119000, 618000. With original 8192 and factors 1/4 the bands are: high (< 2048) for
        # i = 0..3 unchanged, medium (2048..8192) for i = 4 smoothed, low for i = 5..7 divided by 32.
        cfg = llama_ref.Config(model_type="llama", hidden=32, layers=1, heads=2, kv_heads=2, head_dim=16, ffn=8,
                               vocab=5, eps=1e-5, rope_theta=500000.0,
                               rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                             "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
        base = 1.0 / 500000.0 ** (np.arange(8) * 2 / 16)
        got = llama_ref.rope_inv_freq(cfg)
        np.testing.assert_allclose(got[:4], base[:4])
        np.testing.assert_allclose(got[5:], base[5:] / 32)
        s = (8192 / (2 * math.pi / base[4]) - 1) / 3
        self.assertAlmostEqual(got[4], (1 - s) * base[4] / 32 + s * base[4])
        self.assertTrue(0 < s < 1)


class Storage(unittest.TestCase):
    def test_half_types_read_back_exactly(self):
        x = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.safetensors")
            st.write_safetensors(path, {"h": st.Tensor("F16", st.encode(x, "f16")),
                                        "b": st.Tensor("BF16", st.encode(x, "bf16"))})
            got, _ = st.read_safetensors(path)
            np.testing.assert_array_equal(got["h"].to_float64(), x.astype(np.float16).astype(np.float64))
            bf = got["b"].to_float64()
            self.assertTrue(np.all(np.abs(bf - x) <= np.abs(x) * 2.0 ** -8))
            # bf16 keeps exactly the top 16 bits after rounding: low 16 bits of the f32 are zero.
            self.assertTrue(np.all(bf.astype(np.float32).view(np.uint32) & 0xFFFF == 0))

    def test_sharded_equals_single(self):
        with tempfile.TemporaryDirectory() as tmp:
            make(os.path.join(tmp, "one"), *TINY, "--seed", "9")
            make(os.path.join(tmp, "two"), *TINY, "--seed", "9", "--shards", "2")
            self.assertTrue(os.path.exists(os.path.join(tmp, "two", "model.safetensors.index.json")))
            self.assertEqual(len(st.checkpoint_files(os.path.join(tmp, "two"))), 2)
            a, b = st.read_checkpoint(os.path.join(tmp, "one")), st.read_checkpoint(os.path.join(tmp, "two"))
            self.assertEqual(sorted(a), sorted(b))
            for n in a:
                np.testing.assert_array_equal(a[n].data, b[n].data)

    def test_truncated_file_rejected(self):
        with tempfile.TemporaryDirectory() as tmp:
            make(tmp, *TINY)
            path = os.path.join(tmp, "model.safetensors")
            with open(path, "r+b") as f:
                f.truncate(os.path.getsize(path) - 4)
            with self.assertRaises(ValueError):
                st.read_safetensors(path)


if __name__ == "__main__":
    unittest.main()
