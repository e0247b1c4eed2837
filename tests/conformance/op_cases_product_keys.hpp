// Conformance cases of PK_SCORE, PK_TOPK, PK_PAIR_SCORES. Included by op_cases.hpp after its helpers.
//
// Shapes follow the models that use these ops: UltraMem V1 (H = 2 heads sharing one query,
// Nk = 1616, K = 192, Tucker rank 2 with 2 cores, knn 80), UltraMemV2 (H = 1, Nk = 256, K = 512,
// knn 32) and PKM (4 heads with their own queries, Nk = 128..512, K = 64, additive, knn 32), at
// decode (N = 1), prefill (N up to 32) and batched steps (N up to 300), plus odd sizes that leave every
// vector tail non-empty, and ranks that the vector kernels do not specialise (3, 5).
//
// PK_TOPK's indices are compared exactly. Random f32 scores make exact ties between candidates
// vanishingly rare, and where one happens additive scoring still agrees bit for bit (backends
// add the same two floats in double); the "_ties" cases instead make ties certain with scores on
// a 0.5 grid, where every product and sum below is exact in double, so the tie rules themselves
// (lower index in stage 1, lower pair index in stage 2) are what is tested.
#pragma once

#include "conformance/op_case.hpp"

namespace mnemo::conformance::detail {

// Scores on a 0.5 grid in -3..3 (with -0.0 for some zeros): many exact ties.
inline std::vector<float> grid_values(int64_t count, CaseRng& rng) {
    std::vector<float> v;
    for (int64_t i = 0; i < count; ++i) {
        const float x = std::round(rng.normalish() * 2.0f) * 0.5f;
        v.push_back(x == 0.0f && i % 2 ? -0.0f : x);
    }
    return v;
}

inline void pk_score_cases(std::vector<OpCase>& out) {
    struct Cfg {
        int64_t n, q, heads, share, nk, kdim, rank;
        bool norm;
        DType dt;
    };
    const Cfg cfgs[] = {
        {1, 1, 2, 2, 1616, 192, 2, true, DType::BF16},   // UltraMem V1 decode
        {1, 1, 2, 2, 1616, 192, 2, false, DType::F32},
        {1, 1, 1, 1, 256, 512, 2, true, DType::F16},     // UltraMemV2 decode
        {8, 1, 1, 1, 256, 128, 2, true, DType::F32},
        {32, 1, 2, 2, 256, 64, 2, true, DType::BF16},    // prefill
        {1, 4, 4, 1, 512, 64, 1, false, DType::F32},     // PKM decode
        {32, 4, 4, 1, 128, 64, 1, false, DType::F16},    // PKM prefill
        {3, 4, 4, 1, 512, 64, 1, true, DType::BF16},
        {7, 1, 2, 2, 37, 17, 2, true, DType::F32},       // odd sizes: K*Rk = 34, a 2-element tail
        {1, 1, 2, 2, 37, 17, 2, true, DType::F32},       // the same at decode (one-token key-norm path)
        {1, 4, 4, 1, 13, 11, 1, true, DType::F16},       // decode, key-norm, rank 1, odd sizes
        {5, 2, 3, 2, 19, 13, 1, true, DType::F16},       // H = 3 over 2 shared queries
        {2, 3, 3, 1, 11, 5, 1, false, DType::BF16},      // K below one vector
        {3, 1, 1, 1, 9, 6, 3, true, DType::F32},         // rank 3: no lane-per-rank layout
        {2, 1, 2, 2, 23, 7, 5, false, DType::BF16},      // rank 5
        {2, 1, 1, 1, 40, 16, 4, true, DType::BF16},      // rank 4
        {1, 1, 1, 1, 3, 9, 8, false, DType::F16},        // rank 8, fewer keys than one tile
        {32, 1, 1, 1, 8, 64, 1, true, DType::F32},       // few keys, many tokens: tokens split over tasks
        {20, 1, 1, 1, 24, 1024, 2, true, DType::F32},    // queries in two chunks (20 x 2048 floats)
        // Many tokens (N >= 16): packed key blocks of 32; Nk not a multiple of the block
        {256, 1, 2, 2, 830, 128, 2, true, DType::F32},   // fig1b UltraMem at batch 256
        {64, 2, 3, 2, 45, 19, 3, true, DType::BF16},     // rank 3, K tail, H = 3 over 2 queries
        {300, 4, 4, 1, 70, 64, 1, false, DType::F16},    // PKM, two token groups (more than 256)
    };
    for (const Cfg& g : cfgs) {
        OpCase c;
        c.op = MNEMO_OP_PK_SCORE;
        c.name = "pk_score_N" + std::to_string(g.n) + "_Q" + std::to_string(g.q) + "_H" + std::to_string(g.heads) + "_s" +
                 std::to_string(g.share) + "_Nk" + std::to_string(g.nk) + "_K" + std::to_string(g.kdim) + "_Rk" +
                 std::to_string(g.rank) + (g.norm ? "_norm" : "") + "_" + dt_name(g.dt);
        c.inputs = {f32({g.n, g.q, 2, g.kdim}), weight(g.dt, {2 * g.heads, g.nk, g.kdim, g.rank}, 0.2f)};
        if (g.norm) {
            c.inputs.push_back(weight(g.kdim % 2 ? DType::F16 : DType::F32, {g.kdim}, 0.5f, 1.0f));
            c.fparams[0] = 1e-5f;
        }
        c.iparams[0] = g.heads;
        c.iparams[1] = g.share;
        out.push_back(c);
    }
}

// Sizes from the CPU module's former self-test, each in every dtype with the key-norm gain in the
// keys' dtype (the cases above keep it f32 or f16): separate queries per head (share 1) and shared
// ones, K*Rk tails, vector ranks 1, 2, 4, 8 and rank 3, decode with the key norm, and the packed
// many-token path (N = 17, 20).
inline void pk_score_gain_dtypes(std::vector<OpCase>& out) {
    struct Cfg { int64_t n, heads, share, nk, kdim, rank; bool norm; };
    for (DType dt : kWeightTypes)
        for (const Cfg& g : {Cfg{1, 2, 1, 37, 16, 2, true}, Cfg{1, 1, 1, 19, 13, 4, false}, Cfg{3, 2, 2, 40, 8, 1, true},
                             Cfg{5, 1, 1, 33, 24, 8, false}, Cfg{2, 1, 1, 9, 7, 3, true}, Cfg{1, 1, 1, 70, 32, 8, true},
                             Cfg{20, 2, 1, 45, 16, 2, true}, Cfg{17, 1, 1, 70, 9, 1, false}}) {
            const int64_t q = (g.heads + g.share - 1) / g.share;
            OpCase c;
            c.op = MNEMO_OP_PK_SCORE;
            c.name = "pk_score_N" + std::to_string(g.n) + "_Q" + std::to_string(q) + "_H" + std::to_string(g.heads) + "_s" +
                     std::to_string(g.share) + "_Nk" + std::to_string(g.nk) + "_K" + std::to_string(g.kdim) + "_Rk" +
                     std::to_string(g.rank) + (g.norm ? "_norm" : "") + "_" + dt_name(dt) + (g.norm ? "_gain_" + dt_name(dt) : "");
            c.inputs = {f32({g.n, q, 2, g.kdim}), weight(dt, {2 * g.heads, g.nk, g.kdim, g.rank}, 0.5f)};
            if (g.norm) {
                c.inputs.push_back(weight(dt, {g.kdim}, 0.3f, 1.0f));
                c.fparams[0] = 1e-6f;
            }
            c.iparams[0] = g.heads;
            c.iparams[1] = g.share;
            out.push_back(c);
        }
}

inline void pk_topk_cases(std::vector<OpCase>& out) {
    struct Cfg {
        int64_t n, heads, nk, rank, cores, m, k;
        DType dt;  // of u, v and the cores
        bool ties;
    };
    const Cfg cfgs[] = {
        {1, 2, 1616, 2, 2, 80, 80, DType::BF16, false},  // UltraMem V1 decode
        {1, 1, 256, 2, 2, 32, 32, DType::F32, false},    // UltraMemV2 decode
        {16, 1, 256, 2, 2, 16, 64, DType::F16, false},
        {32, 2, 256, 2, 2, 32, 32, DType::F32, false},
        {1, 4, 512, 1, 0, 32, 32, DType::F32, false},    // PKM decode
        {32, 4, 128, 1, 0, 32, 32, DType::F32, false},   // PKM prefill
        {3, 2, 512, 1, 0, 32, 1024, DType::F32, false},  // every pair, fully ordered
        {5, 3, 64, 2, 1, 16, 192, DType::BF16, false},
        {4, 2, 50, 1, 1, 8, 20, DType::F16, false},      // Tucker of rank 1
        {2, 1, 30, 2, 5, 10, 30, DType::F32, false},     // five cores
        {3, 2, 40, 3, 2, 9, 17, DType::BF16, false},     // rank 3
        {2, 2, 37, 1, 0, 7, 49, DType::F32, false},      // odd Nk, k = m*m
        {2, 1, 16, 1, 0, 16, 256, DType::F32, false},    // m = Nk
        {3, 2, 10, 1, 0, 1, 1, DType::F32, false},       // m = k = 1
        {3, 2, 64, 1, 0, 8, 40, DType::F32, true},
        {2, 1, 300, 1, 0, 32, 32, DType::F32, true},
        {3, 2, 48, 2, 2, 8, 64, DType::F32, true},
        // Past the GPU kernels' shared-memory selection: all m*m pairs sorted in scratch.
        {2, 1, 100, 1, 0, 64, 4096, DType::F32, false},  // m = 64, k = m*m
        {2, 2, 96, 2, 2, 64, 2000, DType::BF16, false},  // Tucker, k = 2000
        {2, 1, 80, 1, 0, 40, 1600, DType::F32, true},    // ties, k = m*m
        {3, 2, 200, 2, 1, 64, 64, DType::F16, true},     // Tucker ties, m = 64
    };
    for (const Cfg& g : cfgs) {
        OpCase c;
        c.op = MNEMO_OP_PK_TOPK;
        c.name = "pk_topk_N" + std::to_string(g.n) + "_H" + std::to_string(g.heads) + "_Nk" + std::to_string(g.nk) + "_Rk" +
                 std::to_string(g.rank) + "_C" + std::to_string(g.cores) + "_m" + std::to_string(g.m) + "_k" +
                 std::to_string(g.k) + (g.cores ? "_" + dt_name(g.dt) : std::string()) + (g.ties ? "_ties" : "");
        InputSpec s = f32({g.n, 2 * g.heads, g.nk, g.rank});
        CaseRng rng(name_seed(c.name) ^ 6);
        if (g.ties) s.values = grid_values(spec_shape(s).numel(), rng);
        c.inputs = {s};
        if (g.cores > 0) {
            // Explicit grid values in the ties cases keep u, v and the cores exact too.
            InputSpec u = weight(g.dt, {g.heads, g.rank}), v = weight(g.dt, {g.heads, g.rank});
            if (g.ties) {
                u.values = grid_values(g.heads * g.rank, rng);
                v.values = grid_values(g.heads * g.rank, rng);
            }
            c.inputs.push_back(u);
            c.inputs.push_back(v);
            for (int64_t i = 0; i < g.cores; ++i) {
                InputSpec core = weight(g.dt, {g.heads, g.rank, g.rank});
                if (g.ties) core.values = grid_values(g.heads * g.rank * g.rank, rng);
                c.inputs.push_back(core);
            }
        }
        c.iparams[0] = g.m;
        c.iparams[1] = g.k;
        out.push_back(c);
    }
    {
        // NaN and infinities: NaN ranks last in both stages, inf + -inf pairs are NaN, and the
        // additive early exits (valid for finite scores only) must not skip anything.
        OpCase c;
        c.op = MNEMO_OP_PK_TOPK;
        c.name = "pk_topk_additive_nan_inf";
        InputSpec s = f32({1, 2, 6, 1});
        s.values = {NAN, 1.0f, INFINITY, -INFINITY, 0.5f, NAN, /* columns */ -INFINITY, 2.0f, INFINITY, NAN, -0.0f, 3.0f};
        c.inputs = {s};
        c.iparams[0] = 6;
        c.iparams[1] = 36;
        out.push_back(c);
    }
    {
        // Tucker with NaN, +-0 and subnormals in S and zeros in the weights: NaN stage-1 sums
        // and pair scores rank last, signed zeros tie, subnormal products stay exact. (No
        // infinities: where inf * 0 arises, the reference's term order decides which pairs are
        // NaN, and the CPU kernel's re-associated Tucker sum differs from it there.)
        OpCase c;
        c.op = MNEMO_OP_PK_TOPK;
        c.name = "pk_topk_tucker_nan_zero";
        InputSpec s = f32({1, 2, 8, 2});
        s.values = {NAN, 1.0f, 1e30f, 0.5f, -1e30f, 2.0f, 0.0f, -0.0f, 1e-45f, 3.0f, 1.0f, 1.0f, -2.0f, NAN, 0.5f, -1.0f,
                    /* columns */ 1.0f, -1e30f, 2.0f, 2.0f, -0.0f, 0.0f, 1e-40f, 1.0f, 0.5f, 0.5f, NAN, NAN, -1e-45f, 4.0f, 1.0f, -3.0f};
        InputSpec u = f32({1, 2}), v = f32({1, 2}), core = f32({1, 2, 2});
        u.values = {1.0f, 0.0f};
        v.values = {0.5f, 1.0f};
        core.values = {1.0f, 0.0f, -0.5f, 2.0f};
        c.inputs = {s, u, v, core};
        c.iparams[0] = 8;
        c.iparams[1] = 64;
        out.push_back(c);
    }
    {
        // Scores across the exponent range: s1 + s2 of far-apart magnitudes rounds in double, so
        // pairs tie only under double rounding (a wider or narrower sum would separate them),
        // and repeated scores tie in both stages.
        OpCase c;
        c.op = MNEMO_OP_PK_TOPK;
        c.name = "pk_topk_additive_far_exponents";
        InputSpec s = f32({2, 4, 64, 1});
        CaseRng rng(name_seed(c.name));
        for (int64_t i = 0; i < spec_shape(s).numel(); ++i) {
            const float x = std::ldexp(1.0f + static_cast<float>(rng.below(8)) * 0x1.0p-23f, rng.below(160) - 80);
            s.values.push_back(rng.below(4) == 0 ? -x : x);
        }
        c.inputs = {s};
        c.iparams[0] = 32;
        c.iparams[1] = 300;
        out.push_back(c);
    }
    {
        // Rounding, not just precision: 1 + b with b a few 2^-54 lands below, on and above half
        // an ulp of the double 1 (and of 1 - 2^-53 for negative b), so which pairs tie depends on
        // round-to-nearest-even in the pair sum; any other rounding reorders the rows.
        OpCase c;
        c.op = MNEMO_OP_PK_TOPK;
        c.name = "pk_topk_additive_rounding";
        InputSpec s = f32({1, 2, 16, 1});
        for (int i = 0; i < 16; ++i) s.values.push_back((i % 5 == 4 ? -1.0f : 1.0f) + static_cast<float>(i / 2) * 0x1.0p-23f);
        for (int j = 0; j < 16; ++j) s.values.push_back(static_cast<float>(j % 2 ? -(j / 2) : j / 2) * 0x1.0p-54f);
        c.inputs = {s};
        c.iparams[0] = 16;
        c.iparams[1] = 256;
        out.push_back(c);
    }
    {
        // The same for stage 1 of Tucker scoring: s = u . S = 1 +- a * 2^-24 (or 2^-25) rounds to
        // f32 below, at (ties to even) and above half an ulp, so ties among the candidates and
        // their order depend on rounding the double sum once to nearest-even. Pair scores are
        // exact (small grid values), so stage 2 only orders the ties that stage 1 made.
        OpCase c;
        c.op = MNEMO_OP_PK_TOPK;
        c.name = "pk_topk_tucker_rounding";
        InputSpec s = f32({1, 2, 16, 2});
        for (int side = 0; side < 2; ++side)
            for (int j = 0; j < 16; ++j) {
                s.values.push_back(1.0f);
                s.values.push_back(0.5f + static_cast<float>((j * (side ? 5 : 3)) % 13) * 0.125f);  // 0.5 .. 2
            }
        InputSpec u = f32({1, 2}), v = f32({1, 2}), core = f32({1, 2, 2});
        u.values = {1.0f, 0x1.0p-24f};
        v.values = {1.0f, -0x1.0p-25f};
        core.values = {1.0f, 0.5f, 0.25f, 2.0f};
        c.inputs = {s, u, v, core};
        c.iparams[0] = 12;
        c.iparams[1] = 144;
        out.push_back(c);
    }
}

inline void pk_pair_scores_cases(std::vector<OpCase>& out) {
    struct Cfg {
        int64_t n, heads, nk, rank, cores, k;
        DType dt;
    };
    const Cfg cfgs[] = {
        {1, 2, 1616, 2, 2, 80, DType::BF16},  // UltraMem V1 decode
        {1, 1, 256, 2, 2, 32, DType::F32},    // UltraMemV2 decode
        {32, 1, 256, 2, 2, 32, DType::F16},
        {1, 4, 512, 1, 0, 32, DType::F32},    // PKM (additive)
        {32, 4, 128, 1, 0, 32, DType::F32},
        {7, 3, 33, 2, 1, 5, DType::F16},
        {4, 1, 20, 3, 5, 9, DType::F32},
        {2, 2, 64, 1, 2, 16, DType::BF16},
        {3, 2, 9, 4, 3, 1, DType::F32},
    };
    for (const Cfg& g : cfgs) {
        OpCase c;
        c.op = MNEMO_OP_PK_PAIR_SCORES;
        c.name = "pk_pair_scores_N" + std::to_string(g.n) + "_H" + std::to_string(g.heads) + "_Nk" + std::to_string(g.nk) +
                 "_Rk" + std::to_string(g.rank) + "_C" + std::to_string(g.cores) + "_k" + std::to_string(g.k) +
                 (g.cores ? "_" + dt_name(g.dt) : std::string());
        CaseRng rng(name_seed(c.name) ^ 7);
        const int32_t virt = static_cast<int32_t>(g.nk * g.nk);
        std::vector<int32_t> idx;
        // The last and the first virtual key (addressing off by one), then random pairs with repeats.
        for (int64_t e = 0; e < g.n * g.heads * g.k; ++e)
            idx.push_back(e == 0 ? virt - 1 : e == 1 ? 0 : e % 5 == 4 ? idx.back() : rng.below(virt));
        c.inputs = {f32({g.n, 2 * g.heads, g.nk, g.rank}), i32_shaped({g.n, g.heads, g.k}, idx)};
        for (int64_t i = 0; i < g.cores; ++i) c.inputs.push_back(weight(g.dt, {g.heads, g.rank, g.rank}));
        out.push_back(c);
    }
}

inline void product_keys_cases(std::vector<OpCase>& out) {
    pk_score_cases(out);
    pk_score_gain_dtypes(out);
    pk_topk_cases(out);
    pk_pair_scores_cases(out);
}

}  // namespace mnemo::conformance::detail
