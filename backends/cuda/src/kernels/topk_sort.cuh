// The exact top-k machinery of the CUDA backend shared by ARGTOPK (topk.cu) and PK_TOPK
// (product_keys_topk.cu): launch shapes, batches, and the bitonic sort of whole rows in scratch
// (the global path); the in-block selection is topk_common.cuh.
//
// Both ops must return the reference's indices bit for bit, so candidates are ranked through
// unique integer keys (order key of the value, then the complement of the index), never by
// comparing floats.
//  - Shared path (the usual sizes): the block selects the best k of its row in shared memory
//    (block_top: the whole row sorted, or a filtered streaming selection) and writes them.
//  - Global path (k too large for the shared selection): the row's keys go to scratch, padded
//    to a power of two with zero keys (which sort last), a bitonic sort runs over whole rows
//    (stages of a distance below one block's share in shared memory, sort_local; longer ones one
//    launch each, sort_global) and an emit kernel writes the first k. Rows go in batches that
//    bound the scratch.
// PK_TOPK forms its scores in double as the reference does, operation by operation and in its
// order; __dmul_rn / __dadd_rn keep nvcc from contracting a multiply and an add into an fma,
// which would skip a rounding the reference does. Stage-1 sums are rounded once to f32
// (__double2float_rn) and ranked as f32 keys; stage-2 pair scores are ranked as double keys.
#pragma once
#include <algorithm>
#include <climits>

#include "device_common.cuh"
#include "kernel_api.hpp"
#include "topk_common.cuh"

namespace mnemo_cuda::topk {

inline constexpr uint32_t kThreads = 256;
inline constexpr uint32_t kArgCap = 4096;                   // ARGTOPK selection: 4096 Key64 = 32 KiB
inline constexpr uint32_t kPkCap = 2048;                    // PK_TOPK selection: 2048 Key96 = 32 KiB (+ 8 KiB lists)
inline constexpr uint32_t kMaxRow = uint32_t{1} << 28;      // longest row the global path sorts
inline constexpr uint64_t kBatchBytes = uint64_t{64} << 20;  // scratch of one batch of sorted rows
inline constexpr int kMaxCores = 5;

// Keys per block of sort_local: 32 KiB of shared memory.
template <class Key>
constexpr uint32_t local_cap() {
    return static_cast<uint32_t>(32768 / sizeof(Key));
}

// Enough blocks to fill the GPU several times over for a grid-stride loop over n items.
inline uint32_t sort_grid(const DeviceProps& p, uint64_t n) { return stride_grid(p, n, kThreads, 64); }

// Rows per batch when each row needs `row_bytes` of scratch.
inline uint64_t batch_rows(uint64_t n_rows, uint64_t row_bytes) {
    return std::clamp<uint64_t>(kBatchBytes / std::max<uint64_t>(row_bytes, 1), 1, std::max<uint64_t>(n_rows, 1));
}

// ------------------------------------------------------------------ the sort in scratch

// Blocks of `block` consecutive keys (block divides p, so a block never straddles two rows of
// p keys): the bitonic stages of sizes size_first..size_last with strides below the block, in
// shared memory. Directions follow the key's position in its row (origin + i).
template <class Key>
__global__ void __launch_bounds__(kThreads)
    sort_local(Key* keys, uint32_t p, uint32_t block, uint32_t size_first, uint32_t size_last, uint64_t blocks) {
    __shared__ Key sh[local_cap<Key>()];
    for (uint64_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {  // uniform per block
        Key* base = keys + blk * block;
        const uint32_t origin = static_cast<uint32_t>((blk * block) % p);
        for (uint32_t i = threadIdx.x; i < block; i += blockDim.x) sh[i] = base[i];
        __syncthreads();
        block_bitonic(sh, block, origin, size_first, size_last);  // ends synchronised
        for (uint32_t i = threadIdx.x; i < block; i += blockDim.x) base[i] = sh[i];
        __syncthreads();  // the block's stores have read sh before the next block loads it
    }
}

// One bitonic stage (size, stride >= the local block) over every row: a thread per pair.
template <class Key>
__global__ void __launch_bounds__(kThreads) sort_global(Key* keys, uint32_t p, uint32_t size, uint32_t stride, uint64_t pairs) {
    const uint32_t half = p / 2;
    for (uint64_t t = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; t < pairs;
         t += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        Key* row = keys + (t / half) * p;
        const uint32_t i = pair_low(static_cast<uint32_t>(t % half), stride);
        cmpx(&row[i], &row[i + stride], (i & size) == 0u);
    }
}

// Launches that sort `count` rows of p keys (p a power of two <= kMaxRow) at `keys`, best first.
// The classic bitonic schedule: sizes 2..p, strides size/2..1, descending where i & size is 0;
// strides >= block run globally, the rest of each size in shared memory.
template <class Key>
void add_sort(KernelBuilder& b, Key* keys, uint64_t count, uint32_t p) {
    const uint32_t block = std::min(p, local_cap<Key>());
    const uint64_t blocks = count * (p / block), pairs = count * (p / 2);
    const uint32_t grid_local = row_grid(b.props(), blocks), grid_global = sort_grid(b.props(), pairs);
    auto local = [&](uint32_t first, uint32_t last) {
        b.launch([=](cudaStream_t st) {
            sort_local<Key><<<grid_local, kThreads, 0, st>>>(keys, p, block, first, last, blocks);
            return cudaGetLastError();
        });
    };
    local(2, block);
    for (uint32_t size = 2 * block; size <= p; size <<= 1) {
        for (uint32_t stride = size / 2; stride >= block; stride >>= 1)
            b.launch([=](cudaStream_t st) {
                sort_global<Key><<<grid_global, kThreads, 0, st>>>(keys, p, size, stride, pairs);
                return cudaGetLastError();
            });
        local(size, size);
    }
}

}  // namespace mnemo_cuda::topk
