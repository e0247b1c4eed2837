"""Round trips of the lingua -> Mnemo Memory+ converter
(run: MNEMO_BUILD_BIN=build/bin /usr/bin/python3 -m unittest tools/convert/test_memory_plus_convert.py).

A small model is built with torch in lingua's own module layout (tok_embeddings, layers.{i}.attention.
wq/wk/wv/wo, attention_norm, ffn_norm, feed_forward = FeedForward w1/w2/w3 or HashingMemory with keys,
query_proj.query_mlps.0, values / values_u / values_v, value_proj, swilu_projection, gating; norm,
output), randomly initialised, and saved as lingua does (consolidated.pth holding {"model": state_dict},
params.json with the training config). Its own forward (lingua's formulation: RoPE as 2x2 rotations of
interleaved pairs, torch.topk twice then over the knn^2 candidates, F.embedding_bag with per-sample
weights) is the yardstick. The converted folder must give the same logits
  - through tools/reference/memory_plus_ref.py (float64, 1e-10), and
  - through `$MNEMO_BUILD_BIN/mnemo logits` (f32 engine, 1e-4 of the logit scale).
The shared value table is held by every memory layer module, so the state dict carries one copy per
memory layer, as lingua's does once parallelised; the converter must write it once.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOOLS, "common"))
sys.path.insert(0, os.path.join(TOOLS, "reference"))
import memory_plus_ref as ref  # noqa: E402
import memory_plus_to_mnemo as conv  # noqa: E402
import safetensors_io as st  # noqa: E402
from engine_logits import engine_logits, mnemo_binary  # noqa: E402

CONVERTER = os.path.join(HERE, "memory_plus_to_mnemo.py")


class Table(nn.Module):
    def __init__(self, rows: int, dim: int, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(rows, dim).to(dtype))


class QueryMLP(nn.Module):
    def __init__(self, d: int, out: int):
        super().__init__()
        self.query_mlps = nn.Sequential(nn.Linear(d, out, bias=True))


class Memory(nn.Module):
    def __init__(self, d: int, pk: dict, shared):
        super().__init__()
        self.pk = pk
        H, n, k = pk["mem_heads"], pk["mem_n_keys"], pk["mem_k_dim"]
        v = pk["mem_v_dim"] if pk["mem_v_dim"] > 0 else d
        self.keys = nn.Parameter(torch.randn(2 * H * n, k // 2))
        self.query_proj = QueryMLP(d, H * k)
        if pk["peer_variant"]:
            self.values_u, self.values_v = shared if shared else (nn.Embedding(n * n, d), nn.Embedding(n * n, d))
        else:
            self.values = shared if shared else Table(n * n, v, pk["values_dtype"])
        self.v_proj = pk["mem_v_dim"] > 0 or pk["swilu_projection"]
        if self.v_proj:
            self.value_proj = nn.Linear(v, d)
        if pk["swilu_projection"]:
            self.swilu_projection = nn.Linear(d, v)
        self.gating = nn.Linear(d, 1) if pk["mem_gated"] else None

    def tables(self):
        return (self.values_u, self.values_v) if self.pk["peer_variant"] else self.values

    def forward(self, x):
        pk = self.pk
        T, H, n, k, knn = x.shape[0], pk["mem_heads"], pk["mem_n_keys"], pk["mem_k_dim"], pk["mem_knn"]
        q = self.query_proj.query_mlps(x).view(T, H, k)
        keys = self.keys.view(H, 2, n, k // 2)
        s1 = torch.einsum("thd,hnd->thn", q[..., :k // 2], keys[:, 0])
        s2 = torch.einsum("thd,hnd->thn", q[..., k // 2:], keys[:, 1])
        v1, i1 = s1.topk(knn, dim=2)
        v2, i2 = s2.topk(knn, dim=2)
        all_s = (v1.view(T, H, knn, 1) + v2.view(T, H, 1, knn)).view(T, H, -1)
        all_i = (i1.view(T, H, knn, 1) * n + i2.view(T, H, 1, knn)).view(T, H, -1)
        s, best = all_s.topk(knn, dim=2)
        idx = all_i.gather(2, best).view(T, H * knn)
        s = F.softmax(s, dim=-1).view(T, H * knn)
        if pk["peer_variant"]:
            a = F.gelu(torch.einsum("td,tld->tl", x, self.values_u(idx))) * s
            out = torch.einsum("tl,tld->td", a, self.values_v(idx))
        else:
            out = F.embedding_bag(idx, self.values.weight.to(x.dtype), per_sample_weights=s, mode="sum")
            if self.v_proj and not pk["swilu_projection"]:
                out = self.value_proj(out)
            if pk["swilu_projection"]:
                out = self.value_proj(out * F.silu(self.swilu_projection(x)))
        if self.gating is not None:
            out = torch.sigmoid(self.gating(x)) * out
        return out


class Norm(nn.Module):
    def __init__(self, d: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))

    def forward(self, x):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, d: int, heads: int, kv: int):
        super().__init__()
        self.heads, self.kv, self.hd = heads, kv, d // heads
        self.wq = nn.Linear(d, heads * self.hd, bias=False)
        self.wk = nn.Linear(d, kv * self.hd, bias=False)
        self.wv = nn.Linear(d, kv * self.hd, bias=False)
        self.wo = nn.Linear(heads * self.hd, d, bias=False)

    def forward(self, x, rot):
        T = x.shape[0]
        q = self.wq(x).view(T, self.heads, self.hd)
        k = self.wk(x).view(T, self.kv, self.hd)
        v = self.wv(x).view(T, self.kv, self.hd)
        # lingua apply_rotary_emb: pairs (2j, 2j+1) times [[cos, -sin], [sin, cos]]
        q = (q.reshape(T, self.heads, -1, 1, 2) * rot[:, None]).sum(-1).flatten(2)
        k = (k.reshape(T, self.kv, -1, 1, 2) * rot[:, None]).sum(-1).flatten(2)
        rep = self.heads // self.kv
        k = k[:, :, None].expand(T, self.kv, rep, self.hd).reshape(T, self.heads, self.hd)
        v = v[:, :, None].expand(T, self.kv, rep, self.hd).reshape(T, self.heads, self.hd)
        att = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(self.hd)
        att = att.masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf")).softmax(-1)
        return self.wo(torch.einsum("hqk,khd->qhd", att, v).reshape(T, -1))


class FeedForward(nn.Module):
    def __init__(self, d: int, multiple_of: int):
        super().__init__()
        h = int(2 * 4 * d / 3)
        h = multiple_of * ((h + multiple_of - 1) // multiple_of)
        self.w1, self.w3, self.w2 = nn.Linear(d, h, bias=False), nn.Linear(d, h, bias=False), nn.Linear(h, d, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, m: dict, layer: int, shared_holder: list):
        super().__init__()
        d, pk = m["dim"], m["productkey_args"]
        self.attention = Attention(d, m["n_heads"], m["n_kv_heads"])
        if layer in [int(s) for s in pk["layers"].split(",")]:
            shared = shared_holder[0] if (pk["mem_share_values"] and shared_holder) else None
            self.feed_forward = Memory(d, pk, shared)
            if pk["mem_share_values"] and not shared_holder:
                shared_holder.append(self.feed_forward.tables())
        else:
            self.feed_forward = FeedForward(d, m["multiple_of"])
        self.attention_norm, self.ffn_norm = Norm(d, m["norm_eps"]), Norm(d, m["norm_eps"])

    def forward(self, x, rot):
        h = x + self.attention(self.attention_norm(x), rot)
        return h + self.feed_forward(self.ffn_norm(h))


class LinguaLM(nn.Module):
    def __init__(self, m: dict):
        super().__init__()
        self.m = m
        shared: list = []
        self.tok_embeddings = nn.Embedding(m["vocab_size"], m["dim"])
        self.layers = nn.ModuleList([Block(m, i, shared) for i in range(m["n_layers"])])
        self.norm = Norm(m["dim"], m["norm_eps"])
        self.output = nn.Linear(m["dim"], m["vocab_size"], bias=False)
        with torch.no_grad():   # well separated memory scores and visible biases
            for name, p in self.named_parameters():
                if name.endswith("keys"):
                    p.normal_(0, 1)
                elif name.endswith(".bias"):
                    p.normal_(0, 0.3)

    def forward(self, ids):
        hd = self.m["dim"] // self.m["n_heads"]
        freqs = 1.0 / (self.m["rope_theta"] ** (torch.arange(0, hd, 2)[: hd // 2].double() / hd))
        ang = torch.outer(torch.arange(len(ids)).double(), freqs)
        rot = torch.stack((ang.cos(), -ang.sin(), ang.sin(), ang.cos()), -1).view(len(ids), hd // 2, 2, 2)
        h = self.tok_embeddings(torch.as_tensor(ids))
        for layer in self.layers:
            h = layer(h, rot)
        return self.output(self.norm(h))


def lingua_params(**pk) -> dict:
    args = {"is_enabled": True, "layers": "0,2", "mem_n_keys": 12, "mem_heads": 2, "mem_knn": 3,
            "mem_share_values": True, "mem_k_dim": 12, "mem_v_dim": -1, "swilu_projection": True,
            "value_fixed_lr": 0.001, "mem_gated": False, "peer_variant": False}
    args.update(pk)
    model = {"dim": 24, "n_layers": 3, "head_dim": None, "n_heads": 4, "n_kv_heads": 2, "ffn_dim_multiplier": None,
             "multiple_of": 16, "norm_eps": 1e-5, "rope_theta": 10000.0, "init_base_std": None,
             "init_std_factor": "disabled", "max_seqlen": 256, "seed": 42, "vocab_size": 50, "weight_tying": False,
             "sliding_window": None, "productkey_args": args}
    return {"name": "convert_test", "dump_dir": "/nowhere", "steps": 10, "model": model,
            "data": {"tokenizer": {"name": "bytes"}}}


def save_lingua(tmp: str, name: str, params: dict, model: nn.Module) -> str:
    """lingua's layout: <dump_dir>/checkpoints/<step>/consolidated/{consolidated.pth, params.json}."""
    src = os.path.join(tmp, name + "-dump", "checkpoints", "0000000010", "consolidated")
    os.makedirs(src)
    torch.save({"model": model.state_dict(), "optim": {}}, os.path.join(src, "consolidated.pth"))
    with open(os.path.join(src, "params.json"), "w", encoding="utf-8") as f:
        json.dump(params, f)
    return src


