// A block-quantized weight tensor as the MATMUL and GET_ROWS kernels read it: the same view
// interface as TypedWeights (gemm_common.cuh: at(i), at_offset(o)) plus whole sub-blocks of 32
// weights for the mat-vec (unit(u)), and the host's choice of decoder by dtype.
#pragma once
#include <cstdint>

#include "mnemo/abi/mnemo_abi.h"
#include "quant_blocks.cuh"

namespace mnemo_cuda {

// Element i of the block-quantized tensor whose element 0 starts block 0 at p.
template <class Q>
__device__ __forceinline__ float quant_at(const uint8_t* p, int64_t i) {
    const int64_t blk = i / Q::kElems, r = i % Q::kElems;
    return Q::weight(p + blk * Q::kBytes, static_cast<int>(r / 32), static_cast<int>(r % 32));
}

template <class Q>
struct QuantWeights {
    using Block = Q;
    static constexpr bool kQuantized = true;
    static constexpr int kUnit = 32;  // weights per unit(): one sub-block
    const uint8_t* p;                 // first byte of the block holding element 0
    // Element i (from p). Indices and byte offsets stay 64-bit: a 128k x 2048 q8_0 head is 2^28
    // weights in 285 MB, and a larger table (or an f32 scratch of it) passes 2^31 either way.
    __device__ float at(int64_t i) const { return quant_at<Q>(p, i); }
    // The view starting at element o; o is a whole number of blocks (a row start: K is a
    // multiple of the block, checked by supports()).
    __device__ QuantWeights at_offset(int64_t o) const { return {p + (o / Q::kElems) * Q::kBytes}; }
    // Weights 32u .. 32u + 31.
    __device__ void unit(int64_t u, float (&y)[32]) const {
        const int64_t blk = u / Q::kSubs;
        dequantize_sub<Q>(p + blk * Q::kBytes, static_cast<int>(u % Q::kSubs), y);
    }
};

// The block-quantized dtypes the CUDA kernels decode.
inline bool is_quant_weight_dtype(int32_t dt) {
    return dt == MNEMO_DTYPE_Q8_0 || dt == MNEMO_DTYPE_Q4_0 || dt == MNEMO_DTYPE_Q4_K || dt == MNEMO_DTYPE_Q5_K ||
           dt == MNEMO_DTYPE_Q6_K;
}

// f(Q{}) with the block type of dtype dt; false (f not called) for any other dtype.
template <class F>
bool visit_quant_block(int32_t dt, F&& f) {
    switch (dt) {
        case MNEMO_DTYPE_Q8_0: f(Q8_0Block{}); return true;
        case MNEMO_DTYPE_Q4_0: f(Q4_0Block{}); return true;
        case MNEMO_DTYPE_Q4_K: f(Q4_KBlock{}); return true;
        case MNEMO_DTYPE_Q5_K: f(Q5_KBlock{}); return true;
        case MNEMO_DTYPE_Q6_K: f(Q6_KBlock{}); return true;
        default: return false;
    }
}

}  // namespace mnemo_cuda
