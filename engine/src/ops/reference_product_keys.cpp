// References of product-key scoring and two-stage top-k (PK_SCORE, PK_TOPK, PK_PAIR_SCORES),
// written as the op table in mnemo_abi.h states them: plain loops, double accumulation.
//
// Rounding choices that decide PK_TOPK's indices (backends must match them bit for bit):
//  - stage 1 ranks s1, s2 as f32 values (each formed in double, then rounded once), so stage 1
//    is exactly ARGTOPK applied to an f32 score vector, as a model holding its scores in f32;
//  - stage 2 ranks the pair scores t(p) as doubles: for additive scoring t = s1 + s2 of two f32
//    values, for Tucker the naive triple sum below. Double keeps distinct pair scores distinct;
//    in f32, near-equal pairs among the m*m would round together and the tie rule would decide.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/reference_detail.hpp"

namespace mnemo::reference {
namespace {

// ARGTOPK's order for the double pair scores: descending, NaN below every number (a stable
// sort keeps equal scores in pair order, so ties go to the lower pair index).
bool ranks_before_d(double a, double b) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
    return a > b;
}

// The m best of `s` under ARGTOPK's rules (value descending, NaN last, ties to the lower index).
std::vector<int64_t> top_m(const std::vector<float>& s, int64_t m) {
    std::vector<int64_t> order(s.size());
    for (size_t j = 0; j < s.size(); ++j) order[j] = static_cast<int64_t>(j);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return ranks_before(s[static_cast<size_t>(a)], s[static_cast<size_t>(b)]); });
    order.resize(static_cast<size_t>(m));
    return order;
}

// sum_r1 sum_r2 S1[i, r1] core[h, r1, r2] S2[j, r2] for one core, in double.
double bilinear(const In& sc, int64_t row1, int64_t row2, const In& core, int64_t h, int64_t rank) {
    double acc = 0.0;
    for (int64_t r1 = 0; r1 < rank; ++r1)
        for (int64_t r2 = 0; r2 < rank; ++r2)
            acc += static_cast<double>(sc.f(row1 * rank + r1)) * static_cast<double>(core.f((h * rank + r1) * rank + r2)) *
                   static_cast<double>(sc.f(row2 * rank + r2));
    return acc;
}

}  // namespace

void pk_score(const Ctx& c) {
    const In& q = c.in[0];
    const In& keys = c.in[1];
    const bool normed = c.in.size() == 3;
    const int64_t n_tok = q.dim(0), n_q = q.dim(1), kdim = q.dim(3);
    const int64_t heads = c.node.iparams[0], share = c.node.iparams[1];
    const int64_t nk = keys.dim(1), rank = keys.dim(3);
    const double eps = normed ? static_cast<double>(c.node.fparams[0]) : 0.0;
    for (int64_t n = 0; n < n_tok; ++n)
        for (int64_t b = 0; b < 2 * heads; ++b) {
            const int64_t h = b / 2, side = b % 2;
            const int64_t q0 = ((n * n_q + h / share) * 2 + side) * kdim;
            for (int64_t j = 0; j < nk; ++j)
                for (int64_t r = 0; r < rank; ++r) {
                    auto key = [&](int64_t d) { return static_cast<double>(keys.f(((b * nk + j) * kdim + d) * rank + r)); };
                    double scale = 1.0;  // 1 / RMS of this key over d
                    if (normed) {
                        double ss = 0.0;
                        for (int64_t d = 0; d < kdim; ++d) ss += key(d) * key(d);
                        scale = 1.0 / std::sqrt(ss / static_cast<double>(kdim) + eps);
                    }
                    double acc = 0.0;
                    for (int64_t d = 0; d < kdim; ++d) {
                        const double kn = normed ? key(d) * scale * static_cast<double>(c.in[2].f(d)) : key(d);
                        acc += static_cast<double>(q.f(q0 + d)) * kn;
                    }
                    c.out[((n * 2 * heads + b) * nk + j) * rank + r] = static_cast<float>(acc);
                }
        }
}

