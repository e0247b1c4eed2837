#!/usr/bin/python3
"""Goldens of GGUF's block types (tests/data/quant/), checked by tests/test_ggml_quants.cpp:

    /usr/bin/python3 tools/reference/quant_golden.py tests/data/quant

For each of Q8_0, Q4_0, Q4_K, Q5_K, Q6_K: <type>_blocks.bin, random block bytes with finite f16
scales (every bit pattern of the quants and packed scales occurs), and <type>_dequant.npy, their
values by tools/reference/ggml_quants.py. For Q8_0 and Q4_0 also quant_input.npy (float32 rows:
Gaussian, with ties at .5, zeros, one all-zero block and one with a single value) and
<type>_quantized.bin, what the format's reference rounding writes for them. For Q4_K, Q5_K and
Q6_K: quant_k_input.npy (six blocks of 256: Gaussian, Gaussian with outliers, all zero, constant,
magnitudes near 1e-3 and near 1e3) and <type>_quantized.bin, what the quantizers of
ggml_quants.py (the search described in engine/src/quant/quantize_k.cpp) write for them.
"""

from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ggml_quants as gq  # noqa: E402


def random_blocks(rng: np.random.Generator, name: str, n_blocks: int) -> bytes:
    qk, size = gq.BLOCKS[name]
    b = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    scales = rng.uniform(-2.0, 2.0, size=(n_blocks, 2)).astype(np.float16).view(np.uint8)
    if name in ("Q8_0", "Q4_0"):
        b[:, 0:2] = scales[:, 0:2]
    elif name in ("Q4_K", "Q5_K"):
        b[:, 0:4] = np.abs(rng.uniform(0.001, 0.1, size=(n_blocks, 2))).astype(np.float16).view(np.uint8)
    elif name == "Q6_K":
        b[:, 208:210] = scales[:, 0:2]
    return b.tobytes()


def main() -> None:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(2025)
    for name in gq.BLOCKS:
        raw = random_blocks(rng, name, 24)
        n = 24 * gq.BLOCKS[name][0]
        with open(os.path.join(out, f"{name.lower()}_blocks.bin"), "wb") as f:
            f.write(raw)
        np.save(os.path.join(out, f"{name.lower()}_dequant.npy"), gq.dequantize(name, raw, n))
    x = rng.standard_normal((16, 32)).astype(np.float32)
    x[3, :] = 0.0                                     # an all-zero block
    x[4, :] = 0.0
    x[4, 7] = -3.0                                    # one value: it maps to -8 d exactly
    x[5, :] = np.arange(32, dtype=np.float32) - 15.5  # ties at .5 after scaling
    x[6, ::2] = -x[6, 1::2]                           # equal magnitudes of both signs
    np.save(os.path.join(out, "quant_input.npy"), x.reshape(-1))
    for name in ("Q8_0", "Q4_0"):
        with open(os.path.join(out, f"{name.lower()}_quantized.bin"), "wb") as f:
            f.write(gq.quantize(name, x))
    k = rng.standard_normal((6, 256)).astype(np.float32)
    k[1, ::37] *= 12.0                                # outliers
    k[2, :] = 0.0                                     # all zero
    k[3, :] = 0.75                                    # constant
    k[4, :] *= 1e-3                                   # tiny
    k[5, :] *= 1e3                                    # large
    np.save(os.path.join(out, "quant_k_input.npy"), k.reshape(-1))
    for name in ("Q4_K", "Q5_K", "Q6_K"):
        with open(os.path.join(out, f"{name.lower()}_quantized.bin"), "wb") as f:
            f.write(gq.quantize(name, k))


if __name__ == "__main__":
    main()
