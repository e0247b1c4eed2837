// Conformance cases of SOFTMAX.
#pragma once

#include "conformance/op_case.hpp"

namespace mnemo::conformance::detail {

inline void softmax(std::vector<OpCase>& out) {
    struct Shape { std::vector<int64_t> x; float scale; float stddev; };
    for (const Shape& s : {Shape{{4, 1}, 0.0f, 1.0f}, Shape{{4, 5}, 0.0f, 3.0f}, Shape{{3, 33}, 0.125f, 8.0f},
                           Shape{{2, 4097}, 1.0f, 3.0f}, Shape{{1, 32000}, 0.0f, 5.0f}, Shape{{2, 3, 65}, 0.5f, 2.0f},
                           Shape{{2, 100}, 0.0f, 200.0f}}) {
        OpCase c;
        c.op = MNEMO_OP_SOFTMAX;
        c.name = "softmax_" + dims_name(s.x) + "_scale" + std::to_string(static_cast<int>(s.scale * 1000)) + "m_sd" +
                 std::to_string(static_cast<int>(s.stddev));
        c.inputs = {f32(s.x, s.stddev)};
        c.fparams[0] = s.scale;
        out.push_back(c);
    }
    {
        OpCase c;  // a Llama-3-sized vocabulary row: long loops in every pass
        c.op = MNEMO_OP_SOFTMAX;
        c.name = "softmax_2x128256_scale0m_sd5";
        c.inputs = {f32({2, 128256}, 5.0f)};
        out.push_back(c);
    }
    {
        OpCase c;  // more rows than one grid dimension holds (65535 workgroups, one per row)
        c.op = MNEMO_OP_SOFTMAX;
        c.name = "softmax_65600x3_scale0m_sd2";
        c.inputs = {f32({65600, 3}, 2.0f)};
        out.push_back(c);
    }
    {
        // Masked scores (-inf, as a causal mask leaves them) give exactly 0; row r keeps its
        // first 7r + 1 entries, so row 0 is a single 1. (A row of only -inf has no defined result:
        // the reference gives NaN, so it is not a case.)
        OpCase c;
        c.op = MNEMO_OP_SOFTMAX;
        c.name = "softmax_6x37_masked_scale250m";
        CaseRng rng(name_seed(c.name) ^ 3);
        InputSpec x = f32({6, 37});
        for (int64_t r = 0; r < 6; ++r)
            for (int64_t j = 0; j < 37; ++j)
                x.values.push_back(j <= r * 7 ? 3.0f * rng.normalish() : -INFINITY);
        c.inputs = {x};
        c.fparams[0] = 0.25f;
        out.push_back(c);
    }
}

// 33 rows (split over threads) of D = 1, 13 and 1000, with the default scale, 0.5 and a negative
// one (-2: the row's order reverses), on values of a wide spread (from the CPU module's former
// self-test).
inline void softmax_tails(std::vector<OpCase>& out) {
    for (int64_t d : {1, 13, 1000}) {
        for (float scale : {0.0f, 0.5f, -2.0f}) {
            OpCase c;
            c.op = MNEMO_OP_SOFTMAX;
            c.name = "softmax_33x" + std::to_string(d) + "_scale" + signed_name(static_cast<int64_t>(scale * 1000)) + "m_sd10";
            c.inputs = {f32({33, d}, 10.0f)};
            c.fparams[0] = scale;
            out.push_back(c);
        }
    }
}

inline void softmax_cases(std::vector<OpCase>& out) {
    softmax(out);
    softmax_tails(out);
}

}  // namespace mnemo::conformance::detail
