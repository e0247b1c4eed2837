// MATMUL's operands as the f32/f16/bf16 kernels see them (matmul.cpp and its ISA files):
// y[N, M] = x[N, K] W[M, K]^T, and the slots of PreparedNode::plan the tiling choice lives in.
#pragma once

#include "kernel_api.hpp"

namespace mnemo_cpu {

// plan[] layout for f32/f16/bf16 matmul nodes: tile rows of W (mr) and of x (nr), the K block
// (kc) and the block of x rows kept in L2 (nc).
enum MatmulPlanSlot { kPlanMr = 0, kPlanNr = 1, kPlanKc = 2, kPlanNc = 3 };

struct MatmulShape {
    const float* x;
    const void* w;
    float* y;
    int64_t n, m, k;
};

inline MatmulShape matmul_shape(const PreparedNode& p) {
    const mnemo_node& nd = p.node;
    MatmulShape s;
    s.x = static_cast<const float*>(p.in[0]);
    s.w = p.in[1];
    s.y = static_cast<float*>(p.out);
    s.m = nd.inputs[1].shape[0];
    s.k = nd.inputs[1].shape[1];
    s.n = outer_rows(nd.inputs[0]);
    return s;
}

// Row `row` of a [M, K] f32/f16/bf16 W (DT a mnemo dtype).
template <int DT>
inline const void* weight_row(const void* w, int64_t row, int64_t k) {
    constexpr size_t esize = DT == MNEMO_DTYPE_F32 ? 4 : 2;
    return static_cast<const char*>(w) + static_cast<size_t>(row) * static_cast<size_t>(k) * esize;
}

// The AVX-512 prefill GEMM (arch/x86/matmul_avx512.cpp): sets p's plan and returns the kernel
// for an f32/f16/bf16 W, or nullptr for another dtype.
KernelFn select_matmul_prefill_avx512(PreparedNode& p, int32_t dtype);

}  // namespace mnemo_cpu
