// VQ_DECODE: FAISS "OPQ,Residual<Mc>x<bc>,PQ<Mp>x<bp>" codes back to vectors (Memory3's
// compressed explicit memories, decoded on the device; layout and arithmetic in mnemo_abi.h).
//
// One block per tile of up to kMaxRows codes:
//   1. each thread decodes elements of the tile's rotated vectors y into shared memory:
//      y[c] = pq[k, p_k, ..] + coarse[k', c_k', ..], reading the code words it needs itself (the
//      coarse list number is word 0, a PQ index spans at most two words);
//   2. with A, thread (r, i) forms x[i] = sum_l y[l] * A[l, i] for l = 0..Do-1 in that order,
//      every product and every sum rounded to f32 (__fmul_rn / __fadd_rn: never contracted to an
//      FMA), which is the reference's and FAISS's reference-BLAS arithmetic bit for bit.
//      Consecutive threads read consecutive columns of A, so its rows are read coalesced and
//      shared by the tile's rows through L1. Without A, y is the output and is written directly.
// A list number >= 2^(Mc*bc) is a corrupt code: reported through the status word (one thread
// checks each row of the tile first), and the row is left unwritten. Every table index is
// in bounds by construction (masks of bc / bp bits against tables of 2^bc / 2^bp rows).
#include <climits>

#include "device_common.cuh"
#include "kernel_api.hpp"

namespace mnemo_cuda {
namespace {

constexpr uint32_t kThreads = 128;
constexpr uint32_t kMaxRows = 8;          // codes per block
constexpr uint32_t kTileFloats = 8192;    // dynamic shared y tile: rows * Do <= this (32 KiB)
constexpr uint32_t kMaxDo = kTileFloats;  // one row must fit

// Codes per block: as many as fit the shared tile, at most kMaxRows (Do = 0: nothing to stage).
uint32_t rows_per_block(uint64_t d_out) {
    return d_out == 0 ? kMaxRows : static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(kMaxRows, kTileFloats / d_out)));
}

struct Args {
    const int32_t* codes;  // [N, W]
    const float* coarse;   // [Mc, 2^bc, dc]
    const float* pq;       // [Mp, 2^bp, dp]
    const float* a;        // [Do, Di] or null
    float* out;            // [N, Di] (with A) or [N, Do]
    uint64_t n, words;
    uint32_t bc, bp;           // index bits
    uint32_t dc, dp, d_out, d_in;
    uint32_t coarse_bytes;     // cb = ceil(Mc*bc/8) <= 4
    uint32_t list_bits;        // Mc*bc <= 32
    uint32_t rows_per_block;
    KernelStatus* status;
    uint32_t node;
};

// The coarse list number of a code: its first cb bytes, little-endian, all in word 0.
__device__ __forceinline__ uint32_t list_number(const Args& a, const int32_t* code) {
    const uint32_t w = static_cast<uint32_t>(code[0]);
    return a.coarse_bytes >= 4 ? w : w & ((1u << (8 * a.coarse_bytes)) - 1u);
}

__device__ __forceinline__ bool list_ok(const Args& a, uint32_t list) {
    return a.list_bits >= 32 || list < (1u << a.list_bits);
}

// PQ index k: bits [k*bp, (k+1)*bp) of the LSB-first stream that starts at byte cb. bp <= 16,
// so with the bit's offset in its word (< 32) it spans at most two words; the second is read only
// when the index reaches into it, and then it lies inside the code's cb + pb bytes (< 4W).
__device__ __forceinline__ uint32_t pq_index(const Args& a, const int32_t* code, uint32_t k) {
    const uint64_t bit = 8ull * a.coarse_bytes + static_cast<uint64_t>(k) * a.bp;
    const uint64_t word = bit / 32;
    const uint32_t shift = static_cast<uint32_t>(bit % 32);
    uint64_t v = static_cast<uint32_t>(code[word]);
    if (shift + a.bp > 32) v |= static_cast<uint64_t>(static_cast<uint32_t>(code[word + 1])) << 32;
    return static_cast<uint32_t>(v >> shift) & ((1u << a.bp) - 1u);
}

__global__ void __launch_bounds__(kThreads) vq_decode_kernel(Args a) {
    extern __shared__ float y_s[];  // rows_per_block * Do floats with A, none without
    const uint64_t row0 = static_cast<uint64_t>(blockIdx.x) * a.rows_per_block;
    const uint32_t rows = static_cast<uint32_t>(min(static_cast<uint64_t>(a.rows_per_block), a.n - row0));
    const uint32_t tid = threadIdx.x;

    // 0. Corrupt codes of the tile (checked even when a row has no elements to write).
    for (uint32_t r = tid; r < rows; r += kThreads) {
        const uint32_t list = list_number(a, a.codes + (row0 + r) * a.words);
        if (!list_ok(a, list)) report_bad_index(a.status, a.node, static_cast<int64_t>(list), int64_t{1} << a.list_bits);
    }

    // 1. Rotated-space vectors of the tile (or the output itself without A).
    for (uint32_t e = tid; e < rows * a.d_out; e += kThreads) {
        const uint32_t r = e / a.d_out, c = e - r * a.d_out;
        const uint64_t n = row0 + r;
        const int32_t* code = a.codes + n * a.words;
        const uint32_t list = list_number(a, code);
        if (!list_ok(a, list)) continue;  // a corrupt code: the row is skipped (reported above)
        const uint32_t kc = c / a.dc, kp = c / a.dp;
        const uint32_t ci = (list >> (kc * a.bc)) & ((1u << a.bc) - 1u);
        const uint32_t pi = pq_index(a, code, kp);
        const float from_pq = a.pq[((static_cast<uint64_t>(kp) << a.bp) + pi) * a.dp + (c - kp * a.dp)];
        const float from_coarse = a.coarse[((static_cast<uint64_t>(kc) << a.bc) + ci) * a.dc + (c - kc * a.dc)];
        const float y = __fadd_rn(from_pq, from_coarse);  // one rounding, operands commute
        if (a.a) y_s[e] = y;
        else a.out[n * a.d_out + c] = y;
    }
    if (!a.a) return;  // block-uniform
    __syncthreads();

    // 2. x = A^T y per row, ascending l, no fused multiply-add.
    for (uint32_t e = tid; e < rows * a.d_in; e += kThreads) {
        const uint32_t r = e / a.d_in, i = e - r * a.d_in;
        const uint64_t n = row0 + r;
        if (!list_ok(a, list_number(a, a.codes + n * a.words))) continue;  // reported in step 0
        const float* y = y_s + r * a.d_out;
        const float* col = a.a + i;
        float x = 0.0f;
        for (uint32_t l = 0; l < a.d_out; ++l) x = __fadd_rn(x, __fmul_rn(y[l], col[static_cast<uint64_t>(l) * a.d_in]));
        a.out[n * a.d_in + i] = x;
    }
}

