// PK_TOPK, the two-stage top-k over product keys (product_keys family).
//
// PK_TOPK must return exactly the reference's indices (engine/src/ops/reference_product_keys.cpp),
// so it ranks integer keys under the same order rules: stage 1 ranks s1, s2 as f32 (formed in
// double like the reference: u[r]*S[r] is exact in double, so the sums round identically);
// stage 2 ranks the pair scores in double. Additive pair scores s1+s2 are bit-identical to the
// reference's. Tucker pair scores are re-associated (S1[i] (sum_c core_c) precomputed per row,
// then an Rk-dot per pair), which moves a double result by a few 1e-16 relative: the order can only
// differ from the reference's where two distinct pair scores agree to ~15 digits, far below the
// spacing of f32 inputs (f32 arithmetic, 6e-8 relative, would flip real near-ties among m*m pairs).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "arch/x86/simd_avx2.hpp"
#include "dot.hpp"
#include "kernel_api.hpp"
#include "product_keys.hpp"
#include "scalar_math.hpp"
#include "topk_order.hpp"

namespace mnemo_cpu {
namespace {

// ================================================================== PK_TOPK

struct Pair {
    double t;     // the pair score
    int64_t key;  // topk::rank_key(t)
    int64_t p;    // pair index a*m + b
};

// Orders: larger score first, then the lower index (strict: no two items are equal).
inline bool pair_before(const Pair& x, const Pair& y) { return x.key != y.key ? x.key > y.key : x.p < y.p; }
inline bool packed_before(const int64_t& x, const int64_t& y) { return x > y; }

// True when a newcomer of value v ranks strictly above the kept value `worst`. Items arrive in
// increasing index order, so a newcomer that ties with a kept item ranks after it: strict '>'
// (-0.0 and +0.0 compare equal, and a NaN newcomer compares false); only a NaN worst needs the
// rank rule, under which any number ranks above NaN. One compare rejects most newcomers.
inline bool beats(double v, double worst) { return v > worst || (std::isnan(worst) && !std::isnan(v)); }

// The `cap` best items offered, in a binary heap whose root is the worst kept item (parents rank
// after their children). A full heap replaces its root and sifts it down: O(log cap) per
// admission, also for the large m and k the op allows (an insertion-sorted list is O(cap)).
template <class T, bool (*Before)(const T&, const T&)>
struct BestOf {
    T* h;
    int64_t cap;
    int64_t size = 0;

