// What the product-key family's two files share: PK_TOPK's kernel entry (product_keys_topk.cu),
// registered with the rest of the family in product_keys.cu, and the Tucker bilinear form both
// PK_TOPK's stage 2 and PK_PAIR_SCORES compute.
#pragma once

#include "device_common.cuh"
#include "kernel_api.hpp"

namespace mnemo_cuda {

// sum_r1 sum_r2 (x[r1] * core[base + r1*rank + r2]) * y[r2] from 0, in the reference's order and
// roundings (__dmul_rn / __dadd_rn: no fma contraction), in double.
__device__ inline double tucker_form(const float* x, const float* y, const WeightPtr& core, uint64_t base, uint64_t rank) {
    double acc = 0.0;
    for (uint64_t r1 = 0; r1 < rank; ++r1) {
        const double a = static_cast<double>(x[r1]);
        for (uint64_t r2 = 0; r2 < rank; ++r2)
            acc = __dadd_rn(acc, __dmul_rn(__dmul_rn(a, static_cast<double>(load_weight(core, base + r1 * rank + r2))),
                                           static_cast<double>(y[r2])));
    }
    return acc;
}

bool pk_topk_supports(const DeviceProps& p, const mnemo_node& node);
uint64_t pk_topk_scratch(const DeviceProps& p, const mnemo_node& node);
void pk_topk_build(KernelBuilder& b);

}  // namespace mnemo_cuda
