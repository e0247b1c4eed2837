// VQ_DECODE: FAISS "OPQ,Residual<Mc>x<bc>,PQ<Mp>x<bp>" codes back to vectors (mnemo_abi.h).
//
// The result must equal FAISS's sa_decode over reference BLAS bit for bit (so a memory decodes to
// the same vector on every machine), which fixes the arithmetic: y = pq part + coarse part (one
// f32 addition), then x[i] = sum over l = 0..Do-1, ascending, of round(y[l] * A[l, i]), each
// partial sum rounded. Only the independent output columns may be computed side by side, which is
// exactly what a vector of columns does: 8 (AVX2) or 4 (SSE, by the compiler) columns take the
// same sequence of roundings as one. This file is compiled with -ffp-contract=off
// (backends/cpu/CMakeLists.txt) and the AVX2 path uses separate multiply and add instructions:
// a fused multiply-add would skip the product's rounding.
//
// Rows are independent: threads take contiguous row ranges. Each row's rotated vector y is
// decoded into the thread's scratch, then x = A^T y is built in column blocks whose partial sums
// stay in registers for the whole l loop (A, Do x Di floats, is small and stays in cache).
#include <cstdio>
#include <cstring>

#include "arch/x86/simd_avx2.hpp"
#include "kernel_api.hpp"