    bool full() const { return size == cap; }
    const T& worst() const { return h[0]; }
    // Adds x; when full, x must rank before worst().
    void add(const T& x) {
        if (size < cap) {
            int64_t i = size++;
            while (i > 0 && Before(h[(i - 1) / 2], x)) {
                h[i] = h[(i - 1) / 2];
                i = (i - 1) / 2;
            }
            h[i] = x;
            return;
        }
        int64_t i = 0;
        for (;;) {
            int64_t c = 2 * i + 1;
            if (c >= size) break;
            if (c + 1 < size && Before(h[c], h[c + 1])) ++c;  // the worse child
            if (!Before(x, h[c])) break;
            h[i] = h[c];
            i = c;
        }
        h[i] = x;
    }
    void sort_best_first() { std::sort(h, h + size, [](const T& x, const T& y) { return Before(x, y); }); }
};

// PK_TOPK's per-thread scratch, carved from one float block (each part 8-byte aligned).
struct TopkScratch {
    float* s1;      // [Nk] stage-1 scores of the row side (Tucker: u . S1)
    float* s2;      // [Nk] of the column side
    int64_t* heap;  // [m] stage-1 selection (packed ranks)
    int64_t* i1;    // [m] row candidates, best first
    int64_t* i2;    // [m] column candidates
    double* w;      // [m, Rk]  S1[I1[a]] (sum_c core_c)
    double* v;      // [Rk, m]  S2[I2[b]], rank-major so a row's m pair scores are one vector loop
    double* t;      // [m]      one row's pair scores
    double* csum;   // [Rk, Rk] sum of the cores
    double* uv;     // [2, Rk]  this head's u and v
    Pair* pairs;    // [k] stage-2 selection
};

size_t topk_scratch_bytes(int64_t nk, int64_t m, int64_t k, int64_t rank) {
    size_t bytes = (2 * static_cast<size_t>(nk) * sizeof(float) + 7) / 8 * 8;
    bytes += 3 * static_cast<size_t>(m) * sizeof(int64_t);
    bytes += (2 * static_cast<size_t>(m * rank) + static_cast<size_t>(m + rank * rank + 2 * rank)) * sizeof(double);
    bytes += static_cast<size_t>(k) * sizeof(Pair);
    return bytes;
}

TopkScratch carve_topk(float* base, int64_t nk, int64_t m, int64_t rank) {
    TopkScratch s{};
    char* c = reinterpret_cast<char*>(base);
    s.s1 = reinterpret_cast<float*>(c);
    s.s2 = s.s1 + nk;
    c += (2 * static_cast<size_t>(nk) * sizeof(float) + 7) / 8 * 8;
    s.heap = reinterpret_cast<int64_t*>(c);
    s.i1 = s.heap + m;
    s.i2 = s.i1 + m;
    s.w = reinterpret_cast<double*>(s.i2 + m);
    s.v = s.w + m * rank;
    s.t = s.v + m * rank;
    s.csum = s.t + m;
    s.uv = s.csum + rank * rank;
    s.pairs = reinterpret_cast<Pair*>(s.uv + 2 * rank);
    return s;
}

// Stage 1 of one side: the m best of s[0..nk) in ARGTOPK order, best first, into idx.
void select_side(const float* s, int64_t nk, int64_t m, int64_t* heap, int64_t* idx) {
    BestOf<int64_t, packed_before> best{heap, m};
    int64_t j = 0;
    for (; j < nk && !best.full(); ++j) best.add(topk::packed_rank(s[j], j));
    float worst = s[topk::packed_index(best.worst())];
    bool worst_nan = std::isnan(worst);
    for (; j < nk; ++j) {
        const float x = s[j];
        if (!(x > worst) && !(worst_nan && x == x)) continue;  // beats(), with isnan(worst) kept
        best.add(topk::packed_rank(x, j));
        worst = s[topk::packed_index(best.worst())];
        worst_nan = std::isnan(worst);
    }
    best.sort_best_first();
    for (int64_t a = 0; a < m; ++a) idx[a] = topk::packed_index(heap[a]);
}

struct TopkArgs {
    const float* sc;
    const void* u;
    const void* v;
    const void* cores[5];
    int32_t u_dt, v_dt, core_dt[5];
    int64_t n_cores;
    int32_t* out;
    int64_t n, heads, nk, rank, m, k;
};

TopkArgs topk_args(const PreparedNode& p) {
    const mnemo_node& nd = p.node;
    TopkArgs a{};
    a.sc = static_cast<const float*>(p.in[0]);
    a.n = nd.inputs[0].shape[0];
    a.heads = nd.inputs[0].shape[1] / 2;
    a.nk = nd.inputs[0].shape[2];
    a.rank = nd.inputs[0].shape[3];
    a.m = nd.iparams[0];
    a.k = nd.iparams[1];
    a.out = static_cast<int32_t*>(p.out);
    if (nd.n_inputs > 1) {
        a.u = p.in[1];
        a.v = p.in[2];
        a.u_dt = nd.inputs[1].dtype;
        a.v_dt = nd.inputs[2].dtype;
        a.n_cores = nd.n_inputs - 3;
        for (int64_t c = 0; c < a.n_cores; ++c) {
            a.cores[c] = p.in[3 + c];
            a.core_dt[c] = nd.inputs[3 + c].dtype;
        }
    }
    return a;
}

using PairTop = BestOf<Pair, pair_before>;

// Offers pair (t, p); false when it ranks after all k kept pairs.
inline bool offer_pair(PairTop& top, double t, int64_t p) {
    if (top.full() && !beats(t, top.worst().t)) return false;  // most pairs stop here
    top.add(Pair{t, topk::rank_key(t), p});
    return true;
}

// Stage 2, additive: t = s1[i] + s2[j] with both candidate lists sorted best first, so within a
// row a the score never increases with b, and row a's best (b = 0) never beats row a-1's. Once a
// pair is rejected, the rest of its row is too (equal scores lose on the pair index, and the
// worst kept score only rises), and if that happens at b = 0 every later row is. This holds for
// finite scores only (inf + -inf is NaN), so any non-finite candidate disables the early exits.
void pairs_additive(const TopkArgs& a, const float* s1, const float* s2, const TopkScratch& s, PairTop& top) {
    bool finite = true;
    for (int64_t x = 0; x < a.m; ++x) finite = finite && std::isfinite(s1[s.i1[x]]) && std::isfinite(s2[s.i2[x]]);
    for (int64_t x = 0; x < a.m; ++x) {
        const double row = static_cast<double>(s1[s.i1[x]]);
        for (int64_t y = 0; y < a.m; ++y) {
            if (offer_pair(top, row + static_cast<double>(s2[s.i2[y]]), x * a.m + y) || !finite) continue;
            if (y == 0) return;
            break;
        }
    }
}

// Stage 2, Tucker: sum_c S1[i] core_c S2[j]^T = (S1[i] C) . S2[j] with C = sum_c core_c, all in double.
void pairs_tucker(const TopkArgs& a, int64_t n, int64_t h, const TopkScratch& s, PairTop& top) {
    const int64_t rk = a.rank;
    for (int64_t e = 0; e < rk * rk; ++e) {
        double c = 0.0;
        for (int64_t core = 0; core < a.n_cores; ++core)
            c += static_cast<double>(load_weight(a.cores[core], a.core_dt[core], static_cast<size_t>(h * rk * rk + e)));
        s.csum[e] = c;
    }
    const float* s1 = a.sc + ((n * 2 * a.heads + 2 * h) * a.nk) * rk;
    const float* s2 = s1 + a.nk * rk;
    for (int64_t x = 0; x < a.m; ++x) {
        const float* r1 = s1 + s.i1[x] * rk;
        const float* r2 = s2 + s.i2[x] * rk;
        for (int64_t c2 = 0; c2 < rk; ++c2) {
            double acc = 0.0;
            for (int64_t c1 = 0; c1 < rk; ++c1) acc += static_cast<double>(r1[c1]) * s.csum[c1 * rk + c2];
            s.w[x * rk + c2] = acc;
            s.v[c2 * a.m + x] = static_cast<double>(r2[c2]);
        }
    }
    // Row by row: the m scores first (a branch-free loop over b), then the selection.
    for (int64_t x = 0; x < a.m; ++x) {
        const double* wx = s.w + x * rk;
        for (int64_t y = 0; y < a.m; ++y) s.t[y] = 0.0;
        for (int64_t r = 0; r < rk; ++r) {
            const double wr = wx[r];
            const double* vr = s.v + r * a.m;
            for (int64_t y = 0; y < a.m; ++y) s.t[y] += wr * vr[y];
        }
        for (int64_t y = 0; y < a.m; ++y) offer_pair(top, s.t[y], x * a.m + y);
    }
}

// Tasks are (token, head) rows; each runs both stages alone in its thread's scratch.
void pk_topk_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const TopkArgs a = topk_args(p);
    const TopkScratch s = carve_topk(call.scratch + static_cast<size_t>(ith) * call.scratch_stride, a.nk, a.m, a.rank);
    int64_t r0, r1;
    split_range(a.n * a.heads, ith, nth, 1, &r0, &r1);
    for (int64_t row = r0; row < r1; ++row) {
        const int64_t n = row / a.heads, h = row % a.heads;
        const float* S1 = a.sc + ((n * 2 * a.heads + 2 * h) * a.nk) * a.rank;
        const float* S2 = S1 + a.nk * a.rank;
        const float* s1 = S1;  // additive: rank 1, the scores themselves
        const float* s2 = S2;
        if (a.u) {
            // s = sum_r u[r] S[j, r] in double, rounded once to f32, exactly as the reference.
            const int64_t rk = a.rank;
            double* u = s.uv;
            double* v = s.uv + rk;
            for (int64_t r = 0; r < rk; ++r) {
                u[r] = static_cast<double>(load_weight(a.u, a.u_dt, static_cast<size_t>(h * rk + r)));
                v[r] = static_cast<double>(load_weight(a.v, a.v_dt, static_cast<size_t>(h * rk + r)));
            }
            for (int64_t j = 0; j < a.nk; ++j) {
                double x1 = 0.0, x2 = 0.0;
                for (int64_t r = 0; r < rk; ++r) {
                    x1 += u[r] * static_cast<double>(S1[j * rk + r]);
                    x2 += v[r] * static_cast<double>(S2[j * rk + r]);
                }
                s.s1[j] = static_cast<float>(x1);
                s.s2[j] = static_cast<float>(x2);
            }
            s1 = s.s1;
            s2 = s.s2;
        }
        select_side(s1, a.nk, a.m, s.heap, s.i1);
        select_side(s2, a.nk, a.m, s.heap, s.i2);
        PairTop top{s.pairs, a.k};
        if (a.n_cores == 0) pairs_additive(a, s1, s2, s, top);
        else pairs_tucker(a, n, h, s, top);
        top.sort_best_first();
        int32_t* out = a.out + row * a.k;
        for (int64_t q = 0; q < a.k; ++q)
            out[q] = static_cast<int32_t>(s.i1[s.pairs[q].p / a.m] * a.nk + s.i2[s.pairs[q].p % a.m]);
    }
}

}  // namespace

KernelFn select_pk_topk(PreparedNode& p, Isa) {
    const mnemo_node& nd = p.node;
    const mnemo_tensor& s = nd.inputs[0];
    const size_t bytes = topk_scratch_bytes(s.shape[2], nd.iparams[0], nd.iparams[1], s.shape[3]);
    p.scratch_floats = (bytes + sizeof(float) - 1) / sizeof(float) + 2;  // + 8-byte alignment slack
    return pk_topk_kernel;
}

// Every score is ranked, then m*m pairs per (token, head).
double pk_topk_work(const mnemo_node& n) {
    const double m = static_cast<double>(n.iparams[0]);
    return static_cast<double>(numel(n.inputs[0])) + static_cast<double>(numel(n.output)) / static_cast<double>(n.iparams[1]) * m * m;
}

}  // namespace mnemo_cpu
