// Block-quantized table rows for EMBEDDING_BAG, PEER_GATE and HIVE (lookup_quant.hpp says why
// they are read block by block).
#include "lookup_quant.hpp"

#include <algorithm>
#include <cmath>

#include "lookup_bag.hpp"
#include "matmul_quant.hpp"
#include "mnemo/ops/dtype.hpp"
#include "vector_isa.hpp"

namespace mnemo_cpu {
namespace {

constexpr int64_t kMaxBlock = 256;  // the K-quants' super-block; q8_0 / q4_0 blocks are 32

// y[i] += w * v[i] over one decoded block; the vector path fuses the multiply-add, as the float
// tables' bag_columns does.
#if defined(MNEMO_HAVE_AVX2_KERNELS)
MNEMO_AVX2 void axpy_avx2(float w, const float* v, float* y, int64_t n) {
    const __m256 wv = _mm256_set1_ps(w);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(wv, _mm256_loadu_ps(v + i), _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] = std::fma(w, v[i], y[i]);
}
#endif

void axpy(bool vector, float w, const float* v, float* y, int64_t n) {
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (vector) return axpy_avx2(w, v, y, n);
#endif
    (void)vector;
    for (int64_t i = 0; i < n; ++i) y[i] += w * v[i];
}

// acc[l] += v[i + l] * x[i + l] over a decoded block of n (a multiple of 8) elements.
#if defined(MNEMO_HAVE_AVX2_KERNELS)
MNEMO_AVX2 void dot_block_avx2(const float* v, const float* x, int64_t n, float* acc) {
    __m256 a = _mm256_loadu_ps(acc);
    for (int64_t i = 0; i < n; i += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(v + i), _mm256_loadu_ps(x + i), a);
    _mm256_storeu_ps(acc, a);
}
#endif

void dot_block(bool vector, const float* v, const float* x, int64_t n, float* acc) {
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (vector) return dot_block_avx2(v, x, n, acc);
#endif
    (void)vector;
    for (int64_t i = 0; i < n; i += 8)
        for (int l = 0; l < 8; ++l) acc[l] += v[i + l] * x[i + l];
}

// Rows sit at random places: fetch the block's lines of a row a few entries ahead.
inline void prefetch_block(const char* p, size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o);
    __builtin_prefetch(p + bytes - 1);
}
constexpr int64_t kPrefetchAhead = 4;

}  // namespace

void bag_columns_quant(bool vector, int32_t dtype, const BagRows& b, int64_t c0, int64_t c1, float* y) {
    const mnemo::DTypeBlock blk = mnemo::dtype_block(static_cast<mnemo::DType>(dtype));
    const int64_t be = blk.elems;
    const size_t bb = static_cast<size_t>(blk.bytes);
    const quant::DequantizeFn decode = quant::dequantizer(vector, dtype);
    alignas(32) float v[kMaxBlock];
    for (int64_t k = c0 / be; k * be < c1; ++k) {
        const int64_t a = std::max(c0, k * be), z = std::min(c1, (k + 1) * be);
        const size_t at = static_cast<size_t>(k) * bb;
        std::fill(y + a, y + z, 0.0f);
        for (int64_t e = 0; e < b.count; ++e) {
            if (e + kPrefetchAhead < b.count) prefetch_block(b.rows[e + kPrefetchAhead] + at, bb);
            decode(b.rows[e] + at, v, be);
            axpy(vector, b.w[e], v + (a - k * be), y + a, z - a);
        }
    }
}

float row_dot_quant(bool vector, int32_t dtype, const char* row, const float* x, int64_t width) {
    const mnemo::DTypeBlock blk = mnemo::dtype_block(static_cast<mnemo::DType>(dtype));
    const int64_t be = blk.elems;
    const quant::DequantizeFn decode = quant::dequantizer(vector, dtype);
    alignas(32) float v[kMaxBlock];
    // Per-lane partial sums over the whole row, added up once at the end.
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t k = 0; k * be < width; ++k) {
        decode(row + static_cast<size_t>(k) * blk.bytes, v, be);
        dot_block(vector, v, x + k * be, be, acc);
    }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace mnemo_cpu