def build(seed: int, values_dtype=torch.float32, **pk):
    params = lingua_params(**pk)
    params["model"]["productkey_args"]["values_dtype"] = values_dtype
    torch.manual_seed(seed)
    model = LinguaLM(params["model"])
    del params["model"]["productkey_args"]["values_dtype"]
    return params, model


def run_converter(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, CONVERTER, *args], capture_output=True, text=True)


IDS = [1, 7, 49, 3, 3, 20, 11, 0, 42]
CASES = {
    "default-bf16-values": dict(values_dtype=torch.bfloat16),
    "gated-vdim-noswilu": dict(mem_v_dim=16, swilu_projection=False, mem_gated=True, layers="1"),
    "plain-bag-per-layer": dict(swilu_projection=False, mem_share_values=False, layers="0,1,2"),
    "peer-gated": dict(peer_variant=True, mem_gated=True),
    "peer-swilu-dropped": dict(peer_variant=True, mem_heads=3, mem_knn=2),
}


class RoundTrip(unittest.TestCase):
    def convert(self, tmp: str, name: str, seed: int, **kw):
        params, model = build(seed, **kw)
        src = save_lingua(tmp, name, params, model)
        out = os.path.join(tmp, name)
        r = run_converter(src, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with torch.no_grad():
            expect = model.double()(IDS).numpy()
        return out, expect, r.stdout

    def test_reference_and_engine_match_the_lingua_model(self):
        has_engine = mnemo_binary() is not None
        with tempfile.TemporaryDirectory() as tmp:
            for seed, (name, kw) in enumerate(CASES.items()):
                with self.subTest(case=name):
                    out, expect, _ = self.convert(tmp, name, seed, **kw)
                    got = ref.forward(out, IDS)
                    self.assertLess(np.abs(got - expect).max(), 1e-10 * np.abs(expect).max())
                    # f32 may only rank memory rows like float64 if no top-k is decided by rounding.
                    self.assertGreater(ref.selection_margin(out, IDS), 1e-4, "pick another seed")
                    if not has_engine:
                        continue
                    eng = engine_logits(self, out, IDS, tmp)
                    self.assertLess(np.abs(eng - expect).max(), 1e-4 * np.abs(expect).max())
        if not has_engine:
            self.skipTest("no bin/mnemo built (set MNEMO_BUILD_BIN): engine not compared")

    def test_folder_layout(self):
        with tempfile.TemporaryDirectory() as tmp:
            out, _, stdout = self.convert(tmp, "default", 0, values_dtype=torch.bfloat16)
            tensors = st.read_checkpoint(out)
            self.assertEqual(tensors["layers.0.feed_forward.values.weight"].dtype, "BF16")
            self.assertNotIn("layers.2.feed_forward.values.weight", tensors)
            self.assertEqual(tensors["layers.1.feed_forward.w1.weight"].shape, (64, 24))   # int(2*96/3) -> 64
            self.assertIn("2 identical copies of the shared table", stdout)
            with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
                c = json.load(f)
            self.assertEqual((c["model_type"], c["mem_layers"], c["intermediate_size"], c["head_dim"]),
                             ("memory_plus", [0, 2], 64, 6))
            self.assertTrue(c["rope_interleaved"])
            peer, _, _ = self.convert(tmp, "peer", 3, peer_variant=True)
            self.assertFalse(any("value_proj" in n or "swilu" in n for n in st.read_checkpoint(peer)))
            src = os.path.join(tmp, "default-dump", "checkpoints", "0000000010", "consolidated")
            r = run_converter(src, os.path.join(tmp, "all-f32"), "--dtype", "f32")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual({t.dtype for t in st.read_checkpoint(os.path.join(tmp, "all-f32")).values()}, {"F32"})

    def test_halves_rope_layout(self):
        """rope_interleaved false: q/k rows permuted per head from pairs (2j, 2j+1) to (j, j + d/2)
        (the HF layout) give the same model."""
        with tempfile.TemporaryDirectory() as tmp:
            out, expect, _ = self.convert(tmp, "halves", 2)
            with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
                c = json.load(f)
            c["rope_interleaved"] = False
            st.write_text_atomic(os.path.join(out, "config.json"), json.dumps(c))
            tensors = st.read_checkpoint(out)
            d = c["head_dim"]
            perm = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])
            for name in list(tensors):
                if name.endswith(("attention.wq.weight", "attention.wk.weight")):
                    w = np.array(tensors[name].data)
                    rows = (np.arange(w.shape[0] // d)[:, None] * d + perm[None, :]).reshape(-1)
                    tensors[name] = st.Tensor(tensors[name].dtype, np.ascontiguousarray(w[rows]))
            st.write_safetensors(os.path.join(out, "model.safetensors"), tensors)
            got = ref.forward(out, IDS)
            self.assertLess(np.abs(got - expect).max(), 1e-10 * np.abs(expect).max())
            if mnemo_binary() is not None:
                eng = engine_logits(self, out, IDS, tmp)
                self.assertLess(np.abs(eng - expect).max(), 1e-4 * np.abs(expect).max())

    def test_yaml_config(self):
        import yaml
        with tempfile.TemporaryDirectory() as tmp:
            params, model = build(0)
            src = save_lingua(tmp, "yaml", params, model)
            params["model"]["vocab_size"] = -1            # a training yaml leaves it to the tokenizer
            params["model"]["productkey_args"]["layers"] = "0,2"
            cfg = os.path.join(tmp, "train.yaml")
            with open(cfg, "w", encoding="utf-8") as f:
                yaml.safe_dump(params, f)
            r = run_converter(os.path.join(src, "consolidated.pth"), os.path.join(tmp, "out"), "--config", cfg)
            self.assertEqual(r.returncode, 0, r.stderr)
            with torch.no_grad():
                expect = model.double()(IDS).numpy()
            got = ref.forward(os.path.join(tmp, "out"), IDS)
            self.assertLess(np.abs(got - expect).max(), 1e-10 * np.abs(expect).max())


class Errors(unittest.TestCase):
    def convert_error(self, params, sd) -> str:
        with self.assertRaises(conv.ConvertError) as e:
            conv.convert_state_dict(params, sd)
        return str(e.exception)

    def test_bad_checkpoints_are_named(self):
        params, model = build(0)
        sd = dict(model.state_dict())
        bad = dict(sd)
        bad["layers.2.feed_forward.values.weight"] = sd["layers.2.feed_forward.values.weight"] + 1
        self.assertIn("'layers.2.feed_forward.values.weight' differs from 'layers.0.feed_forward.values.weight'",
                      self.convert_error(params, bad))
        bad = {k: v for k, v in sd.items() if k != "layers.1.feed_forward.w3.weight"}
        self.assertIn("'layers.1.feed_forward.w3.weight' is missing", self.convert_error(params, bad))
        bad = dict(sd, **{"layers.0.feed_forward.extra.weight": torch.zeros(2)})
        self.assertIn("does not know: ['layers.0.feed_forward.extra.weight']", self.convert_error(params, bad))
        bad = dict(sd, **{"layers.0.feed_forward.keys": torch.zeros(5, 6)})
        self.assertIn("'layers.0.feed_forward.keys' has shape [5, 6], expected [48, 6]", self.convert_error(params, bad))
        # torch.compile's wrapper prefix is harmless.
        compiled = {k.replace("layers.1.", "layers.1._orig_mod."): v for k, v in sd.items()}
        conv.convert_state_dict(params, compiled)

    def test_bad_configs_are_named(self):
        params, model = build(0)
        sd = model.state_dict()
        for change, message in [
            ({"is_enabled": False}, "not enabled or lists no layers"),
            ({"layers": "0,5"}, "productkey_args.layers [5] outside 0..2"),
            ({"mem_heads": 1}, "productkey_args.mem_heads must be >= 2 (lingua asserts it), got 1"),
            ({"mem_k_dim": 11}, "productkey_args.mem_k_dim must be even, got 11"),
            ({"mem_knn": 13}, "productkey_args.mem_knn must be in 1..mem_n_keys (12), got 13"),
            ({"peer_variant": True, "mem_v_dim": 8}, "peer_variant needs mem_v_dim = -1"),
        ]:
            p = json.loads(json.dumps(params))
            p["model"]["productkey_args"].update(change)
            self.assertIn(message, self.convert_error(p, sd))
        p = json.loads(json.dumps(params))
        p["model"]["vocab_size"] = 51
        self.assertIn("vocab_size 51 but tok_embeddings.weight has 50 rows", self.convert_error(p, sd))

    def test_cli_reports_errors(self):
        with tempfile.TemporaryDirectory() as tmp:
            open(os.path.join(tmp, "__0_0.distcp"), "w").close()
            r = run_converter(tmp, os.path.join(tmp, "out"))
            self.assertEqual(r.returncode, 1)
            self.assertIn("a DCP checkpoint; consolidate it first", r.stderr)


if __name__ == "__main__":
    unittest.main()
