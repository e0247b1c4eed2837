// PK_PAIR_SCORES, the scores of chosen product-key pairs (product_keys family).
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

// ================================================================== PK_PAIR_SCORES

// One output element per (entry, core): Rk*Rk products summed in double in the reference's order,
// then rounded once to f32 (tiny work per entry; no reason to be less exact than the reference).
void pk_pair_scores_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_node& nd = p.node;
    const float* sc = static_cast<const float*>(p.in[0]);
    const int32_t* idx = static_cast<const int32_t*>(p.in[1]);
    float* out = static_cast<float*>(p.out);
    const int64_t heads = nd.inputs[0].shape[1] / 2, nk = nd.inputs[0].shape[2], rk = nd.inputs[0].shape[3];
    const int64_t k = nd.inputs[1].shape[2], cores = nd.n_inputs - 2, width = cores == 0 ? 1 : cores;
    int64_t e0, e1;
    split_range(numel(nd.inputs[1]), ith, nth, 1, &e0, &e1);
    for (int64_t e = e0; e < e1; ++e) {
        const int64_t n = e / (heads * k), h = e / k % heads, i = idx[e] / nk, j = idx[e] % nk;
        const float* r1 = sc + ((n * 2 * heads + 2 * h) * nk + i) * rk;
        const float* r2 = sc + ((n * 2 * heads + 2 * h + 1) * nk + j) * rk;
        float* o = out + e * width;
        if (cores == 0) {
            o[0] = static_cast<float>(static_cast<double>(r1[0]) + static_cast<double>(r2[0]));
            continue;
        }
        for (int64_t c = 0; c < cores; ++c) {
            const void* core = p.in[2 + c];
            const int32_t dt = nd.inputs[2 + c].dtype;
            double acc = 0.0;
            for (int64_t x = 0; x < rk; ++x)
                for (int64_t y = 0; y < rk; ++y)
                    acc += static_cast<double>(r1[x]) *
                           static_cast<double>(load_weight(core, dt, static_cast<size_t>((h * rk + x) * rk + y))) *
                           static_cast<double>(r2[y]);
            o[c] = static_cast<float>(acc);
        }
    }
}

}  // namespace

KernelFn select_pk_pair_scores(PreparedNode&, Isa) { return pk_pair_scores_kernel; }

// An Rk x Rk bilinear form per output element.
double pk_pair_scores_work(const mnemo_node& n) {
    const double rank = static_cast<double>(n.inputs[0].shape[3]);
    return static_cast<double>(numel(n.output)) * rank * rank;
}

bool check_pk_pair_scores(const PreparedNode& p, char* message, size_t cap) {
    const mnemo_tensor& idx = p.node.inputs[1];
    const int64_t nk = p.node.inputs[0].shape[2], heads = idx.shape[1], k = idx.shape[2];
    const auto* data = static_cast<const int32_t*>(p.in[1]);
    const int64_t count = numel(idx);
    // index < Nk*Nk, tested as index / Nk < Nk (Nk*Nk may not fit any integer type here)
    for (int64_t e = 0; e < count; ++e)
        if (data[e] < 0 || nk == 0 || data[e] / nk >= nk) {
            std::snprintf(message, cap, "pk_pair_scores: pair index [%lld, %lld, %lld] is %d, outside 0..Nk*Nk-1 (Nk = %lld)",
                          static_cast<long long>(e / (heads * k)), static_cast<long long>(e / k % heads),
                          static_cast<long long>(e % k), data[e], static_cast<long long>(nk));
            return false;
        }
    return true;
}

}  // namespace mnemo_cpu