bool supports(const DeviceProps& p, const mnemo_node& nd) {
    if ((nd.n_inputs != 3 && nd.n_inputs != 4) || nd.output.dtype != MNEMO_DTYPE_F32) return false;
    if (nd.inputs[0].dtype != MNEMO_DTYPE_I32 || nd.inputs[1].dtype != MNEMO_DTYPE_F32 ||
        nd.inputs[2].dtype != MNEMO_DTYPE_F32)
        return false;
    if (nd.inputs[0].ndim != 2 || nd.inputs[1].ndim != 3 || nd.inputs[2].ndim != 3) return false;
    if (nd.n_inputs == 4 && (nd.inputs[3].dtype != MNEMO_DTYPE_F32 || nd.inputs[3].ndim != 2)) return false;
    const int64_t bc = nd.iparams[0], bp = nd.iparams[1];
    const int64_t mc = nd.inputs[1].shape[0], mp = nd.inputs[2].shape[0];
    // The engine's shape rules (bits 1..16, Mc*bc <= 32), relied on by the masks and shifts.
    if (bc < 1 || bc > 16 || bp < 1 || bp > 16 || mc < 1 || mc * bc > 32 || mp < 1) return false;
    const int64_t d_out = mc * nd.inputs[1].shape[2];
    const int64_t d_in = nd.n_inputs == 4 ? nd.inputs[3].shape[1] : d_out;
    if (d_out > kMaxDo || d_in > INT32_MAX / static_cast<int64_t>(kMaxRows)) return false;
    const uint64_t max_x = p.max_grid[0] > 0 ? static_cast<uint64_t>(p.max_grid[0]) : 65535;
    return static_cast<uint64_t>(nd.inputs[0].shape[0]) <= max_x * rows_per_block(static_cast<uint64_t>(d_out));
}

void build(KernelBuilder& b) {
    const mnemo_node& nd = b.node();
    const mnemo_tensor& codes = nd.inputs[0];
    const mnemo_tensor& coarse = nd.inputs[1];
    const mnemo_tensor& pq = nd.inputs[2];
    Args a{};
    a.n = static_cast<uint64_t>(codes.shape[0]);
    a.words = static_cast<uint64_t>(codes.shape[1]);
    a.bc = static_cast<uint32_t>(nd.iparams[0]);
    a.bp = static_cast<uint32_t>(nd.iparams[1]);
    a.dc = static_cast<uint32_t>(coarse.shape[2]);
    a.dp = static_cast<uint32_t>(pq.shape[2]);
    a.d_out = static_cast<uint32_t>(coarse.shape[0] * coarse.shape[2]);
    a.d_in = nd.n_inputs == 4 ? static_cast<uint32_t>(nd.inputs[3].shape[1]) : a.d_out;
    a.list_bits = static_cast<uint32_t>(coarse.shape[0]) * a.bc;
    a.coarse_bytes = (a.list_bits + 7) / 8;
    if (a.n == 0) return;  // (Do = 0 or Di = 0 still runs: corrupt codes are errors all the same)
    a.codes = KernelBuilder::as<const int32_t>(codes);
    a.coarse = KernelBuilder::as<const float>(coarse);
    a.pq = KernelBuilder::as<const float>(pq);
    a.a = nd.n_inputs == 4 ? KernelBuilder::as<const float>(nd.inputs[3]) : nullptr;
    a.out = KernelBuilder::as<float>(nd.output);
    a.rows_per_block = rows_per_block(a.d_out);
    a.status = b.status();
    a.node = b.node_index();
    const uint32_t grid = blocks_for(a.n, a.rows_per_block);
    // Only the tile's rows: Do = 80 takes 2.5 KiB, so shared memory never limits occupancy.
    const size_t smem = a.a ? static_cast<size_t>(a.rows_per_block) * a.d_out * sizeof(float) : 0;
    b.launch([=](cudaStream_t st) {
        vq_decode_kernel<<<grid, kThreads, smem, st>>>(a);
        return cudaGetLastError();
    });
}

}  // namespace

void register_vq_kernels() { register_kernel(MNEMO_OP_VQ_DECODE, Kernel{supports, nullptr, build}); }

}  // namespace mnemo_cuda
