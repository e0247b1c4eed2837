#!/usr/bin/python3
"""GGUF's quantized block types in NumPy: the reference the C++ dequantizers and quantizers
(engine/src/quant/) are checked against, written from the format's definition (block layouts in
ggml's ggml-common.h, summarised in engine/include/mnemo/quant/ggml_quants.hpp). Every product is
taken in float32 in the order the format's reference takes it, so results are bit-exact.

    dequantize(type_name, raw_bytes, n) -> float32[n]
    quantize(type_name, float32[n]) -> bytes          (Q8_0, Q4_0)
"""

from __future__ import annotations

import numpy as np

BLOCKS = {  # name: (weights per block, bytes per block)
    "Q8_0": (32, 34),
    "Q4_0": (32, 18),
    "Q4_K": (256, 144),
    "Q5_K": (256, 176),
    "Q6_K": (256, 210),
}

f32 = np.float32


def _f16(raw: np.ndarray) -> np.ndarray:
    return raw.view(np.float16).astype(f32)


def _blocks(name: str, raw: bytes, n: int) -> np.ndarray:
    qk, size = BLOCKS[name]
    assert n % qk == 0 and len(raw) == n // qk * size, (name, n, len(raw))
    return np.frombuffer(raw, dtype=np.uint8).reshape(n // qk, size)


def _scale_min_k4(s: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray]:
    """Sub-block j's 6-bit scale and min from the 12 packed bytes (one row per block)."""
    s = s.astype(np.int32)
    if j < 4:
        return s[:, j] & 63, s[:, j + 4] & 63
    sc = (s[:, j + 4] & 0x0F) | ((s[:, j - 4] >> 6) << 4)
    m = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
    return sc, m


def dequantize(name: str, raw: bytes, n: int) -> np.ndarray:
    b = _blocks(name, raw, n)
    nb = b.shape[0]
    if name == "Q8_0":
        d = _f16(b[:, 0:2].copy())
        q = b[:, 2:].view(np.int8).astype(f32)
        return (q * d).reshape(-1)
    if name == "Q4_0":
        d = _f16(b[:, 0:2].copy())
        qs = b[:, 2:].astype(np.int32)
        lo = ((qs & 0x0F) - 8).astype(f32)
        hi = ((qs >> 4) - 8).astype(f32)
        return (np.concatenate([lo, hi], axis=1) * d).reshape(-1)
    if name in ("Q4_K", "Q5_K"):
        d = _f16(b[:, 0:2].copy())[:, 0]
        dmin = _f16(b[:, 2:4].copy())[:, 0]
        scales = b[:, 4:16]
        qh = b[:, 16:48].astype(np.int32) if name == "Q5_K" else None
        qs = (b[:, 48:] if name == "Q5_K" else b[:, 16:]).astype(np.int32)
        y = np.empty((nb, 256), dtype=f32)
        for i in range(4):
            q = qs[:, 32 * i:32 * i + 32]
            for half, nib in ((0, q & 0x0F), (1, q >> 4)):
                sc, m = _scale_min_k4(scales, 2 * i + half)
                dd = (d * sc.astype(f32)).astype(f32)
                mm = (dmin * m.astype(f32)).astype(f32)
                hib = ((qh >> (2 * i + half)) & 1) << 4 if qh is not None else 0
                p = (dd[:, None] * (nib + hib).astype(f32)).astype(f32)
                y[:, 64 * i + 32 * half:64 * i + 32 * half + 32] = p - mm[:, None]
        return y.reshape(-1)
    if name == "Q6_K":
        ql = b[:, 0:128].astype(np.int32)
        qh = b[:, 128:192].astype(np.int32)
        sc = b[:, 192:208].view(np.int8).astype(f32)
        d = _f16(b[:, 208:210].copy())[:, 0]
        y = np.empty((nb, 256), dtype=f32)
        for h in range(2):
            L = ql[:, 64 * h:64 * h + 64]
            H = qh[:, 32 * h:32 * h + 32]
            q = [
                (L[:, 0:32] & 0x0F) | (((H >> 0) & 3) << 4),
                (L[:, 32:64] & 0x0F) | (((H >> 2) & 3) << 4),
                (L[:, 0:32] >> 4) | (((H >> 4) & 3) << 4),
                (L[:, 32:64] >> 4) | (((H >> 6) & 3) << 4),
            ]
            for k in range(4):
                for l16 in range(2):
                    s = sc[:, 8 * h + 2 * k + l16]
                    qq = (q[k][:, 16 * l16:16 * l16 + 16] - 32).astype(f32)
                    ds = (d * s).astype(f32)
                    y[:, 128 * h + 32 * k + 16 * l16:128 * h + 32 * k + 16 * l16 + 16] = ds[:, None] * qq
        return y.reshape(-1)
    raise ValueError(f"no dequantizer for {name}")


def quantize(name: str, x: np.ndarray) -> bytes:
    x = np.asarray(x, dtype=f32).reshape(-1, 32)
    out = bytearray()
    for row in x:
        if name == "Q8_0":
            amax = f32(np.max(np.abs(row)))
            d = f32(amax / f32(127))
            idd = f32(1) / d if d != 0 else f32(0)
            v = (row * idd).astype(f32)
            # C's roundf: halves away from zero (the fraction is exact in float64)
            v64 = v.astype(np.float64)
            t = np.trunc(v64)
            q = (t + np.where(np.abs(v64 - t) >= 0.5, np.sign(v64), 0.0)).astype(np.int8)
            out += np.float16(d).tobytes() + q.tobytes()
        elif name == "Q4_0":
            k = int(np.argmax(np.abs(row)))  # first of the largest magnitudes, as a strict < scan keeps
            d = f32(row[k] / f32(-8))
            idd = f32(1) / d if d != 0 else f32(0)
            v = ((row * idd).astype(f32) + f32(8.5)).astype(f32)
            q = np.minimum(15, np.trunc(v).astype(np.int32))
            out += np.float16(d).tobytes() + (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()
        else:
            raise ValueError(f"no quantizer for {name}")
    return bytes(out)
