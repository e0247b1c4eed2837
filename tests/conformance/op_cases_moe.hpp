// Conformance cases of MOE_FFN. Included by op_cases.hpp after its helpers.
//
// Routing decides how many tokens each expert gets, and the kernel picks its tiles and work split
// from those counts, so the cases vary the routing as much as the sizes: random top-k choices,
// every token on one expert (many slots per expert, tile tails), the same expert chosen twice by
// one token, and a batch big enough to be processed in two chunks.
#pragma once

#include "conformance/op_case.hpp"

namespace mnemo::conformance::detail {

inline void moe_cases(std::vector<OpCase>& out) {
    enum class Route { Random, OneExpert, Repeats, Any };
    // down: down's dtype where it differs from gate/up's (a K-quant mix keeps down a type higher).
    struct Cfg { int64_t n, experts, k, dim, hidden; DType dt; Route route; const char* label; std::optional<DType> down{}; };
    const Cfg cfgs[] = {
        {1, 8, 2, 64, 96, DType::F32, Route::Random, "decode"},
        {1, 8, 2, 64, 96, DType::F16, Route::Random, "decode"},
        {1, 8, 2, 64, 96, DType::BF16, Route::Random, "decode"},
        {5, 8, 2, 64, 96, DType::BF16, Route::Random, "batch"},
        {32, 8, 2, 64, 96, DType::F16, Route::Random, "batch"},
        {32, 8, 2, 64, 96, DType::F32, Route::Random, "batch"},
        {7, 8, 2, 64, 96, DType::BF16, Route::OneExpert, "one_expert"},  // 14 slots on one expert: 3x4 tiles + tails
        {9, 3, 3, 33, 17, DType::F32, Route::Repeats, "repeats"},        // odd sizes, an expert chosen twice
        {4, 5, 1, 20, 7, DType::F16, Route::Random, "top1"},
        {1, 16, 2, 512, 1024, DType::BF16, Route::Random, "decode"},    // the benchmark's MoE layer
        {33, 16, 4, 256, 512, DType::BF16, Route::Random, "batch"},
        // 40000 tokens x 8 slots x (D + F) floats of slot rows exceed the kernel's shared scratch
        // (2M floats): the batch is processed in two chunks, the second waiting for the first.
        {40000, 4, 8, 4, 5, DType::BF16, Route::Any, "chunks"},  // k > E: experts repeat
        // Grouped-by-expert GEMM tiles (Vulkan) of 16, 32 and 64 slots, with row and reduction
        // tails; one expert holding every slot takes several tiles in turn.
        {48, 4, 2, 40, 72, DType::F16, Route::Random, "tile32"},
        {80, 2, 2, 24, 100, DType::F32, Route::Random, "tile64"},
        {40, 8, 1, 36, 20, DType::BF16, Route::OneExpert, "one_expert"},
        // Block-quantized experts (rows of whole blocks: 32 weights, 256 for the K-quants), read
        // through the reference dequantizer, so as exact as the float ones.
        {1, 8, 2, 64, 96, DType::Q8_0, Route::Random, "decode"},
        {1, 8, 2, 64, 96, DType::Q4_0, Route::Random, "decode"},
        {9, 8, 2, 64, 96, DType::Q8_0, Route::Random, "batch"},
        {7, 8, 2, 64, 96, DType::Q4_0, Route::OneExpert, "one_expert"},
        {1, 16, 2, 256, 512, DType::Q4_K, Route::Random, "decode"},
        {33, 16, 4, 256, 512, DType::Q5_K, Route::Random, "batch"},
        {5, 4, 2, 512, 256, DType::Q6_K, Route::Repeats, "repeats"},
        // gate/up q4_k, down q6_k (q4_k_m's layout), at decode (mat-vec) and in a batch (grouped GEMM):
        // a backend picks the down pass's decoder apart from the up pass's.
        {1, 8, 2, 256, 512, DType::Q4_K, Route::Random, "mixed", DType::Q6_K},
        {24, 8, 2, 256, 512, DType::Q4_K, Route::Random, "mixed", DType::Q6_K},
    };
    for (const Cfg& k : cfgs) {
        OpCase c;
        c.op = MNEMO_OP_MOE_FFN;
        c.name = "moe_ffn_" + std::string(k.label) + "_N" + std::to_string(k.n) + "_E" + std::to_string(k.experts) + "_k" +
                 std::to_string(k.k) + "_D" + std::to_string(k.dim) + "_F" + std::to_string(k.hidden) + "_" + dt_name(k.dt) +
                 (k.down ? std::string("_down_") + dt_name(*k.down) : std::string());
        CaseRng rng(name_seed(c.name) ^ 21);
        std::vector<int32_t> idx;
        for (int64_t n = 0; n < k.n; ++n) {
            std::vector<int32_t> chosen;
            for (int64_t j = 0; j < k.k; ++j) {
                int32_t e;
                if (k.route == Route::OneExpert) {
                    e = 5;
                } else if (k.route == Route::Repeats && j == 1) {
                    e = chosen[0];
                } else if (n == 0 && j == 0) {
                    e = static_cast<int32_t>(k.experts - 1);  // the last expert's weights are addressed
                } else {
                    e = rng.below(static_cast<int32_t>(k.experts));
                    // Distinct experts per token, as a top-k router gives.
                    while (k.route == Route::Random && std::find(chosen.begin(), chosen.end(), e) != chosen.end())
                        e = rng.below(static_cast<int32_t>(k.experts));
                }
                chosen.push_back(e);
            }
            idx.insert(idx.end(), chosen.begin(), chosen.end());
        }
        const float in_sd = 1.0f / std::sqrt(static_cast<float>(k.dim)), out_sd = 1.0f / std::sqrt(static_cast<float>(k.hidden));
        c.inputs = {f32({k.n, k.dim}), i32_shaped({k.n, k.k}, idx), f32({k.n, k.k}, 0.3f, 0.4f),
                    weight(k.dt, {k.experts, k.hidden, k.dim}, in_sd), weight(k.dt, {k.experts, k.hidden, k.dim}, in_sd),
                    weight(k.down.value_or(k.dt), {k.experts, k.dim, k.hidden}, out_sd)};
        out.push_back(c);
    }
}

}  // namespace mnemo::conformance::detail
