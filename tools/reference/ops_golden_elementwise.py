"""Golden cases of the elementwise family added after ops_golden.py's first cases, for
tools/reference/ops_golden.py: the exact (erf) GELU (GELU with i[0] = 1) and CLAMP.

Own random stream, so these cases never shift the inputs of any other case (new cases go last).
The expected values are computed in float64 independently of the C++ reference: GELU erf as
x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) with math.erf (the tanh form, i[0] = 0, stays covered by
the "gelu" case of ops_golden.py); CLAMP as numpy's clip.
"""
import math

import numpy as np

RNG = np.random.default_rng(7)


def gelu_erf(x):
    return np.vectorize(lambda v: 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))))(x)


def build(g):
    """g is the ops_golden module: g.case, g.f32, g.i32, g.Weight, g.f32p."""
    # Wide spread: both tails (-> 0 below, -> x above) and the curved middle.
    x = g.f32((RNG.standard_normal((3, 37)) * 4.0).astype(np.float32))
    g.case("gelu_erf", "gelu", [x], gelu_erf(x.value), iparams=[1])
    # Hand-checkable points: 0, +-1 (Phi(1) = 0.841344746...), a far negative tail.
    pts = g.f32(np.array([0.0, 1.0, -1.0, 3.0, -3.0, -8.0], dtype=np.float32))
    g.case("gelu_erf_points", "gelu", [pts], gelu_erf(pts.value), iparams=[1])

    # CLAMP: f[0] = lo, f[1] = hi. Values on both sides of both bounds and exactly on them.
    x = g.f32((RNG.standard_normal((2, 9)) * 3.0).astype(np.float32))
    x.stored[0, :4] = [-1.25, 0.5, -2.0, 3.0]
    x.value = x.stored.astype(np.float64)
    lo, hi = g.f32p(-1.25), g.f32p(0.5)
    g.case("clamp", "clamp", [x], np.clip(x.value, lo, hi), fparams=[lo, hi])
