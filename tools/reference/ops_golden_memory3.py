"""Golden cases of the explicit-memory ops for tools/reference/ops_golden.py (own random stream):
ROPE with a position offset, ATTENTION with a prefix (shared, and one block per query), and
ATTN_MASS, written from the op table (engine/include/mnemo/abi/mnemo_abi.h) with NumPy masks
over whole score matrices rather than the C++ reference's loops.
"""
import numpy as np

RNG = np.random.default_rng(61)


def normal(*shape, std=1.0):
    return (RNG.standard_normal(shape) * std).astype(np.float32)


def attention_prefix(q, k, v, seq, pos, pk, pv, plen, pblock, scale):
    """One softmax over [prefix slots 0..plen[b]-1 of block b | cache 0..pos[n]]."""
    n_tok, hq, _ = q.shape
    hkv = k.shape[1]
    out = np.zeros((n_tok, hq, v.shape[3]))
    for n in range(n_tok):
        b = 0 if pblock is None else pblock[n]
        for h in range(hq):
            g = h // (hq // hkv)
            keys = k[seq[n], g, : pos[n] + 1]
            vals = v[seq[n], g, : pos[n] + 1]
            if b >= 0:
                keys = np.concatenate([pk[b, g, : plen[b]], keys])
                vals = np.concatenate([pv[b, g, : plen[b]], vals])
            s = keys.astype(np.float64) @ q[n, h] * scale
            p = np.exp(s - s.max())
            out[n, h] = (p / p.sum()) @ vals
    return out


def attn_mass(q, k, seq, pos, mode, first, scale):
    n_tok, hq, _ = q.shape
    hkv = k.shape[1]
    counted = (seq >= 0) & (pos >= first)
    same = (seq[:, None] == seq[None, :]) & counted[:, None] & counted[None, :]  # [i, j]
    out = np.zeros((n_tok, hkv))
    for h in range(hq):
        g = h // (hq // hkv)
        s = (q[:, h].astype(np.float64) @ k[:, g].astype(np.float64).T) * scale  # [i, j]
        e = np.where(same, np.exp(s - np.where(same, s, -np.inf).max(axis=1, keepdims=True, initial=-np.inf)), 0.0)
        if mode == 0:
            a = e / np.maximum(e.sum(axis=1, keepdims=True), 1e-300)
        else:
            a = np.where(same, np.exp(s), 0.0)
        out[:, g] += a.sum(axis=0)
    return out


def build(g):
    """g is the ops_golden module: g.case, g.f32, g.i32, g.Weight, g.f32p, g.rope."""
    # RoPE at pos + offset, offsets that make the sum negative too.
    x = g.f32(normal(4, 2, 8))
    pos = g.i32(np.array([0, 3, 7, 40]))
    inv = g.f32((1.0 / (10000.0 ** (np.arange(0, 8, 2) / 8.0))).astype(np.float32))
    for offset in (128, -5):
        shifted = pos.value + offset
        g.case(f"rope_offset_{offset}".replace("-", "m"), "rope", [x, pos, inv],
               g.rope(x.value, shifted, inv.value, 0, 8), iparams=[0, 8, offset])

    # Attention after a prefix: shared (8 inputs) and per-query blocks (9 inputs), GQA 2.
    S, hkv, C, D = 2, 2, 8, 6
    q = g.f32(normal(5, 4, D))
    kc = g.f32(normal(S, hkv, C, D))
    vc = g.f32(normal(S, hkv, C, D))
    seq = g.i32(np.array([0, 0, 1, 1, 0]))
    pos = g.i32(np.array([0, 3, 2, 7, 5]))
    B, M = 3, 4
    pk = g.f32(normal(B, hkv, M, D))
    pv = g.f32(normal(B, hkv, M, D))
    plen = g.i32(np.array([4, 0, 2]))
    pblock = g.i32(np.array([0, 2, -1, 1, 2]))
    scale = g.f32p(1.0 / np.sqrt(D))
    g.case("attention_prefix_blocks", "attention", [q, kc, vc, seq, pos, pk, pv, plen, pblock],
           attention_prefix(q.value, kc.value, vc.value, seq.value, pos.value, pk.value, pv.value, plen.value,
                            pblock.value, scale), fparams=[scale])
    pk1 = g.f32(normal(1, hkv, M, D))
    pv1 = g.f32(normal(1, hkv, M, D))
    plen1 = g.i32(np.array([3]))
    g.case("attention_prefix_shared", "attention", [q, kc, vc, seq, pos, pk1, pv1, plen1],
           attention_prefix(q.value, kc.value, vc.value, seq.value, pos.value, pk1.value, pv1.value, plen1.value,
                            None, scale), fparams=[scale])

    # ATTN_MASS: two interleaved sequences, an excluded token, the first counted position 2.
    n, hq, hkv, d = 9, 4, 2, 5
    q = g.f32(normal(n, hq, d))
    k = g.f32(normal(n, hkv, d))
    seq = g.i32(np.array([0, 0, 1, 0, 1, 1, -1, 0, 1]))
    pos = g.i32(np.array([0, 1, 0, 2, 1, 2, 0, 3, 3]))
    scale = g.f32p(1.0 / np.sqrt(d))
    for mode, first in ((0, 0), (0, 2), (1, 1)):
        g.case(f"attn_mass_mode{mode}_first{first}", "attn_mass", [q, k, seq, pos],
               attn_mass(q.value, k.value, seq.value, pos.value, mode, first, scale),
               iparams=[mode, first], fparams=[scale])
