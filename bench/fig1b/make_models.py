#!/usr/bin/python3
"""Random-weight models for the UltraMem fig. 1(b) / appendix B reproduction (bench/fig1b/run.py).

Four decoders on one backbone (hidden 512, 8 blocks, 8 heads, vocab 8192, f32):

  dense        SwiGLU FFN of width 2048 in every block
  moe          16 experts of width 1024, top-2: activated FFN compute = dense; ~5x the parameters
  ultramem     UltraMem V1: FFN width 1344 + 4 skip-layer memories (0:1/2:3/4:5/6:7), H = 2 heads,
               Tucker rank 2, 2 cores, E = 4 virtual blocks, knum 415, kdim 128, vdim 256, knn 32
  ultramem_v2  UltraMemV2: FFN width 1408 + a memory in every block over one shared table
               (knum 262 per layer, share ratio 1/8), H = 1, Ek = 2, kdim 128, vdim 256,
               pre-value dim 64, knn 32

The memory models give up FFN width so that their activated parameters match the dense model's
within 1% (the query/key/value-projection work of the memory layers takes its place), and their
tables are sized so that their total parameters match the MoE's: the comparison of the paper,
equal activated compute and equal total parameters.

Usage: make_models.py [--out bench-models/fig1b] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = "/usr/bin/python3"

BACKBONE = ["--hidden", "512", "--layers", "8", "--heads", "8", "--kv-heads", "8", "--vocab", "8192"]

MODELS = {
    "dense": [PY, "tools/test_models/make_checkpoint.py", "--arch", "llama", *BACKBONE, "--ffn", "2048", "--dtype", "f32",
              "--seed", "101"],
    "moe": [PY, "tools/test_models/make_moe_checkpoint.py", "--arch", "moe", *BACKBONE, "--ffn", "1024", "--experts", "16",
            "--top-k", "2", "--router", "softmax_topk", "--dtype", "f32", "--seed", "102"],
    "ultramem": [PY, "tools/test_models/make_ultramem_checkpoint.py", "--type", "ultramem", *BACKBONE, "--ffn", "1344",
                 "--insert", "0:1/2:3/4:5/6:7", "--knum", "415", "--kdim", "128", "--vdim", "256", "--knn", "32",
                 "--mem-heads", "2", "--rank", "2", "--cores", "2", "--value-expand", "4", "--seed", "103"],
    "ultramem_v2": [PY, "tools/test_models/make_ultramem_checkpoint.py", "--type", "ultramem_v2", *BACKBONE, "--ffn", "1408",
                    "--insert", "full", "--knum", "262", "--kdim", "128", "--vdim", "256", "--knn", "32",
                    "--mem-heads", "1", "--pre-vdim", "64", "--share-ratio", "0.125", "--key-expand", "2",
                    "--value-expand", "1", "--seed", "104"],
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(REPO, "bench-models", "fig1b"))
    p.add_argument("--only", nargs="*", choices=sorted(MODELS), help="make only these")
    a = p.parse_args()
    for name, cmd in MODELS.items():
        if a.only and name not in a.only:
            continue
        out = os.path.join(a.out, name)
        print(f"make_models: {name} -> {out}", flush=True)
        r = subprocess.run(cmd + ["--out", out], cwd=REPO)
        if r.returncode != 0:
            sys.exit(f"make_models: generating {name} failed (exit {r.returncode})")


if __name__ == "__main__":
    main()