namespace mnemo_cpu {
namespace {

struct VqShape {
    const int32_t* codes;
    const float* coarse;
    const float* pq;
    const float* a;  // nullptr without rotation
    float* out;
    int64_t rows, words, mc, bc, dsub_c, mp, bp, dsub_p, d_out, d_in;
    int64_t coarse_bytes;  // cb
};

VqShape vq_shape(const PreparedNode& p) {
    const mnemo_node& n = p.node;
    VqShape s;
    s.codes = static_cast<const int32_t*>(p.in[0]);
    s.coarse = static_cast<const float*>(p.in[1]);
    s.pq = static_cast<const float*>(p.in[2]);
    s.a = n.n_inputs > 3 ? static_cast<const float*>(p.in[3]) : nullptr;
    s.out = static_cast<float*>(p.out);
    s.rows = n.inputs[0].shape[0];
    s.words = n.inputs[0].shape[1];
    s.mc = n.inputs[1].shape[0];
    s.bc = n.iparams[0];
    s.dsub_c = n.inputs[1].shape[2];
    s.mp = n.inputs[2].shape[0];
    s.bp = n.iparams[1];
    s.dsub_p = n.inputs[2].shape[2];
    s.d_out = s.mc * s.dsub_c;
    s.d_in = s.a ? n.inputs[3].shape[1] : s.d_out;
    s.coarse_bytes = (s.mc * s.bc + 7) / 8;
    return s;
}

// The coarse list number: the first cb (<= 4) bytes of the code, little-endian, i.e. the low
// 8*cb bits of word 0.
inline uint32_t list_number(const VqShape& s, int64_t row) {
    const auto w = static_cast<uint32_t>(s.codes[row * s.words]);
    return s.coarse_bytes >= 4 ? w : w & ((1u << (8 * s.coarse_bytes)) - 1u);
}

// Decodes row `row` into y[Do] (rotated space). The list number was checked before the run.
void decode_rotated(const VqShape& s, int64_t row, float* y) {
    const auto* w = reinterpret_cast<const uint32_t*>(s.codes + row * s.words);
    const int64_t kp = int64_t{1} << s.bp, kc = int64_t{1} << s.bc;
    const uint32_t pmask = (1u << s.bp) - 1u, cmask = (1u << s.bc) - 1u;
    for (int64_t k = 0; k < s.mp; ++k) {
        // Bits [k*bp, (k+1)*bp) of the stream after the cb coarse bytes: within one word, or
        // across two (bp <= 16). The second word exists: the index ends inside the code, and
        // the code fits in the row's W words.
        const int64_t bit = 8 * s.coarse_bytes + k * s.bp;
        const int64_t word = bit >> 5, shift = bit & 31;
        uint32_t v = w[word] >> shift;
        if (shift + s.bp > 32) v |= w[word + 1] << (32 - shift);
        const float* src = s.pq + (k * kp + (v & pmask)) * s.dsub_p;
        std::memcpy(y + k * s.dsub_p, src, static_cast<size_t>(s.dsub_p) * sizeof(float));
    }
    const uint32_t list = list_number(s, row);
    for (int64_t k = 0; k < s.mc; ++k) {
        const int64_t ck = (list >> (k * s.bc)) & cmask;  // Mc*bc <= 32, so k*bc < 32
        const float* src = s.coarse + (k * kc + ck) * s.dsub_c;
        float* dst = y + k * s.dsub_c;
        for (int64_t j = 0; j < s.dsub_c; ++j) dst[j] = dst[j] + src[j];
    }
}

// Columns of x kept in registers per block: 8 AVX2 vectors, or the scalar loop's 64 partial sums.
constexpr int64_t kBlock = 64;

// x[c0..c1) = A^T y for columns c0..c1 (c1 - c0 <= kBlock), l ascending.
void rotate_block(const float* y, const float* a, int64_t d_out, int64_t d_in, int64_t c0, int64_t c1, float* x) {
    float acc[kBlock] = {};
    const int64_t w = c1 - c0;
    for (int64_t l = 0; l < d_out; ++l) {
        const float yl = y[l];
        const float* row = a + l * d_in + c0;
        for (int64_t j = 0; j < w; ++j) {
            const float product = yl * row[j];
            acc[j] = acc[j] + product;
        }
    }
    std::memcpy(x + c0, acc, static_cast<size_t>(w) * sizeof(float));
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)
// The same block with eight 8-wide accumulators; a column tail (< 8) goes to the scalar loop.
MNEMO_AVX2 void rotate_block_avx2(const float* y, const float* a, int64_t d_out, int64_t d_in, int64_t c0, int64_t c1,
                                  float* x) {
    const int64_t vec = (c1 - c0) / 8;
    __m256 acc[kBlock / 8];
    for (int64_t v = 0; v < vec; ++v) acc[v] = _mm256_setzero_ps();
    for (int64_t l = 0; l < d_out; ++l) {
        const __m256 yl = _mm256_set1_ps(y[l]);
        const float* row = a + l * d_in + c0;
        for (int64_t v = 0; v < vec; ++v)
            acc[v] = _mm256_add_ps(acc[v], _mm256_mul_ps(yl, _mm256_loadu_ps(row + 8 * v)));
    }
    for (int64_t v = 0; v < vec; ++v) _mm256_storeu_ps(x + c0 + 8 * v, acc[v]);
    if (c0 + 8 * vec < c1) rotate_block(y, a, d_out, d_in, c0 + 8 * vec, c1, x);
}
#endif

template <bool AVX2>
void vq_decode_kernel(const KernelCall& call, int ith, int nth) {
    const VqShape s = vq_shape(*call.node);
    int64_t r0, r1;
    split_range(s.rows, ith, nth, 1, &r0, &r1);
    float* y = call.scratch + static_cast<size_t>(ith) * call.scratch_stride;
    for (int64_t r = r0; r < r1; ++r) {
        float* x = s.out + r * s.d_in;
        if (!s.a) {
            decode_rotated(s, r, x);
            continue;
        }
        decode_rotated(s, r, y);
        for (int64_t c0 = 0; c0 < s.d_in; c0 += kBlock) {
            const int64_t c1 = c0 + kBlock < s.d_in ? c0 + kBlock : s.d_in;
#if defined(MNEMO_HAVE_AVX2_KERNELS)
            if constexpr (AVX2) {
                rotate_block_avx2(y, s.a, s.d_out, s.d_in, c0, c1, x);
                continue;
            }
#endif
            rotate_block(y, s.a, s.d_out, s.d_in, c0, c1, x);
        }
    }
}

}  // namespace

KernelFn select_vq_decode(PreparedNode& p, Isa isa) {
    const VqShape s = vq_shape(p);
    p.scratch_floats = s.a ? static_cast<size_t>(s.d_out) : 0;
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (isa == Isa::Avx2) return vq_decode_kernel<true>;
#else
    (void)isa;
#endif
    return vq_decode_kernel<false>;
}

// A list number >= 2^(Mc*bc) is a corrupt code (FAISS throws on it): refused before any row is
// decoded, naming the row.
bool check_vq_indices(const PreparedNode& p, char* message, size_t cap) {
    const VqShape s = vq_shape(p);
    const int64_t bits = s.mc * s.bc;
    if (bits >= 32) return true;  // every 32-bit list number is valid
    const uint32_t nlist = 1u << bits;
    for (int64_t r = 0; r < s.rows; ++r) {
        const uint32_t list = list_number(s, r);
        if (list >= nlist) {
            std::snprintf(message, cap, "vq_decode: code %lld has coarse list number %u, outside 0..%u (%lld x %lld-bit coarse indices)",
                          static_cast<long long>(r), list, nlist - 1, static_cast<long long>(s.mc),
                          static_cast<long long>(s.bc));
            return false;
        }
    }
    return true;
}

// Do rotated elements per row, then Do multiply-adds per output element with A.
double vq_decode_work(const mnemo_node& n) {
    return static_cast<double>(n.inputs[0].shape[0]) * static_cast<double>(n.inputs[1].shape[0] * n.inputs[1].shape[2]) *
           (n.n_inputs > 3 ? 1.0 + static_cast<double>(n.inputs[3].shape[1]) : 1.0);
}

void register_vq_kernels() { register_kernel(MNEMO_OP_VQ_DECODE, {select_vq_decode, vq_decode_work, check_vq_indices}); }

}  // namespace mnemo_cpu
