// Conformance cases of the top-k family: ARGTOPK and TAKE_ALONG.
#pragma once

#include "conformance/op_case.hpp"

namespace mnemo::conformance::detail {

// ARGTOPK indices are compared exactly (tests/test_backend_ops.cpp compares i32 outputs bit for
// bit), so the "ties" cases pin down the tie rule: scores rounded to multiples of 0.5 repeat
// constantly, and the first row is all zeros with -0.0 mixed in (equal to +0.0: the answer is
// 0, 1, 2, ...).
inline void argtopk(std::vector<OpCase>& out) {
    for (int64_t d : {1, 7, 64, 1000, 16384}) {
        for (int64_t k : {int64_t{1}, int64_t{4}, int64_t{32}, d}) {
            if (k > d || (k == d && (k == 1 || k == 4 || k == 32))) continue;  // impossible or listed already
            for (bool ties : {false, true}) {
                // Enough rows at D = 1000 and 16384 that the node runs on several threads; a 3-D x at 64.
                const std::vector<int64_t> shape = d == 64 ? std::vector<int64_t>{2, 3, d}
                                                 : d == 1000 ? std::vector<int64_t>{33, d}
                                                 : d == 16384 ? std::vector<int64_t>{3, d} : std::vector<int64_t>{5, d};
                OpCase c;
                c.op = MNEMO_OP_ARGTOPK;
                c.name = "argtopk_" + dims_name(shape) + "_k" + std::to_string(k) + (ties ? "_ties" : "");
                InputSpec x = f32(shape, 2.0f);
                if (ties) {
                    CaseRng rng(name_seed(c.name) ^ 3);
                    const int64_t n = spec_shape(x).numel();
                    for (int64_t i = 0; i < n; ++i) {
                        if (i < d) x.values.push_back(i % 3 == 1 ? -0.0f : 0.0f);
                        else x.values.push_back(std::round(rng.normalish() * 2.0f) * 0.5f);
                    }
                }
                c.inputs = {x};
                c.iparams[0] = k;
                out.push_back(c);
            }
        }
    }
    {
        OpCase c;  // NaN ranks below everything, -inf included; +inf first; ties among the NaNs by index
        c.op = MNEMO_OP_ARGTOPK;
        c.name = "argtopk_2x7_nan_inf";
        InputSpec x = f32({2, 7});
        x.values = {NAN, 1.0f, -INFINITY, NAN, INFINITY, 1.0f, -0.0f,
                    -INFINITY, NAN, -INFINITY, 2.0f, NAN, 0.0f, -0.0f};
        c.inputs = {x};
        c.iparams[0] = 7;
        out.push_back(c);
    }
    // Long rows with every kind of special value on a coarse grid (ties everywhere): NaN, +-inf,
    // +-0, subnormals (whose order only an exact integer key gets right) and numbers spanning
    // the whole exponent range. The sizes reach the selection paths of the GPU kernels: a k that
    // fills half of a shared-memory selection (1024), a row sorted whole in one block (1500),
    // and rows sorted across blocks in scratch (k = 3000 of 5000; k = D = 16384 is above).
    struct Special {
        int64_t rows, d, k;
    };
    for (const Special& s : {Special{2, 16384, 1024}, Special{3, 1500, 1500}, Special{2, 5000, 3000}, Special{4, 777, 130}}) {
        OpCase c;
        c.op = MNEMO_OP_ARGTOPK;
        c.name = "argtopk_" + std::to_string(s.rows) + "x" + std::to_string(s.d) + "_k" + std::to_string(s.k) + "_special";
        InputSpec x = f32({s.rows, s.d});
        CaseRng rng(name_seed(c.name));
        const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-45f, 3e-39f, -3e-39f, 3.4e38f, -3.4e38f};
        for (int64_t i = 0; i < s.rows * s.d; ++i) {
            const int32_t pick = rng.below(8);
            if (pick == 0) x.values.push_back(specials[rng.below(11)]);
            else if (pick == 1) x.values.push_back(std::ldexp(std::round(rng.normalish() * 4.0f), rng.below(200) - 100));
            else x.values.push_back(std::round(rng.normalish() * 8.0f) * 0.25f);
        }
        c.inputs = {x};
        c.iparams[0] = s.k;
        out.push_back(c);
    }
}

inline void take_along(std::vector<OpCase>& out) {
    struct Shape { std::vector<int64_t> x; int64_t k; };
    for (const Shape& s : {Shape{{10}, 3}, Shape{{3, 64}, 4}, Shape{{5, 7}, 7}, Shape{{2, 3, 1000}, 32},
                           Shape{{1, 16384}, 32}, Shape{{64, 1024}, 80}}) {
        OpCase c;
        c.op = MNEMO_OP_TAKE_ALONG;
        c.name = "take_along_x" + dims_name(s.x) + "_k" + std::to_string(s.k);
        std::vector<int64_t> ishape = s.x;
        ishape.back() = s.k;
        const int64_t d = s.x.back();
        CaseRng rng(name_seed(c.name) ^ 4);
        std::vector<int32_t> idx;
        // Every row starts with the last and the first column (addressing off by one), then random
        // picks with repeats.
        const int64_t n = spec_shape(i32_shaped(ishape, {})).numel();
        for (int64_t i = 0; i < n; ++i)
            idx.push_back(i % s.k == 0 ? static_cast<int32_t>(d - 1) : i % s.k == 1 ? 0 : rng.below(static_cast<int32_t>(d)));
        c.inputs = {f32(s.x), i32_shaped(ishape, idx)};
        out.push_back(c);
    }
}

// Nine rows of 700 integer scores in -4..4 (ties everywhere) at k = 1, 5, 64 and 65 (either side
// of the CPU kernel's switch from insertion to sorting) and 700 (from the CPU module's former
// self-test).
inline void argtopk_integer_ties(std::vector<OpCase>& out) {
    for (int64_t k : {1, 5, 64, 65, 700}) {
        OpCase c;
        c.op = MNEMO_OP_ARGTOPK;
        c.name = "argtopk_9x700_k" + std::to_string(k) + "_integers";
        InputSpec x = f32({9, 700});
        CaseRng rng(name_seed(c.name) ^ 3);
        for (int64_t i = 0; i < 9 * 700; ++i) x.values.push_back(static_cast<float>(rng.below(9) - 4));
        c.inputs = {x};
        c.iparams[0] = k;
        out.push_back(c);
    }
}

inline void topk_cases(std::vector<OpCase>& out) {
    argtopk(out);
    take_along(out);
    argtopk_integer_ties(out);
}

}  // namespace mnemo::conformance::detail
