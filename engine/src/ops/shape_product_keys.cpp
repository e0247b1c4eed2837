// Shape rules of the product-key family: PK_SCORE, PK_TOPK, PK_PAIR_SCORES.
#include <climits>

#include "ops/shape_rule.hpp"

namespace mnemo::shape {
namespace {

struct Scores {
    int64_t n, heads, nk, rank, cores;
};

// What PK_TOPK and PK_PAIR_SCORES share: S [N, 2H, Nk, Rk], then (PK_TOPK only) u and v [H, Rk],
// then 0..5 Tucker cores [H, Rk, Rk] from input first_core on.
Scores scores_and_cores(const Rule& r, size_t first_core) {
    const TensorShape& sc = r.f32(0, 4, 4, "sub-key scores [N, 2H, Nk, Rk]");
    if (sc.shape[1] % 2 != 0) r.fail_input(0, "an even second dimension (row and column per head)");
    const Scores s{sc.shape[0], sc.shape[1] / 2, sc.shape[2], sc.shape[3],
                   r.inputs() > first_core ? static_cast<int64_t>(r.inputs() - first_core) : 0};
    if (r.op() == MNEMO_OP_PK_TOPK && (r.inputs() == 2 || r.inputs() == 3))
        r.fail("Tucker scoring takes S, u, v and 1..5 cores; additive scoring takes S alone");
    if (r.op() == MNEMO_OP_PK_TOPK && r.inputs() > 1)
        for (size_t i = 1; i < 3; ++i) {
            const TensorShape& uv = r.weight(i, 2, i == 1 ? "row rank-1 vector u [H, Rk]" : "column rank-1 vector v [H, Rk]");
            if (uv.shape[0] != s.heads || uv.shape[1] != s.rank)
                r.fail_input(i, "[" + std::to_string(s.heads) + ", " + std::to_string(s.rank) + "]");
        }
    for (size_t i = first_core; i < r.inputs(); ++i) {
        const TensorShape& core = r.weight(i, 3, "Tucker core [H, Rk, Rk]");
        if (core.shape[0] != s.heads || core.shape[1] != s.rank || core.shape[2] != s.rank)
            r.fail_input(i, "core [" + std::to_string(s.heads) + ", " + std::to_string(s.rank) + ", " + std::to_string(s.rank) + "]");
    }
    if (s.cores == 0 && s.rank != 1)
        r.fail("additive scoring needs rank-1 scores; rank " + std::to_string(s.rank) + " needs Tucker cores");
    return s;
}

}  // namespace

TensorShape shape_pk_score(const Rule& r) {
    r.need_i(2);
    const TensorShape& q = r.f32(0, 4, 4, "queries [N, Q, 2, K]");
    const TensorShape& keys = r.weight(1, 4, "sub-keys [2H, Nk, K, Rk]");
    const int64_t heads = r.i(0), share = r.i(1);
    if (heads < 1 || share < 1)
        r.fail("heads " + std::to_string(heads) + " and heads per query " + std::to_string(share) + " must be >= 1");
    if (q.shape[2] != 2) r.fail_input(0, "queries [N, Q, 2, K] (2 = row and column halves)");
    if (keys.shape[0] != 2 * heads)
        r.fail("sub-keys " + keys.str() + " must hold 2H = " + std::to_string(2 * heads) + " banks for H = " + std::to_string(heads) +
               " heads");
    if (keys.shape[2] != q.shape[3])
        r.fail("sub-key dim " + std::to_string(keys.shape[2]) + " != query half dim " + std::to_string(q.shape[3]));
    if (q.shape[1] * share < heads)
        r.fail(std::to_string(q.shape[1]) + " queries shared by " + std::to_string(share) + " heads each cannot serve " +
               std::to_string(heads) + " heads");
    if (r.inputs() == 3) {
        r.need_f(1);
        const TensorShape& g = r.weight(2, 1, "key-norm gain [K]");
        if (g.shape[0] != keys.shape[2]) r.fail_input(2, "length " + std::to_string(keys.shape[2]));
        if (!(r.f(0) >= 0.0f)) r.fail("eps must be >= 0");
    }
    TensorShape out;
    out.ndim = 4;
    out.shape[0] = q.shape[0];
    out.shape[1] = 2 * heads;
    out.shape[2] = keys.shape[1];
    out.shape[3] = keys.shape[3];
    return out;
}

TensorShape shape_pk_topk(const Rule& r) {
    const Scores s = scores_and_cores(r, 3);
    r.need_i(2);
    const int64_t m = r.i(0), k = r.i(1);
    // Nk first (by division: Nk*Nk could overflow), so that m*m below cannot.
    if (s.nk > 0 && s.nk > INT32_MAX / s.nk)
        r.fail("Nk*Nk virtual keys (Nk = " + std::to_string(s.nk) + ") exceed i32 indices");
    if (m < 1 || m > s.nk)
        r.fail("candidates per side m = " + std::to_string(m) + " must be in 1.." + std::to_string(s.nk) + " (sub-keys per side)");
    if (k < 1 || k > m * m) r.fail("k = " + std::to_string(k) + " must be in 1..m*m = " + std::to_string(m * m));
    TensorShape out;
    out.ndim = 3;
    out.dtype = DType::I32;
    out.shape[0] = s.n;
    out.shape[1] = s.heads;
    out.shape[2] = k;
    return out;
}

TensorShape shape_pk_pair_scores(const Rule& r) {
    const Scores s = scores_and_cores(r, 2);
    const TensorShape& idx = r.of_dtype(1, DType::I32, "pair indices [N, H, k]");
    if (idx.ndim != 3 || idx.shape[0] != s.n || idx.shape[1] != s.heads)
        r.fail_input(1, "i32 pair indices [" + std::to_string(s.n) + ", " + std::to_string(s.heads) + ", k]");
    TensorShape out;
    out.ndim = 4;
    out.shape[0] = s.n;
    out.shape[1] = s.heads;
    out.shape[2] = idx.shape[2];
    out.shape[3] = s.cores == 0 ? 1 : s.cores;
    return out;
}

}  // namespace mnemo::shape
