"""Golden cases of MEM_INDEX, PEER_GATE, HIVE and the grouped / per-core EMBEDDING_BAG for
tools/reference/ops_golden.py (own random stream).

Each op is written here from its entry in the op table (engine/include/mnemo/abi/mnemo_abi.h) with
whole-array NumPy in float64, not as a transcription of the C++ loops: the bag is a one-hot
"masked score" matrix multiplied with the table (the way UltraMem's FusedLookup kernel phrases it),
the gate an einsum over gathered rows, HIVE a bag followed by a batched matrix product.
"""
import math

import numpy as np

RNG = np.random.default_rng(31)


def normal(*shape, std=1.0):
    return (RNG.standard_normal(shape) * std).astype(np.float32)


def embedding_bag(table, idx, w, groups):
    """out[n, g*C + c] = sum over entries j with idx // R == g of w[n, j, core(c)] * table[idx % R, c]."""
    rows, cols = table.shape
    n_bags, m = idx.shape
    cores = 1 if w.ndim == 2 else w.shape[2]
    wc = w[..., None] if w.ndim == 2 else w                         # [N, m, P]
    per_col = np.repeat(wc, cols // cores, axis=2)                  # [N, m, C]: each core's weight on its slice
    onehot = (idx // rows)[..., None] == np.arange(groups)          # [N, m, G]
    gathered = table[idx % rows] * per_col                          # [N, m, C]
    return np.einsum("nmg,nmc->ngc", onehot.astype(np.float64), gathered).reshape(n_bags, groups * cols)


def mem_index(v, shuffle, value_num, offset, rows, with_group):
    s = shuffle[v] if shuffle is not None else v
    g, r = np.divmod(s, value_num)
    row = (r + offset) % rows
    return g * rows + row if with_group else row


def gelu(x, form):
    if form == 1:
        erf = np.vectorize(math.erf)
        return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
    if form == 2:
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return x


def peer_gate(table, idx, x, s, act):
    dots = np.einsum("nmp,np->nm", table[idx % table.shape[0]], x)
    a = gelu(dots, act)
    return a[..., None] * s if s.ndim == 3 else a * s


def hive(bank, idx, w, proj):
    latent = np.einsum("nhm,nhmr->nhr", w, bank[idx])
    return np.einsum("nhr,hrd->nhd", latent, proj)


def build(g):
    """g is the ops_golden module: g.case, g.f32, g.i32, g.Weight, g.f32p."""
    # EMBEDDING_BAG with groups and per-core weights (UltraMem's IVE + multi-core scoring).
    for label, dt, rows, cols, groups, cores, n, m in (
            ("g4_p2_bf16", "bf16", 6, 8, 4, 2, 3, 5),
            ("g3_p1_f32", "f32", 5, 3, 3, 1, 2, 4),
            ("g1_p3_f16", "f16", 7, 9, 1, 3, 2, 3)):
        table = g.Weight(normal(rows, cols), dt)
        idx = RNG.integers(0, groups * rows, size=(n, m))
        if m >= 3:  # (empty bags, m = 0, are covered by the conformance cases)
            idx[0, :3] = [groups * rows - 1, 0, rows - 1 if groups == 1 else rows]  # last, first, a group edge
            idx[-1, 1] = idx[-1, 0]                                                 # a repeat adds up
        wshape = (n, m) if cores == 1 else (n, m, cores)
        w = g.f32(normal(*wshape))
        case_idx = g.i32(idx)
        g.case(f"embedding_bag_{label}", "embedding_bag", [table, case_idx, w],
               embedding_bag(table.value, case_idx.value, w.value, groups), iparams=[groups])

    # MEM_INDEX: shuffled and plain, windows that wrap around the shared table.
    for label, shape, value_num, offset, rows, groups, shuffled, with_group in (
            ("shuffle_grouped", (2, 3, 4), 9, 0, 9, 4, True, True),
            ("shuffle_window_wraps", (2, 10), 9, 20, 25, 3, True, False),
            ("plain_grouped_wraps", (12,), 5, 6, 8, 2, False, True),
            ("plain_4d", (2, 1, 2, 3), 4, 1, 4, 1, False, False)):
        virt = value_num * groups
        v = RNG.integers(0, virt, size=shape)
        v.reshape(-1)[:2] = [0, virt - 1]
        perm = RNG.permutation(virt) if shuffled else None
        inputs = [g.i32(v)] + ([g.i32(perm)] if shuffled else [])
        expected = mem_index(v.astype(np.int64), perm, value_num, offset, rows, with_group)
        g.case(f"mem_index_{label}", "mem_index", inputs, expected,
               iparams=[value_num, offset, rows, groups, int(with_group)])

    # PEER_GATE: the three activations, [N, m] and [N, m, C] scores, indices carrying a group.
    for label, dt, rows, width, n, m, cores, act in (
            ("linear_c2_bf16", "bf16", 6, 8, 2, 4, 2, 0),
            ("gelu_erf_f32", "f32", 5, 7, 3, 3, 1, 1),
            ("gelu_tanh_c3_f16", "f16", 4, 5, 2, 5, 3, 2)):
        table = g.Weight(normal(rows, width, std=0.6), dt)
        idx = g.i32(RNG.integers(0, 3 * rows, size=(n, m)))
        x = g.f32(normal(n, width))
        s = g.f32(normal(*((n, m) if cores == 1 else (n, m, cores))))
        g.case(f"peer_gate_{label}", "peer_gate", [table, idx, x, s],
               peer_gate(table.value, idx.value, x.value, s.value, act), iparams=[act])

    # HIVE: per-head bags over one latent bank, then each head's projection.
    for label, bank_dt, proj_dt, rows, rank, n, heads, m, dh in (
            ("bf16_f32", "bf16", "f32", 7, 4, 2, 3, 5, 6),
            ("f16_bf16", "f16", "bf16", 5, 6, 3, 2, 2, 3),
            ("f32_f32_m1", "f32", "f32", 4, 3, 1, 1, 1, 2)):
        bank = g.Weight(normal(rows, rank), bank_dt)
        idx = RNG.integers(0, rows, size=(n, heads, m))
        idx.reshape(-1)[:2] = [0, rows - 1][:idx.size]
        w = g.f32(normal(n, heads, m))
        proj = g.Weight(normal(heads, rank, dh), proj_dt)
        case_idx = g.i32(idx)
        g.case(f"hive_{label}", "hive", [bank, case_idx, w, proj],
               hive(bank.value, case_idx.value, w.value, proj.value))
