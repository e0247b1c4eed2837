#!/usr/bin/python3
"""Seeded random Memory+ checkpoints in lingua's own layout, optionally converted to Mnemo folders.

The state dict has exactly the names and shapes lingua's LMTransformer with HashingMemory layers
has (apps/main/transformer.py, lingua/transformer.py, lingua/product_key/memory.py); params.json
is lingua's training-config layout ({"model": {... "productkey_args": {...}}}).

  --lingua-out DIR   write DIR/consolidated.pth ({"model": state_dict}) + DIR/params.json
  --out DIR          convert (tools/convert/memory_plus_to_mnemo.py) into a Mnemo model folder

Init keeps the memory's effect visible in tiny models: sub-keys N(0, 1) so the top-k scores are
well separated (softmax far from uniform), biases non-zero so every bias is exercised, values
N(0, 1/v). --values-bf16 stores the value table(s) in bf16 as lingua does; --share-copies puts the
shared table under every memory layer, as lingua's state dict has it once parallelised.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict, List

import numpy as np
import torch

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOOLS, "convert"))
import memory_plus_to_mnemo as conv  # noqa: E402


def lingua_params(a: argparse.Namespace) -> dict:
    return {
        "name": "mnemo_memory_plus_test", "seed": a.seed,
        "model": {
            "dim": a.dim, "n_layers": a.layers, "head_dim": None, "n_heads": a.heads,
            "n_kv_heads": a.kv_heads, "ffn_dim_multiplier": None, "multiple_of": a.multiple_of,
            "norm_eps": a.eps, "rope_theta": a.rope_theta, "init_base_std": None,
            "init_std_factor": "disabled", "max_seqlen": a.max_seqlen, "seed": a.seed,
            "vocab_size": a.vocab, "weight_tying": False, "sliding_window": None,
            "productkey_args": {
                "is_enabled": True, "layers": ",".join(str(l) for l in a.mem_layers),
                "mem_n_keys": a.n_keys, "mem_heads": a.mem_heads, "mem_knn": a.knn,
                "mem_share_values": not a.per_layer_values, "mem_k_dim": a.k_dim, "mem_v_dim": a.v_dim,
                "swilu_projection": not a.no_swilu, "value_fixed_lr": 0.001, "mem_gated": a.gated,
                "peer_variant": a.peer,
            },
        },
    }


def lingua_state_dict(a: argparse.Namespace) -> Dict[str, torch.Tensor]:
    rng = np.random.default_rng(a.seed)
    sd: Dict[str, torch.Tensor] = {}

    def put(name: str, shape, std: float, mean: float = 0.0, bf16: bool = False) -> None:
        t = torch.from_numpy((mean + std * rng.standard_normal(shape)).astype(np.float32))
        sd[name] = t.to(torch.bfloat16) if bf16 else t

    D, hd = a.dim, a.dim // a.heads
    ffn = conv.ffn_hidden(D, a.multiple_of, None)
    v = a.v_dim if a.v_dim > 0 else D
    n2 = a.n_keys * a.n_keys
    put("tok_embeddings.weight", (a.vocab, D), 1.0)
    for i in range(a.layers):
        p = f"layers.{i}."
        put(p + "attention.wq.weight", (a.heads * hd, D), D ** -0.5)
        put(p + "attention.wk.weight", (a.kv_heads * hd, D), D ** -0.5)
        put(p + "attention.wv.weight", (a.kv_heads * hd, D), D ** -0.5)
        put(p + "attention.wo.weight", (D, a.heads * hd), (a.heads * hd) ** -0.5)
        f = p + "feed_forward."
        if i in a.mem_layers:
            put(f + "keys", (2 * a.mem_heads * a.n_keys, a.k_dim // 2), 1.0)
            put(f + "query_proj.query_mlps.0.weight", (a.mem_heads * a.k_dim, D), D ** -0.5)
            put(f + "query_proj.query_mlps.0.bias", (a.mem_heads * a.k_dim,), 0.3)
            owner = i == a.mem_layers[0] or a.per_layer_values or a.share_copies
            if a.peer:
                if owner:
                    put(f + "values_u.weight", (n2, D), D ** -0.5, bf16=a.values_bf16)
                    put(f + "values_v.weight", (n2, D), 1.0, bf16=a.values_bf16)
            elif owner:
                put(f + "values.weight", (n2, v), 1.0, bf16=a.values_bf16)
            # lingua builds value_proj when mem_v_dim > 0 or swilu, and swilu_projection when swilu,
            # also in the PEER variant (where neither is applied).
            if a.v_dim > 0 or not a.no_swilu:
                put(f + "value_proj.weight", (D, v), v ** -0.5)
                put(f + "value_proj.bias", (D,), 0.3)
            if not a.no_swilu:
                put(f + "swilu_projection.weight", (v, D), D ** -0.5)
                put(f + "swilu_projection.bias", (v,), 0.3)
            if a.gated:
                put(f + "gating.weight", (1, D), D ** -0.5)
                put(f + "gating.bias", (1,), 0.5)
        else:
            put(f + "w1.weight", (ffn, D), D ** -0.5)
            put(f + "w3.weight", (ffn, D), D ** -0.5)
            put(f + "w2.weight", (D, ffn), ffn ** -0.5)
        put(p + "attention_norm.weight", (D,), 0.1, mean=1.0)
        put(p + "ffn_norm.weight", (D,), 0.1, mean=1.0)
    if a.share_copies and not a.per_layer_values:
        # lingua's parallelised model holds the very same table under every memory layer.
        first = f"layers.{a.mem_layers[0]}.feed_forward."
        for l in a.mem_layers[1:]:
            for t in (["values_u.weight", "values_v.weight"] if a.peer else ["values.weight"]):
                sd[f"layers.{l}.feed_forward.{t}"] = sd[first + t]
    put("norm.weight", (D,), 0.1, mean=1.0)
    put("output.weight", (a.vocab, D), D ** -0.5)
    return sd


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--multiple-of", type=int, default=16)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--eps", type=float, default=1e-5)
    ap.add_argument("--rope-theta", type=float, default=500000.0)
    ap.add_argument("--max-seqlen", type=int, default=1024)
    ap.add_argument("--mem-layers", type=lambda s: [int(x) for x in s.split(",")], default=[0, 2])
    ap.add_argument("--n-keys", type=int, default=16)
    ap.add_argument("--mem-heads", type=int, default=4)
    ap.add_argument("--knn", type=int, default=4)
    ap.add_argument("--k-dim", type=int, default=16)
    ap.add_argument("--v-dim", type=int, default=-1)
    ap.add_argument("--no-swilu", action="store_true")
    ap.add_argument("--gated", action="store_true")
    ap.add_argument("--peer", action="store_true")
    ap.add_argument("--per-layer-values", action="store_true", help="mem_share_values false")
    ap.add_argument("--share-copies", action="store_true", help="shared table stored under every memory layer")
    ap.add_argument("--values-bf16", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lingua-out")
    ap.add_argument("--out")
    ap.add_argument("--dtype", default="keep", choices=["keep", "f32", "f16", "bf16"])
    return ap


def main(argv: List[str]) -> int:
    a = parser().parse_args(argv)
    if not (a.lingua_out or a.out):
        parser().error("give --lingua-out and/or --out")
    params, sd = lingua_params(a), lingua_state_dict(a)
    if a.lingua_out:
        os.makedirs(a.lingua_out, exist_ok=True)
        torch.save({"model": sd}, os.path.join(a.lingua_out, "consolidated.pth"))
        with open(os.path.join(a.lingua_out, "params.json"), "w", encoding="utf-8") as f:
            json.dump(params, f, indent=2)
    if a.out:
        config, tensors, _ = conv.convert_state_dict(params, sd, a.dtype)
        config["mnemo_generator"] = {"tool": "tools/test_models/make_memory_plus_checkpoint.py", "seed": a.seed,
                                     "note": "random untrained weights"}
        conv.write_folder(a.out, config, tensors, source="tools/test_models/make_memory_plus_checkpoint.py")
        size = sum(os.path.getsize(os.path.join(a.out, f)) for f in os.listdir(a.out))
        print(f"{a.out}: {len(tensors)} tensors, {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
