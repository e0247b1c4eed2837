// Conformance cases of the norm family: RMS_NORM and LAYER_NORM.
#pragma once

#include "conformance/op_case.hpp"

namespace mnemo::conformance::detail {

inline void norms(std::vector<OpCase>& out) {
    for (int64_t d : {1, 2, 7, 64, 100, 768, 4096, 4097}) {
        for (int variant = 0; variant < 3; ++variant) {  // no weight, f32 weight, f16/bf16 weight
            const DType wt = variant == 2 ? (d % 2 ? DType::BF16 : DType::F16) : DType::F32;
            OpCase c;
            c.op = MNEMO_OP_RMS_NORM;
            c.name = "rms_norm_R3_D" + std::to_string(d) + (variant == 0 ? "" : "_w_" + dt_name(wt));
            c.inputs = {f32({3, d}, 2.0f)};
            if (variant) c.inputs.push_back(weight(wt, {d}, 0.5f, 1.0f));
            c.fparams[0] = 1e-6f;
            out.push_back(c);
        }
    }
    {
        OpCase c;  // 3-D rows, large eps relative to tiny activations: eps must be inside the sqrt
        c.op = MNEMO_OP_RMS_NORM;
        c.name = "rms_norm_2x5x64_small_values_eps";
        c.inputs = {f32({2, 5, 64}, 1e-3f), weight(DType::F32, {64})};
        c.fparams[0] = 1e-5f;
        out.push_back(c);
    }
    {
        OpCase c;  // a long row: GPU kernels give rows this long their widest workgroups
        c.op = MNEMO_OP_RMS_NORM;
        c.name = "rms_norm_R2_D8193_w_bf16";
        c.inputs = {f32({2, 8193}, 2.0f), weight(DType::BF16, {8193}, 0.5f, 1.0f)};
        c.fparams[0] = 1e-6f;
        out.push_back(c);
    }
    {
        OpCase c;  // more rows than one grid dimension holds (65535 workgroups, one per row)
        c.op = MNEMO_OP_LAYER_NORM;
        c.name = "layer_norm_R65600_D3_w_b";
        c.inputs = {f32({65600, 3}, 1.0f, 4.0f), weight(DType::F16, {3}, 0.5f, 1.0f), weight(DType::F32, {3}, 0.5f)};
        c.fparams[0] = 1e-5f;
        out.push_back(c);
    }
    for (int64_t d : {1, 7, 64, 768, 4097}) {
        for (int variant = 0; variant < 3; ++variant) {  // no affine, weight, weight + bias
            OpCase c;
            c.op = MNEMO_OP_LAYER_NORM;
            c.name = "layer_norm_R4_D" + std::to_string(d) + (variant == 0 ? "" : variant == 1 ? "_w" : "_w_b");
            // A common offset of 4: a one-pass E[x^2]-E[x]^2 in f32 loses digits here.
            c.inputs = {f32({4, d}, 1.0f, 4.0f)};
            if (variant >= 1) c.inputs.push_back(weight(d % 2 ? DType::F16 : DType::F32, {d}, 0.5f, 1.0f));
            if (variant == 2) c.inputs.push_back(weight(DType::BF16, {d}, 0.5f));
            c.fparams[0] = 1e-5f;
            out.push_back(c);
        }
    }
}

// Nine rows (an uneven split over 2 and over 3 threads) of D = 1, 37 (a vector tail) and 4096,
// with the weight, and for LAYER_NORM the bias, in each dtype (from the CPU module's former
// self-test): every (op, inputs, dtype) combination, where the cases above pair dtypes with D.
inline void norm_tails(std::vector<OpCase>& out) {
    for (int32_t op : {MNEMO_OP_RMS_NORM, MNEMO_OP_LAYER_NORM}) {
        const std::string base = op == MNEMO_OP_RMS_NORM ? "rms_norm_R9_D" : "layer_norm_R9_D";
        for (int64_t d : {1, 37, 4096}) {
            for (int n_inputs = 1; n_inputs <= (op == MNEMO_OP_RMS_NORM ? 2 : 3); ++n_inputs) {
                for (DType wt : kWeightTypes) {
                    OpCase c;
                    c.op = op;
                    c.name = base + std::to_string(d) + (n_inputs == 1 ? "" : n_inputs == 2 ? "_w_" : "_w_b_") +
                             (n_inputs == 1 ? "" : dt_name(wt));
                    c.inputs = {f32({9, d}, 2.0f, 1.0f)};
                    if (n_inputs > 1) c.inputs.push_back(weight(wt, {d}, 0.5f));
                    if (n_inputs > 2) c.inputs.push_back(weight(wt, {d}, 0.5f));
                    c.fparams[0] = 1e-5f;
                    out.push_back(c);
                    if (n_inputs == 1) break;  // no weight: its dtype does not matter
                }
            }
        }
    }
}

inline void norm_cases(std::vector<OpCase>& out) {
    norms(out);
    norm_tails(out);
}

}  // namespace mnemo::conformance::detail
