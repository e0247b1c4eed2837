#!/usr/bin/python3
"""Golden cases for the op references (engine/src/ops/reference_<family>.cpp), computed independently with
NumPy in float64 straight from the op table in engine/include/mnemo/abi/mnemo_ops.def.

Regenerate (from the repository root; needs Debian's python3 with numpy):

    /usr/bin/python3 tools/reference/ops_golden.py tests/data/ops_golden

Each case is a folder <out>/<case>/ holding in<i>.npy (f32 '<f4', i32 '<i4', f16 '<f2', bf16 bit
patterns as '<u2'), expected.npy (f32, or i32 for integer results such as argtopk's indices) and meta.txt:

    op <op name>
    input <file> <f32|f16|bf16|i32>     (one line per input, in order)
    iparams <int> ...                   (optional)
    fparams <float> ...                 (optional; printed exactly, parse as float32)
    expected expected.npy

tests/test_ops_reference.cpp runs the C++ reference on the inputs and compares.
"""
import importlib
import os
import shutil
import sys

import numpy as np

RNG = np.random.default_rng(20240611)


def normal(*shape, mean=0.0, std=1.0):
    return (RNG.standard_normal(shape) * std + mean).astype(np.float32)


def to_bf16_bits(x):
    """Round-to-nearest-even f32 -> bf16, as mnemo::f32_to_bf16 (inputs here are finite)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounding = 0x7FFF + ((bits >> 16) & 1)
    return ((bits + rounding) >> 16).astype(np.uint16)


def bf16_bits_to_f64(b):
    return (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


class Weight:
    """A weight tensor in one of the float dtypes: `stored` goes to disk, `value` is what it means."""

    def __init__(self, x, dtype):
        self.dtype = dtype
        if dtype == "f32":
            self.stored = x.astype(np.float32)
            self.value = self.stored.astype(np.float64)
        elif dtype == "f16":
            self.stored = x.astype(np.float16)
            self.value = self.stored.astype(np.float64)
        elif dtype == "bf16":
            self.stored = to_bf16_bits(x)
            self.value = bf16_bits_to_f64(self.stored)
        else:
            raise ValueError(dtype)


def f32(x):
    return Weight(np.asarray(x, dtype=np.float32), "f32")


def i32(x):
    w = Weight(np.zeros(1, np.float32), "f32")
    w.dtype = "i32"
    w.stored = np.asarray(x, dtype=np.int32)
    w.value = w.stored.astype(np.int64)
    return w


CASES = []


def case(name, op, inputs, expected, iparams=(), fparams=()):
    # Integer results (argtopk's indices) stay integers and are compared exactly.
    expected = np.asarray(expected)
    expected = expected.astype(np.int64 if expected.dtype.kind in "iu" else np.float64)
    CASES.append((name, op, inputs, expected, list(iparams), list(fparams)))


def f32p(v):
    """A parameter as the engine sees it (float32)."""
    return float(np.float32(v))


# --- the op definitions, written from the table in mnemo_abi.h ---------------------------------

def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def rms_norm(x, eps, w=None):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y * w if w is not None else y


def layer_norm(x, eps, w=None, b=None):
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def rope(x, pos, inv_freq, mode, rot):
    y = x.copy()
    angle = pos[:, None].astype(np.float64) * inv_freq[None, :]  # [N, R/2]
    cos = np.cos(angle)[:, None, :]
    sin = np.sin(angle)[:, None, :]
    half = rot // 2
    if mode == 0:
        a, b = x[..., :half], x[..., half:rot]
        y[..., :half] = a * cos - b * sin
        y[..., half:rot] = b * cos + a * sin
    else:
        a, b = x[..., 0:rot:2], x[..., 1:rot:2]
        y[..., 0:rot:2] = a * cos - b * sin
        y[..., 1:rot:2] = b * cos + a * sin
    return y


def softmax(x, scale):
    z = x * (1.0 if scale == 0 else scale)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention(q, k, v, seq, pos, scale):
    n_tok, hq, _ = q.shape
    hkv = k.shape[1]
    out = np.zeros((n_tok, hq, v.shape[3]))
    for n in range(n_tok):
        for h in range(hq):
            kvh = h // (hq // hkv)
            keys = k[seq[n], kvh, : pos[n] + 1]
            vals = v[seq[n], kvh, : pos[n] + 1]
            s = keys @ q[n, h] * scale
            p = np.exp(s - s.max())
            out[n, h] = (p / p.sum()) @ vals
    return out


def argtopk(x, k):
    """Largest first; equal values keep index order (a stable sort), NaN last: numpy's sort
    puts NaN at the end, and negating keeps it there while reversing the numbers."""
    return np.argsort(-x, axis=-1, kind="stable")[..., :k]


def embedding_bag(table, idx, w):
    return np.einsum("nm,nmc->nc", w, table[idx])


def build():
    for dt in ("f32", "f16", "bf16"):
        table = Weight(normal(5, 3), dt)
        idx = i32([4, 0, 2, 2])
        case(f"get_rows_{dt}", "get_rows", [table, idx], table.value[idx.value])

    for name, xs, m, dt in (("2d_f32", (3, 5), 4, "f32"), ("3d_f16", (2, 2, 7), 3, "f16"),
                            ("1row_bf16", (1, 9), 6, "bf16"), ("4d_f32", (2, 1, 2, 4), 5, "f32")):
        x = f32(normal(*xs))
        w = Weight(normal(m, xs[-1]), dt)
        case(f"matmul_{name}", "matmul", [x, w], x.value @ w.value.T)

    for op, fn in (("add", np.add), ("mul", np.multiply)):
        a = f32(normal(2, 3, 4))
        for label, bshape in (("row", (4,)), ("plane", (3, 4)), ("same", (2, 3, 4))):
            b = f32(normal(*bshape))
            case(f"{op}_{label}", op, [a, b], fn(a.value, b.value))

    x = f32(normal(2, 5))
    case("scale", "scale", [x], x.value * f32p(-0.75), fparams=[f32p(-0.75)])

    eps = f32p(1e-6)
    x = f32(normal(3, 8))
    case("rms_norm_plain", "rms_norm", [x], rms_norm(x.value, eps), fparams=[eps])
    w = f32(normal(8))
    case("rms_norm_w_f32", "rms_norm", [x, w], rms_norm(x.value, eps, w.value), fparams=[eps])
    wb = Weight(normal(8), "bf16")
    case("rms_norm_w_bf16", "rms_norm", [x, wb], rms_norm(x.value, eps, wb.value), fparams=[eps])

    eps = f32p(1e-5)
    x = f32(normal(2, 7, mean=3.0))
    case("layer_norm_plain", "layer_norm", [x], layer_norm(x.value, eps), fparams=[eps])
    w = f32(normal(7))
    case("layer_norm_w", "layer_norm", [x, w], layer_norm(x.value, eps, w.value), fparams=[eps])
    b = Weight(normal(7), "f16")
    case("layer_norm_w_b_f16", "layer_norm", [x, w, b], layer_norm(x.value, eps, w.value, b.value), fparams=[eps])

    for label, mode, d, rot in (("halves_full", 0, 8, 8), ("halves_partial", 0, 6, 4),
                                ("interleaved_partial", 1, 8, 6), ("interleaved_full", 1, 4, 4)):
        x = f32(normal(3, 2, d))
        pos = i32([0, 5, 1000])
        inv = f32((10000.0 ** (-np.arange(0, rot, 2) / rot)).astype(np.float32))
        case(f"rope_{label}", "rope", [x, pos, inv], rope(x.value, pos.value, inv.value, mode, rot),
             iparams=[mode, rot])

    x = f32(np.concatenate([normal(13, std=2.0), np.array([-30.0, -8.0, 8.0, 30.0], np.float32)]))
    case("silu", "silu", [x], silu(x.value))
    case("gelu", "gelu", [x], gelu_tanh(x.value))

    g, u = f32(normal(2, 5)), f32(normal(2, 5))
    case("swiglu", "swiglu", [g, u], silu(g.value) * u.value)

    x = f32(normal(3, 6))
    case("softmax_plain", "softmax", [x], softmax(x.value, 0.0), fparams=[0.0])
    case("softmax_scaled", "softmax", [x], softmax(x.value, f32p(0.5)), fparams=[f32p(0.5)])
    big = f32(normal(2, 5, std=60.0))
    case("softmax_large", "softmax", [big], softmax(big.value, 0.0), fparams=[0.0])

    cache = f32(normal(2, 2, 4, 3))
    src = f32(normal(3, 2, 3))
    seq, pos = i32([0, 1, 1]), i32([0, 2, 3])
    expected = cache.value.copy()
    for n in range(3):
        expected[seq.value[n], :, pos.value[n], :] = src.value[n]
    case("kv_store", "kv_store", [cache, src, seq, pos], expected)

    for label, hq, hkv in (("gqa2", 4, 2), ("mha", 2, 2)):
        d, dv, ctx = 5, 3, 6
        q = f32(normal(4, hq, d))
        k = f32(normal(2, hkv, ctx, d))
        v = f32(normal(2, hkv, ctx, dv))
        seq, pos = i32([0, 0, 1, 1]), i32([0, 3, 2, 5])
        scale = f32p(1.0 / np.sqrt(d))
        case(f"attention_{label}", "attention", [q, k, v, seq, pos],
             attention(q.value, k.value, v.value, seq.value, pos.value, scale), fparams=[scale])

    # Memory-layer ops (appended last so that the cases above keep their random draws).
    x = f32(np.round(normal(3, 9) * 2.0) / 2.0)  # multiples of 0.5: many exact ties
    x.stored[0, :] = [0.0, -0.0, 1.5, 1.5, np.nan, -np.inf, 1.5, 0.0, np.inf]
    x.value = x.stored.astype(np.float64)
    case("argtopk_ties_k4", "argtopk", [x], argtopk(x.value, 4), iparams=[4])
    case("argtopk_ties_full", "argtopk", [x], argtopk(x.value, 9), iparams=[9])
    xs = f32(normal(2, 2, 50))
    case("argtopk_3d_k1", "argtopk", [xs], argtopk(xs.value, 1), iparams=[1])

    x = f32(normal(2, 3, 6))
    idx = i32(RNG.integers(0, 6, size=(2, 3, 4)))
    case("take_along", "take_along", [x, idx], np.take_along_axis(x.value, idx.value, axis=-1))

    for dt in ("f32", "f16", "bf16"):
        table = Weight(normal(11, 5), dt)
        idx = i32(np.array([[3, 3, 10, 0], [7, 1, 7, 2], [5, 5, 5, 5]]))  # repeated rows add up
        w = f32(normal(3, 4))
        case(f"embedding_bag_{dt}", "embedding_bag", [table, idx, w], embedding_bag(table.value, idx.value, w.value))

    # Later op families live in their own files, each with its own random stream, so that adding
    # a case to one never changes another's inputs.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    # ops_golden_vq.py (FAISS) writes vq/ separately: run it after this script, which rewrites the folder.
    for module in ("ops_golden_product_keys", "ops_golden_lookup", "ops_golden_moe", "ops_golden_elementwise",
                   "ops_golden_memory3"):
        importlib.import_module(module).build(sys.modules[__name__])


def write(out_dir):
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    for name, op, inputs, expected, iparams, fparams in CASES:
        folder = os.path.join(out_dir, name)
        os.makedirs(folder)
        lines = [f"op {op}"]
        for i, t in enumerate(inputs):
            np.save(os.path.join(folder, f"in{i}.npy"), t.stored)
            lines.append(f"input in{i}.npy {t.dtype}")
        if iparams:
            lines.append("iparams " + " ".join(str(int(v)) for v in iparams))
        if fparams:
            lines.append("fparams " + " ".join(repr(float(v)) for v in fparams))
        np.save(os.path.join(folder, "expected.npy"),
                expected.astype(np.int32 if expected.dtype.kind == "i" else np.float32))
        lines.append("expected expected.npy")
        with open(os.path.join(folder, "meta.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
    print(f"wrote {len(CASES)} cases to {out_dir}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: ops_golden.py <output folder, e.g. tests/data/ops_golden>")
    build()
    write(sys.argv[1])
