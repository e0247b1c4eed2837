#!/usr/bin/python3
"""Golden logits for the test checkpoints: what `mnemo logits` output is compared with.

For every model folder given (default: each folder under tests/data/models/ with a config.json)
writes
  golden_ids.txt      the token ids, comma separated (first id is the model's bos_token_id, the
                      rest drawn from a generator seeded with --seed, so every model gets the same
                      draw for the same vocab size)
  golden_logits.npy   float32 [T, vocab], llama_ref.forward at every position

The reference runs in float64 on the stored weights widened exactly, so for f16/bf16 checkpoints
the comparison measures only the engine's arithmetic, not the storage rounding.

Usage: make_goldens.py [--count 12] [--seed 1234] [MODEL_DIR ...]
       make_goldens.py --out-dir DIR MODEL_DIR    (goldens kept apart from the model files)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import llama_ref  # noqa: E402


def golden_ids(model_dir: str, count: int, seed: int) -> list:
    with open(os.path.join(model_dir, "config.json"), "r", encoding="utf-8") as f:
        cfg = json.load(f)
    vocab = int(cfg["vocab_size"])
    bos = cfg.get("bos_token_id")
    rng = np.random.default_rng(seed)
    ids = [int(t) for t in rng.integers(0, vocab, size=count)]
    if isinstance(bos, int) and 0 <= bos < vocab:
        ids[0] = bos
    return ids


def save_goldens(out_dir: str, ids: Sequence[int], logits) -> np.ndarray:
    """Writes golden_ids.txt (comma-separated ids) and golden_logits.npy (the logits as float32
    [T, vocab], NPY 1.0, replaced atomically) into out_dir; returns the float32 logits. Every
    reference's golden writer ends here, so all test models share one file format."""
    logits = np.asarray(logits).astype(np.float32)
    with open(os.path.join(out_dir, "golden_ids.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write(",".join(str(i) for i in ids) + "\n")
    tmp = os.path.join(out_dir, "golden_logits.tmp.npy")
    np.save(tmp, logits)
    os.replace(tmp, os.path.join(out_dir, "golden_logits.npy"))
    return logits


def write_goldens(model_dir: str, count: int, seed: int, out_dir: str = "") -> None:
    out_dir = out_dir or model_dir
    os.makedirs(out_dir, exist_ok=True)
    ids = golden_ids(model_dir, count, seed)
    logits = save_goldens(out_dir, ids, llama_ref.forward(model_dir, ids))
    print(f"{model_dir} -> {out_dir}: {len(ids)} ids, logits {logits.shape}, argmax {logits.argmax(axis=1).tolist()}")


def main(argv) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=12)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--out-dir", dest="out_dir", default="",
                   help="write the goldens here instead of into the model folder (one model only)")
    p.add_argument("models", nargs="*")
    a = p.parse_args(argv)
    if a.out_dir and len(a.models) != 1:
        p.error("--out-dir needs exactly one model folder")
    models = a.models
    if not models:
        root = os.path.join(REPO, "tests", "data", "models")
        models = sorted(os.path.join(root, d) for d in os.listdir(root)
                        if os.path.exists(os.path.join(root, d, "config.json")))
    for m in models:
        write_goldens(m, a.count, a.seed, a.out_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
