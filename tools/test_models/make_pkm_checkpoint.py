#!/usr/bin/python3
"""Seeded random "pkm" model folder (XLM transformer + product-key memories, see
docs/models/pkm.md) and, with --goldens, its golden ids and logits from tools/reference/pkm_ref.py.

    make_pkm_checkpoint.py --out DIR [--seed 1] [--dim 32] [--layers 3] [--heads 4] [--vocab 96]
        [--max-pos 64] [--mem 0:after,1:in] [--k-dim 16] [--mem-heads 2] [--n-keys 8] [--knn 4]
        [--no-bn] [--untied] [--temperature 1.0] [--dtype f32|f16|bf16] [--goldens 12]

Weights come from numpy's PCG64 stream (default_rng(seed)), so the files are identical on every
machine. Scales keep every sub-layer visible in the logits: linear weights N(0,1)/sqrt(fan_in),
biases 0.1 N(0,1), norm gains 1 + 0.1 N(0,1), keys U(-1/sqrt(k/2), 1/sqrt(k/2)) as XLM initialises
them, values 0.5 N(0,1), and a non-trivial query batch norm (running mean 0.3 N, running var in
[0.5, 2], gamma 1 + 0.2 N, beta 0.2 N).

Goldens: the engine computes in f32, the reference in f64. A top-k cut whose two sides are
within rounding of each other could pick different keys, so the id sequence is drawn again
(same seeded stream) until every cut of every memory, head and token is at least --min-gap
apart; the margins reached are printed.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOOLS, "common"))
sys.path.insert(0, os.path.join(TOOLS, "reference"))
import safetensors_io  # noqa: E402


def build_tensors(a, rng) -> dict:
    d, f, v = a.dim, 4 * a.dim, a.vocab
    hk, half = a.mem_heads * a.k_dim, a.k_dim // 2
    t = {}

    def lin(name, out_f, in_f):
        t[name + ".weight"] = rng.standard_normal((out_f, in_f)) / np.sqrt(in_f)
        t[name + ".bias"] = 0.1 * rng.standard_normal(out_f)

    def norm(name):
        t[name + ".weight"] = 1.0 + 0.1 * rng.standard_normal(d)
        t[name + ".bias"] = 0.1 * rng.standard_normal(d)

    t["embeddings.weight"] = rng.standard_normal((v, d))
    t["position_embeddings.weight"] = rng.standard_normal((a.max_pos, d))
    norm("layer_norm_emb")
    mem = [tuple(s.split(":")) for s in a.mem.split(",")]
    for i in range(a.layers):
        for n in ("q_lin", "k_lin", "v_lin", "out_lin"):
            lin(f"attentions.{i}.{n}", d, d)
        norm(f"layer_norm1.{i}")
        if (str(i), "in") not in mem:
            lin(f"ffns.{i}.lin1", f, d)
            lin(f"ffns.{i}.lin2", d, f)
        norm(f"layer_norm2.{i}")
    for layer, where in mem:
        p = f"memories.{layer}_{where}."
        t[p + "query_proj.query_mlps.0.weight"] = rng.standard_normal((hk, d)) / np.sqrt(d)
        if not a.no_query_bias:
            t[p + "query_proj.query_mlps.0.bias"] = 0.1 * rng.standard_normal(hk)
        if not a.no_bn:
            t[p + "query_proj.query_mlps.1.weight"] = 1.0 + 0.2 * rng.standard_normal(hk)
            t[p + "query_proj.query_mlps.1.bias"] = 0.2 * rng.standard_normal(hk)
            t[p + "query_proj.query_mlps.1.running_mean"] = 0.3 * rng.standard_normal(hk)
            t[p + "query_proj.query_mlps.1.running_var"] = rng.uniform(0.5, 2.0, hk)
        bound = 1.0 / np.sqrt(half)
        t[p + "keys"] = rng.uniform(-bound, bound, (a.mem_heads, 2, a.n_keys, half))
        t[p + "values.weight"] = 0.5 * rng.standard_normal((a.n_keys * a.n_keys, d))
    if a.untied:
        t["pred_layer.proj.weight"] = rng.standard_normal((v, d))
    t["pred_layer.proj.bias"] = 0.1 * rng.standard_normal(v)
    return t


def config(a) -> dict:
    return {
        "model_type": "pkm",
        "emb_dim": a.dim, "n_layers": a.layers, "n_heads": a.heads, "ffn_dim": 4 * a.dim,
        "n_words": a.vocab, "max_position_embeddings": a.max_pos,
        "gelu_activation": True, "layer_norm_eps": 1e-12, "share_inout_emb": not a.untied,
        "mem_positions": a.mem.split(","),
        "mem_k_dim": a.k_dim, "mem_heads": a.mem_heads, "mem_knn": a.knn, "mem_n_keys": a.n_keys,
        "mem_v_dim": -1, "mem_query_bias": not a.no_query_bias, "mem_query_batchnorm": not a.no_bn,
        "mem_bn_eps": 1e-5, "mem_temperature": a.temperature, "mem_score_softmax": True,
        "torch_dtype": {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[a.dtype],
        "mnemo_generator": {"tool": "tools/test_models/make_pkm_checkpoint.py", "seed": a.seed,
                            "note": "random untrained weights"},
    }


def write_model(a) -> None:
    rng = np.random.default_rng(a.seed)
    tensors = build_tensors(a, rng)
    stored = {}
    for n, x in sorted(tensors.items()):
        # Biases, norms and batch-norm vectors stay F32 (the plugin adds biases in f32).
        dt = a.dtype if np.ndim(x) >= 2 else "f32"
        stored[n] = safetensors_io.Tensor(safetensors_io.canonical_dtype(dt),
                                          safetensors_io.encode(np.asarray(x, dtype=np.float32), dt))
    safetensors_io.write_model_folder(a.out, stored, config(a))


def write_goldens(a) -> None:
    import make_goldens  # the golden files every test model shares
    import pkm_ref  # torch is only needed for the goldens

    rng = np.random.default_rng(a.seed + 1000)
    for attempt in range(200):
        ids = [int(t) for t in rng.integers(0, a.vocab, size=a.goldens)]
        trace = pkm_ref.MemoryTrace()
        logits = pkm_ref.forward(a.out, ids, trace)
        if min(trace.stage1_gap, trace.stage2_gap) >= a.min_gap:
            break
    else:
        raise SystemExit(f"no id sequence with top-k margins >= {a.min_gap} in 200 draws; use another --seed")
    make_goldens.save_goldens(a.out, ids, logits.numpy())
    print(f"{a.out}: ids {ids} (draw {attempt + 1}), top-k margins stage 1 {trace.stage1_gap:.4f} "
          f"stage 2 {trace.stage2_gap:.4f}, max |logit| {logits.abs().max().item():.3f}")


def main(argv) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=96)
    p.add_argument("--max-pos", type=int, default=64)
    p.add_argument("--mem", default="0:after,1:in", help="memory positions, comma separated <layer>:in|after")
    p.add_argument("--k-dim", type=int, default=16)
    p.add_argument("--mem-heads", type=int, default=2)
    p.add_argument("--n-keys", type=int, default=8)
    p.add_argument("--knn", type=int, default=4)
    p.add_argument("--no-bn", action="store_true", help="no batch norm on the query")
    p.add_argument("--no-query-bias", action="store_true")
    p.add_argument("--untied", action="store_true", help="own pred_layer.proj.weight")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--dtype", choices=("f32", "f16", "bf16"), default="f32")
    p.add_argument("--goldens", type=int, default=0, help="also write this many golden ids + logits")
    p.add_argument("--min-gap", type=float, default=2e-3)
    a = p.parse_args(argv)
    write_model(a)
    if a.goldens:
        write_goldens(a)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
