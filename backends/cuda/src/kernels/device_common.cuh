// Device-side helpers shared by the CUDA kernels.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "../context.hpp"
#include "mnemo/abi/mnemo_abi.h"

namespace mnemo_cuda {

// A weight operand: f32, f16 or bf16, widened to f32 on load.
struct WeightPtr {
    const void* p;
    int32_t dtype;
};

inline WeightPtr weight_of(const mnemo_tensor& t) {
    return {static_cast<const Buffer*>(t.buffer)->ptr + t.offset, t.dtype};
}

__device__ __forceinline__ float load_weight(WeightPtr w, uint64_t i) {
    if (w.dtype == MNEMO_DTYPE_F32) return static_cast<const float*>(w.p)[i];
    if (w.dtype == MNEMO_DTYPE_F16) return __half2float(static_cast<const __half*>(w.p)[i]);
    return __bfloat162float(static_cast<const __nv_bfloat16*>(w.p)[i]);
}

// A kernel that meets an index outside 0..limit-1 reports it here (the first report wins),
// skips the entry, and the host turns the report into an error naming the node.
__device__ __forceinline__ void report_bad_index(KernelStatus* s, uint32_t node, int64_t value, int64_t limit) {
    if (atomicCAS(&s->code, 0, 1) == 0) {
        s->node = static_cast<int32_t>(node);
        s->value = static_cast<int32_t>(value < INT32_MIN ? INT32_MIN : value > INT32_MAX ? INT32_MAX : value);
        s->limit = static_cast<int32_t>(limit > INT32_MAX ? INT32_MAX : limit);
    }
}

// Sum over a warp (every lane gets the total).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over a block of blockDim.x threads (a multiple of 32, at most 1024); every thread gets the
// total. `red` is 32 floats of shared memory; the call ends with the block synchronised.
__device__ __forceinline__ float block_sum(float v, float* red) {
    v = warp_sum(v);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = lane < warps ? red[lane] : 0.0f;
    v = warp_sum(v);
    __syncthreads();
    return v;
}
__device__ __forceinline__ float block_max(float v, float* red) {
    v = warp_max(v);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = lane < warps ? red[lane] : -INFINITY;
    v = warp_max(v);
    __syncthreads();
    return v;
}

}  // namespace mnemo_cuda
