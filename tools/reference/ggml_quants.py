#!/usr/bin/python3
"""GGUF's quantized block types in NumPy: the reference the C++ dequantizers and quantizers
(engine/src/quant/) are checked against, written from the format's definition (block layouts in
ggml's ggml-common.h, summarised in engine/include/mnemo/quant/ggml_quants.hpp). Every product is
taken in float32 in the order the format's reference takes it, so results are bit-exact.

    dequantize(type_name, raw_bytes, n) -> float32[n]
    quantize(type_name, float32[n]) -> bytes          (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)

The K-quant quantizers follow the algorithm described at the top of engine/src/quant/quantize_k.cpp
(per sub-block weighted least squares over candidate grid spacings, sub-block scales quantized
against a few f16 super-block scales, weights re-rounded, the block with the smallest plain
squared error kept). Sums are taken left to right in float32 (np.cumsum, never np.sum's pairwise
order) and every product in the C++ order, so the bytes match exactly.
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
    if name in ("Q4_K", "Q5_K", "Q6_K"):
        return quantize_k(name, x)
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


# ---- K-quants ---------------------------------------------------------------------------------

SCALE_FACTORS = [f32(v) for v in (1.0, 0.99, 1.01, 1.02, 1.03, 1.05)]
MIN_FACTORS = [f32(v) for v in (1.0, 1.02, 1.05)]
Q6_FACTORS = [f32(v) for v in (1.0, 0.995, 1.005, 1.01, 1.02, 1.03)]
F16_MAX = f32(65504)


def _seqsum(v: np.ndarray) -> np.float32:
    """Left-to-right float32 sum (the C++ loop's order)."""
    return np.cumsum(np.asarray(v, dtype=f32), dtype=f32)[-1] if len(v) else f32(0)


def _round_clamp(v: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Nearest integer, ties to even, clamped to [lo, hi]."""
    r = np.rint(np.asarray(v, dtype=f32))
    return np.clip(r, lo, hi).astype(np.int32)


def _to_f16(v: np.float32) -> np.float16:
    return np.float16(np.clip(f32(v), -F16_MAX, F16_MAX))


def _fit_scale_min(x, w, nmax, rmin, rdelta, nstep):
    """Sub-block fit x ~ scale * L + min (min <= 0); returns (scale, -min)."""
    lo, hi = f32(min(x.min(), f32(0))), f32(x.max())
    sum_w = _seqsum(w)
    sum_x = _seqsum(w * x)
    if hi == lo:
        return f32(0), f32(-lo)
    rng = f32(hi - lo)
    iscale = f32(f32(nmax) / rng)
    scale = f32(f32(1) / iscale)
    mn = lo
    L = _round_clamp(iscale * (x - lo), 0, nmax).astype(f32)
    diff = (scale * L + lo) - x
    best = _seqsum(w * (diff * diff))
    for step in range(nstep + 1):
        iscale = f32(f32(f32(rmin) + f32(rdelta) * f32(step)) + f32(nmax)) / rng
        L = _round_clamp(iscale * (x - lo), 0, nmax).astype(f32)
        wl = w * L
        sum_l, sum_l2, sum_xl = _seqsum(wl), _seqsum(wl * L), _seqsum(wl * x)
        D = f32(sum_w * sum_l2 - sum_l * sum_l)
        if not D > 0:
            continue
        s = f32(f32(sum_w * sum_xl - sum_x * sum_l) / D)
        m = f32(f32(sum_l2 * sum_x - sum_l * sum_xl) / D)
        if m > 0:
            m = f32(0)
            s = f32(sum_xl / sum_l2)
        diff = (s * L + m) - x
        err = _seqsum(w * (diff * diff))
        if err < best:
            best, scale, mn = err, s, m
    return scale, f32(-mn)


def _quantize_k4(x: np.ndarray, nmax: int, rmin: float, rdelta: float, nstep: int) -> bytes:
    scales = np.zeros(8, f32)
    mins = np.zeros(8, f32)
    for j in range(8):
        xs = x[32 * j:32 * j + 32]
        av = np.sqrt(f32(_seqsum(xs * xs) / f32(32)))
        w = (av + np.abs(xs)).astype(f32)
        scales[j], mins[j] = _fit_scale_min(xs, w, nmax, rmin, rdelta, nstep)
    max_scale = f32(max(f32(0), scales.max()))
    max_min = f32(max(f32(0), mins.max()))
    best = None
    for fs in SCALE_FACTORS:
        for fm in MIN_FACTORS:
            S, M = f32(max_scale * fs), f32(max_min * fm)
            inv_s = f32(f32(63) / S) if S > 0 else f32(0)
            inv_m = f32(f32(63) / M) if M > 0 else f32(0)
            dh, mh = _to_f16(S / f32(63)), _to_f16(M / f32(63))
            d, dmin = f32(dh), f32(mh)
            sc = _round_clamp(inv_s * scales, 0, 63)
            m = _round_clamp(inv_m * mins, 0, 63)
            d1 = np.repeat((d * sc.astype(f32)).astype(f32), 32)
            m1 = np.repeat((dmin * m.astype(f32)).astype(f32), 32)
            safe = np.where(d1 != 0, d1, f32(1))
            L = np.where(d1 != 0, _round_clamp((x + m1) / safe, 0, nmax), 0)
            y = d1 * L.astype(f32) - m1
            err = _seqsum((y - x) * (y - x))
            if best is None or err < best[0]:
                best = (err, sc, m, L, dh, mh)
    _, sc, m, L, dh, mh = best
    s = np.zeros(12, np.int32)
    for j in range(8):
        if j < 4:
            s[j], s[j + 4] = sc[j], m[j]
        else:
            s[j + 4] = (sc[j] & 15) | ((m[j] & 15) << 4)
            s[j - 4] |= (sc[j] >> 4) << 6
            s[j] |= (m[j] >> 4) << 6
    L = L.reshape(4, 2, 32)
    qs = (L[:, 0] & 15) | ((L[:, 1] & 15) << 4)
    head = dh.tobytes() + mh.tobytes() + s.astype(np.uint8).tobytes()
    if nmax == 15:
        return head + qs.astype(np.uint8).tobytes()
    qh = np.zeros(32, np.int32)
    for k in range(4):
        qh |= ((L[k, 0] >> 4) << (2 * k)) | ((L[k, 1] >> 4) << (2 * k + 1))
    return head + qh.astype(np.uint8).tobytes() + qs.astype(np.uint8).tobytes()


def _fit_scale_q6(x: np.ndarray) -> np.float32:
    ax = np.abs(x)
    k = int(np.argmax(ax))  # the first of the largest magnitudes
    if ax[k] < f32(1e-15):
        return f32(0)
    mx = x[k]
    w = x * x

    def sums(iscale):
        L = _round_clamp(iscale * x, -32, 31).astype(f32)
        return _seqsum(w * x * L), _seqsum(w * L * L)

    sumlx, suml2 = sums(f32(f32(-32) / mx))
    scale = f32(sumlx / suml2) if suml2 != 0 else f32(0)
    best = f32(scale * sumlx)
    for step in range(-9, 10):
        if step == 0:
            continue
        sumlx, suml2 = sums(f32(-f32(f32(32) + f32(0.1) * f32(step)) / mx))
        if suml2 > 0 and f32(sumlx * sumlx) > f32(best * suml2):
            scale = f32(sumlx / suml2)
            best = f32(scale * sumlx)
    return scale


def _quantize_q6_k(x: np.ndarray) -> bytes:
    scales = np.array([_fit_scale_q6(x[16 * j:16 * j + 16]) for j in range(16)], dtype=f32)
    k = int(np.argmax(np.abs(scales)))
    max_scale = scales[k]
    if abs(max_scale) < f32(1e-15):
        return bytes(210)
    best = None
    for f in Q6_FACTORS:
        iscale = f32(f32(-128) / f32(max_scale * f))
        dh = _to_f16(f32(1) / iscale)
        d = f32(dh)
        sc = _round_clamp(iscale * scales, -128, 127)
        dj = np.repeat((d * sc.astype(f32)).astype(f32), 16)
        safe = np.where(dj != 0, dj, f32(1))
        q = np.where(dj != 0, _round_clamp(x / safe, -32, 31), 0)
        y = dj * q.astype(f32)
        err = _seqsum((y - x) * (y - x))
        if best is None or err < best[0]:
            best = (err, sc, q + 32, dh)
    _, sc, L, dh = best
    L = L.reshape(2, 4, 32)
    ql = np.concatenate([(L[:, 0] & 15) | ((L[:, 2] & 15) << 4), (L[:, 1] & 15) | ((L[:, 3] & 15) << 4)], axis=1)
    qh = (L[:, 0] >> 4) | ((L[:, 1] >> 4) << 2) | ((L[:, 2] >> 4) << 4) | ((L[:, 3] >> 4) << 6)
    return ql.astype(np.uint8).tobytes() + qh.astype(np.uint8).tobytes() + sc.astype(np.int8).tobytes() + dh.tobytes()


def quantize_k(name: str, x: np.ndarray) -> bytes:
    """Q4_K, Q5_K or Q6_K of float32 values (a multiple of 256)."""
    x = np.asarray(x, dtype=f32).reshape(-1, 256)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if name == "Q4_K":
            return b"".join(_quantize_k4(row, 15, -1.0, 0.1, 20) for row in x)
        if name == "Q5_K":
            return b"".join(_quantize_k4(row, 31, -0.5, 0.1, 15) for row in x)
        if name == "Q6_K":
            return b"".join(_quantize_q6_k(row) for row in x)
    raise ValueError(f"no quantizer for {name}")
