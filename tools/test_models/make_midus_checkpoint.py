#!/usr/bin/python3
"""Seeded MIDUS-HML test checkpoint and its goldens (tests/data/models/midus_hml-*).

Starts from a random Llama folder (tools/test_models/make_checkpoint.py), up-scales it with
tools/convert/midus_from_llama.py, then replaces the paper's identity initialisation with random
memory weights, so that every part of the memory block changes the logits:
  - memory-block attention: fresh q/k/v N(0, 1/D) and RMSNorm gain 1 + N(0, 0.1^2) instead of a
    copy of the anchor block (a plugin reading the anchor's weights or KV cache is caught);
  - latent value bank N(0, value_std^2) instead of zeros;
  - sub-keys N(0, 1/d_p) and head projections N(0, 1/r) as the converter draws them.
Writes golden_ids.txt and golden_logits.npy from tools/reference/midus_ref.py (float64), and
refuses to write goldens when some top-k selection of the reference comes within --min-margin of a
tie: an f32 engine could then legitimately pick another slot.

Usage: make_midus_checkpoint.py --base LLAMA_DIR --out DIR --anchors 0,2 --n-keys 8 --topk 3
                                [--latent-dim 6] [--value-std 1.0] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List

import numpy as np

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOOLS, "convert"))
sys.path.insert(0, os.path.join(TOOLS, "reference"))
import make_goldens  # noqa: E402  (the seeded id draw and the golden files every test model shares)
import midus_from_llama  # noqa: E402
import midus_ref  # noqa: E402


def randomise(cfg: dict, memory: dict, rng: np.random.Generator, value_std: float) -> None:
    D = int(cfg["hidden_size"])
    for j in range(len(cfg["memory_anchors"])):
        p = f"model.memory_blocks.{j}."
        for name, v in list(memory.items()):
            if not name.startswith(p):
                continue
            if name.endswith("input_layernorm.weight"):
                memory[name] = 1.0 + 0.1 * rng.standard_normal(v.shape)
            elif ".self_attn." in name:
                memory[name] = rng.standard_normal(v.shape) / np.sqrt(D)
        memory[p + "hml.values"] = value_std * rng.standard_normal(memory[p + "hml.values"].shape)


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--anchors", required=True)
    p.add_argument("--n-keys", type=int, required=True, dest="n_keys")
    p.add_argument("--topk", type=int, required=True)
    p.add_argument("--latent-dim", type=int, dest="latent_dim")
    p.add_argument("--value-std", type=float, default=1.0, dest="value_std")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=12, help="golden ids")
    p.add_argument("--ids-seed", type=int, default=1234, dest="ids_seed")
    p.add_argument("--min-margin", type=float, default=1e-4, dest="min_margin")
    a = p.parse_args(argv)

    anchors = [int(x) for x in a.anchors.split(",")]
    cfg, base, memory = midus_from_llama.upscale(a.base, anchors, a.n_keys, a.topk, a.latent_dim, a.seed)
    randomise(cfg, memory, np.random.default_rng(a.seed + 1000), a.value_std)
    cfg["mnemo_generator"] = {"tool": "tools/test_models/make_midus_checkpoint.py", "seed": a.seed,
                              "note": "random untrained weights, random memory (not the identity init)"}
    midus_from_llama.write_model(a.base, a.out, cfg, base, memory, "F32")

    ids = make_goldens.golden_ids(a.out, a.count, a.ids_seed)
    stats = midus_ref.LookupStats()
    logits = midus_ref.forward(a.out, ids, stats)
    if not stats.min_margin > a.min_margin:
        print(f"{a.out}: a top-k selection is within {stats.min_margin:.3g} of a tie (< {a.min_margin}); "
              "pick another --seed", file=sys.stderr)
        return 1
    make_goldens.save_goldens(a.out, ids, logits)
    size = sum(os.path.getsize(os.path.join(a.out, f)) for f in os.listdir(a.out))
    print(f"{a.out}: {size:,} bytes, {stats.lookups} lookups, min top-k margin {stats.min_margin:.3g}, "
          f"argmax {logits.argmax(axis=1).tolist()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
