"""Golden cases of PK_SCORE, PK_TOPK, PK_PAIR_SCORES for tools/reference/ops_golden.py (own random stream).

Written from the op table in engine/include/mnemo/abi/mnemo_abi.h, in float64 NumPy. Two
rounding points are part of PK_TOPK's contract and are reproduced here: the stage-1 scores s1, s2
are ranked as f32 values (formed in double, rounded once), and stage-2 pair scores are ranked in
double. Orders are stable sorts of the negated scores: largest first, equal scores in index order,
NaN last (NumPy sorts NaN to the end, and negating keeps it there).
"""
import numpy as np

RNG = np.random.default_rng(0)


def normal(*shape, std=1.0, mean=0.0):
    return (RNG.standard_normal(shape) * std + mean).astype(np.float32)


def grid(*shape):
    """Multiples of 0.5 in about -3..3: many exact ties, every product and sum below exact."""
    return (np.round(RNG.standard_normal(shape) * 2.0) / 2.0).astype(np.float32)


def pk_score(q, keys, heads, share, gain=None, eps=0.0):
    """q [N, Q, 2, K], keys [2H, Nk, K, Rk] -> S [N, 2H, Nk, Rk]."""
    if gain is not None:
        rms = np.sqrt(np.mean(keys * keys, axis=2, keepdims=True) + eps)  # over d, per (bank, key, rank)
        keys = keys / rms * gain[None, None, :, None]
    out = np.zeros((q.shape[0], 2 * heads, keys.shape[1], keys.shape[3]))
    for bank in range(2 * heads):
        h, side = divmod(bank, 2)
        out[:, bank] = np.einsum("nd,jdr->njr", q[:, h // share, side], keys[bank])
    return out


def stable_desc(x):
    return np.argsort(-x, kind="stable")


def pk_topk(S, m, k, u=None, v=None, cores=()):
    n_tok, banks, nk, rank = S.shape
    heads = banks // 2
    out = np.zeros((n_tok, heads, k), dtype=np.int64)
    for n in range(n_tok):
        for h in range(heads):
            S1, S2 = S[n, 2 * h], S[n, 2 * h + 1]
            if u is None:
                s1, s2 = S1[:, 0], S2[:, 0]
            else:
                s1, s2 = np.zeros(nk), np.zeros(nk)
                for r in range(rank):
                    s1 = s1 + u[h, r] * S1[:, r]
                    s2 = s2 + v[h, r] * S2[:, r]
                s1 = s1.astype(np.float32).astype(np.float64)
                s2 = s2.astype(np.float32).astype(np.float64)
            I1, I2 = stable_desc(s1)[:m], stable_desc(s2)[:m]
            if not cores:
                t = s1[I1][:, None] + s2[I2][None, :]
            else:
                t = sum(S1[I1] @ core[h] @ S2[I2].T for core in cores)
            best = stable_desc(t.reshape(-1))[:k]  # pair p = a*m + b
            out[n, h] = I1[best // m] * nk + I2[best % m]
    return out


def pk_pair_scores(S, idx, cores=()):
    n_tok, banks, nk, rank = S.shape
    heads, k = banks // 2, idx.shape[2]
    out = np.zeros((n_tok, heads, k, max(1, len(cores))))
    for n in range(n_tok):
        for h in range(heads):
            i, j = idx[n, h] // nk, idx[n, h] % nk
            S1, S2 = S[n, 2 * h, i], S[n, 2 * h + 1, j]  # [k, Rk]
            if not cores:
                out[n, h, :, 0] = S1[:, 0] + S2[:, 0]
            for c, core in enumerate(cores):
                out[n, h, :, c] = np.einsum("qa,ab,qb->q", S1, core[h], S2)
    return out


def build(g):
    """g is the ops_golden module: g.case, g.f32, g.i32, g.Weight, g.f32p."""
    # PK_SCORE: plain and key-normed, shared queries (s = 2), odd sizes, every key dtype.
    for label, n, nq, heads, share, nk, kdim, rank, norm, dt in (
            ("plain_f32", 2, 1, 1, 1, 5, 4, 1, False, "f32"),
            ("shared_rank2_f16", 3, 1, 2, 2, 6, 5, 2, False, "f16"),
            ("norm_rank2_bf16", 2, 1, 2, 2, 7, 6, 2, True, "bf16"),
            ("norm_h3_rank3_f32", 1, 2, 3, 2, 4, 9, 3, True, "f32")):
        q = g.f32(normal(n, nq, 2, kdim))
        keys = g.Weight(normal(2 * heads, nk, kdim, rank, std=0.5), dt)
        inputs, fparams, gain, eps = [q, keys], [], None, 0.0
        if norm:
            gw = g.Weight(normal(kdim, std=0.3, mean=1.0), "f16" if dt == "bf16" else "f32")
            inputs.append(gw)
            gain, eps = gw.value, g.f32p(1e-5)
            fparams = [eps]
        g.case(f"pk_score_{label}", "pk_score", inputs, pk_score(q.value, keys.value, heads, share, gain, eps),
               iparams=[heads, share], fparams=fparams)

    # PK_TOPK: additive (S alone, Rk = 1) and Tucker (u, v, 1..5 cores).
    S = g.f32(normal(2, 4, 9, 1))
    g.case("pk_topk_additive", "pk_topk", [S], pk_topk(S.value, 4, 7), iparams=[4, 7])
    S = g.f32(grid(2, 2, 12, 1))  # ties in both stages: lower index, then lower pair index first
    g.case("pk_topk_additive_ties", "pk_topk", [S], pk_topk(S.value, 5, 25), iparams=[5, 25])
    for label, n, heads, nk, rank, n_cores, m, k, dt in (
            ("rank2_c2_bf16", 2, 2, 10, 2, 2, 4, 9, "bf16"),
            ("rank3_c1_f16", 1, 1, 8, 3, 1, 5, 25, "f16"),
            ("rank1_c3_f32", 3, 1, 6, 1, 3, 3, 4, "f32")):
        S = g.f32(normal(n, 2 * heads, nk, rank))
        u, v = g.Weight(normal(heads, rank), dt), g.Weight(normal(heads, rank), dt)
        cores = [g.Weight(normal(heads, rank, rank), dt) for _ in range(n_cores)]
        g.case(f"pk_topk_tucker_{label}", "pk_topk", [S, u, v] + cores,
               pk_topk(S.value, m, k, u.value, v.value, [c.value for c in cores]), iparams=[m, k])

    # PK_PAIR_SCORES: additive (one column) and per-core Tucker scores; repeated and edge indices.
    S = g.f32(normal(2, 4, 5, 1))
    idx = g.i32(np.array([[[24, 0, 7], [3, 3, 12]], [[20, 4, 24], [0, 1, 18]]]))
    g.case("pk_pair_scores_additive", "pk_pair_scores", [S, idx], pk_pair_scores(S.value, idx.value))
    for label, heads, nk, rank, n_cores, dt in (("rank2_c2_bf16", 2, 6, 2, 2, "bf16"), ("rank3_c1_f16", 1, 4, 3, 1, "f16")):
        S = g.f32(normal(3, 2 * heads, nk, rank))
        idx = g.i32(RNG.integers(0, nk * nk, size=(3, heads, 5)))
        idx.stored[0, 0, :2] = [nk * nk - 1, 0]
        idx.value = idx.stored.astype(np.int64)
        cores = [g.Weight(normal(heads, rank, rank), dt) for _ in range(n_cores)]
        g.case(f"pk_pair_scores_tucker_{label}", "pk_pair_scores", [S, idx] + cores,
               pk_pair_scores(S.value, idx.value, [c.value for c in cores]))