void pk_topk(const Ctx& c) {
    const In& sc = c.in[0];
    const int64_t n_tok = sc.dim(0), heads = sc.dim(1) / 2, nk = sc.dim(2), rank = sc.dim(3);
    const int64_t m = c.node.iparams[0], k = c.node.iparams[1];
    const bool tucker = c.in.size() > 1;
    auto* out = reinterpret_cast<int32_t*>(c.out);
    std::vector<float> s1(static_cast<size_t>(nk)), s2(static_cast<size_t>(nk));
    std::vector<double> t(static_cast<size_t>(m * m));
    std::vector<int64_t> order(static_cast<size_t>(m * m));
    for (int64_t n = 0; n < n_tok; ++n)
        for (int64_t h = 0; h < heads; ++h) {
            const int64_t base1 = (n * 2 * heads + 2 * h) * nk, base2 = base1 + nk;  // first row of S1, S2
            // Stage 1: the rank-1 approximate scores of each side, ranked as f32.
            for (int64_t j = 0; j < nk; ++j) {
                if (!tucker) {
                    s1[static_cast<size_t>(j)] = sc.f(base1 + j);
                    s2[static_cast<size_t>(j)] = sc.f(base2 + j);
                    continue;
                }
                double a1 = 0.0, a2 = 0.0;
                for (int64_t r = 0; r < rank; ++r) {
                    a1 += static_cast<double>(c.in[1].f(h * rank + r)) * static_cast<double>(sc.f((base1 + j) * rank + r));
                    a2 += static_cast<double>(c.in[2].f(h * rank + r)) * static_cast<double>(sc.f((base2 + j) * rank + r));
                }
                s1[static_cast<size_t>(j)] = static_cast<float>(a1);
                s2[static_cast<size_t>(j)] = static_cast<float>(a2);
            }
            const std::vector<int64_t> i1 = top_m(s1, m), i2 = top_m(s2, m);
            // Stage 2: every pair p = a*m + b of the two candidate lists.
            for (int64_t a = 0; a < m; ++a)
                for (int64_t b = 0; b < m; ++b) {
                    const int64_t i = i1[static_cast<size_t>(a)], j = i2[static_cast<size_t>(b)];
                    double v = 0.0;
                    if (!tucker) {
                        v = static_cast<double>(s1[static_cast<size_t>(i)]) + static_cast<double>(s2[static_cast<size_t>(j)]);
                    } else {
                        for (size_t core = 3; core < c.in.size(); ++core) v += bilinear(sc, base1 + i, base2 + j, c.in[core], h, rank);
                    }
                    t[static_cast<size_t>(a * m + b)] = v;
                    order[static_cast<size_t>(a * m + b)] = a * m + b;
                }
            std::stable_sort(order.begin(), order.end(),
                             [&](int64_t x, int64_t y) { return ranks_before_d(t[static_cast<size_t>(x)], t[static_cast<size_t>(y)]); });
            for (int64_t q = 0; q < k; ++q) {
                const int64_t p = order[static_cast<size_t>(q)];
                out[(n * heads + h) * k + q] = static_cast<int32_t>(i1[static_cast<size_t>(p / m)] * nk + i2[static_cast<size_t>(p % m)]);
            }
        }
}

void pk_pair_scores(const Ctx& c) {
    const In& sc = c.in[0];
    const In& idx = c.in[1];
    const int64_t n_tok = sc.dim(0), heads = sc.dim(1) / 2, nk = sc.dim(2), rank = sc.dim(3), k = idx.dim(2);
    const int64_t cores = static_cast<int64_t>(c.in.size()) - 2, width = cores == 0 ? 1 : cores;
    for (int64_t e = 0; e < idx.numel(); ++e)
        if (idx.i32(e) < 0 || nk == 0 || idx.i32(e) / nk >= nk)  // i.e. >= Nk*Nk, which need not fit in an int64
            c.fail("pair index [" + std::to_string(e / (heads * k)) + ", " + std::to_string(e / k % heads) + ", " +
                   std::to_string(e % k) + "] is " + std::to_string(idx.i32(e)) + ", outside 0..Nk*Nk-1 (Nk = " +
                   std::to_string(nk) + " sub-keys per side)");
    for (int64_t n = 0; n < n_tok; ++n)
        for (int64_t h = 0; h < heads; ++h) {
            const int64_t base1 = (n * 2 * heads + 2 * h) * nk, base2 = base1 + nk;
            for (int64_t q = 0; q < k; ++q) {
                const int64_t e = (n * heads + h) * k + q, i = idx.i32(e) / nk, j = idx.i32(e) % nk;
                float* o = c.out + e * width;
                if (cores == 0) {
                    o[0] = static_cast<float>(static_cast<double>(sc.f(base1 + i)) + static_cast<double>(sc.f(base2 + j)));
                    continue;
                }
                for (int64_t core = 0; core < cores; ++core)
                    o[core] = static_cast<float>(bilinear(sc, base1 + i, base2 + j, c.in[static_cast<size_t>(2 + core)], h, rank));
            }
        }
}

}  // namespace mnemo::reference
