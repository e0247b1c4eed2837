"""Golden cases of MOE_FFN for tools/reference/ops_golden.py (own random stream).

Written from the op table (engine/include/mnemo/abi/mnemo_abi.h) the way a dense MoE layer is
usually written in NumPy: every expert is run on every token, and a dense [N, E] routing matrix
(zero for experts a token did not choose, summing repeated choices) mixes the results. Different
from the C++ reference, which loops over the chosen experts only.
"""
import numpy as np

RNG = np.random.default_rng(47)


def normal(*shape, std=1.0):
    return (RNG.standard_normal(shape) * std).astype(np.float32)


def silu(x):
    return x / (1.0 + np.exp(-x))


def moe_ffn(x, idx, w, gate, up, down):
    n_tok, k = idx.shape
    experts = gate.shape[0]
    routing = np.zeros((n_tok, experts))
    np.add.at(routing, (np.repeat(np.arange(n_tok), k), idx.reshape(-1)), w.reshape(-1))
    h = silu(np.einsum("efd,nd->nef", gate, x)) * np.einsum("efd,nd->nef", up, x)  # [N, E, F]
    y = np.einsum("edf,nef->ned", down, h)                                          # [N, E, D]
    return np.einsum("ne,ned->nd", routing, y)


def build(g):
    """g is the ops_golden module: g.case, g.f32, g.i32, g.Weight, g.f32p."""
    for label, dt, n, experts, k, dim, hidden, repeat in (
            ("e4_k2_f32", "f32", 3, 4, 2, 5, 6, False),
            ("e3_k2_bf16", "bf16", 4, 3, 2, 8, 3, False),
            ("e5_k3_f16_repeat", "f16", 2, 5, 3, 4, 7, True),
            ("e2_k1_f32", "f32", 1, 2, 1, 6, 4, False)):
        x = g.f32(normal(n, dim))
        idx = np.stack([RNG.permutation(experts)[:k] for _ in range(n)])
        idx[0, 0] = experts - 1
        if repeat:
            idx[1, 1] = idx[1, 0]  # one token chooses the same expert twice: both count
        ids = g.i32(idx)
        w = g.f32(RNG.uniform(0.1, 0.9, size=(n, k)).astype(np.float32))
        gate = g.Weight(normal(experts, hidden, dim, std=0.5), dt)
        up = g.Weight(normal(experts, hidden, dim, std=0.5), dt)
        down = g.Weight(normal(experts, dim, hidden, std=0.5), dt)
        g.case(f"moe_ffn_{label}", "moe_ffn", [x, ids, w, gate, up, down],
               moe_ffn(x.value, ids.value, w.value, gate.value, up.value, down.value))
