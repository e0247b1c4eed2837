// AVX2/FMA/F16C building blocks. Every function carries the target attribute itself, so the
// module is compiled for baseline x86-64 and these are only ever called from kernels that were
// selected after cpu_features() confirmed the instructions exist.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#define MNEMO_HAVE_AVX2_KERNELS 1
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "mnemo/abi/mnemo_abi.h"

#define MNEMO_AVX2 __attribute__((target("avx2,fma,f16c")))
#define MNEMO_AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) inline

namespace mnemo_cpu::avx2 {

// 8 consecutive weights starting at element i, widened to f32. Loads are unaligned on purpose:
// tensors in mmapped safetensors files are only guaranteed 2-byte alignment.
template <int DT>
MNEMO_AVX2_INLINE __m256 load8(const void* base, size_t i) {
    if constexpr (DT == MNEMO_DTYPE_F32) {
        return _mm256_loadu_ps(static_cast<const float*>(base) + i);
    } else if constexpr (DT == MNEMO_DTYPE_F16) {
        const auto* p = static_cast<const uint16_t*>(base) + i;
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    } else {
        // bf16 is the top half of an f32: widen to 32 bits and shift into place.
        const auto* p = static_cast<const uint16_t*>(base) + i;
        const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    }
}

template <int DT>
MNEMO_AVX2_INLINE float load1(const void* base, size_t i) {
    if constexpr (DT == MNEMO_DTYPE_F32) {
        return static_cast<const float*>(base)[i];
    } else if constexpr (DT == MNEMO_DTYPE_F16) {
        return _cvtsh_ss(static_cast<const uint16_t*>(base)[i]);
    } else {
        const uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(base)[i]) << 16;
        float f;
        __builtin_memcpy(&f, &bits, 4);
        return f;
    }
}

MNEMO_AVX2_INLINE float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// x . y over d floats: two accumulators of 8 lanes, then the scalar tail.
MNEMO_AVX2_INLINE float dot(const float* x, const float* y, int64_t d) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= d; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), s1);
    }
    if (i + 8 <= d) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), s0);
        i += 8;
    }
    float s = hsum(_mm256_add_ps(s0, s1));
    for (; i < d; ++i) s += x[i] * y[i];
    return s;
}

MNEMO_AVX2_INLINE float hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// e^x, 8 lanes, about 1-2 ulp over the f32 range: x = n ln2 + r with |r| <= ln2/2 (ln2 split in
// two parts so the reduction is exact), a degree-6 polynomial for e^r, and 2^n built in the
// exponent bits. Inputs are clamped so that the result saturates instead of producing garbage.
MNEMO_AVX2_INLINE __m256 exp8(__m256 x) {
    x = _mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f));
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.3365447504f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500E-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    // 2^n: n is in [-126, 128); split as 2^(n/2) * 2^(n - n/2) so n = 128 does not overflow the
    // exponent field.
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i half = _mm256_srai_epi32(ni, 1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

// Mask that enables the first `count` (0..8) lanes, for loads/stores of row tails.
MNEMO_AVX2_INLINE __m256i tail_mask(int64_t count) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), idx);
}

}  // namespace mnemo_cpu::avx2

#endif

#if defined(MNEMO_HAVE_AVX2_KERNELS)
namespace mnemo_cpu::avx2 {

// For ops that are not hot enough to be templated on the weight type (norm weights, embedding
// rows): the dtype switch is perfectly predictable inside a row loop.
MNEMO_AVX2_INLINE __m256 load8_any(const void* base, int32_t dtype, size_t i) {
    switch (dtype) {
        case MNEMO_DTYPE_F16: return load8<MNEMO_DTYPE_F16>(base, i);
        case MNEMO_DTYPE_BF16: return load8<MNEMO_DTYPE_BF16>(base, i);
        default: return load8<MNEMO_DTYPE_F32>(base, i);
    }
}

MNEMO_AVX2_INLINE float load1_any(const void* base, int32_t dtype, size_t i) {
    switch (dtype) {
        case MNEMO_DTYPE_F16: return load1<MNEMO_DTYPE_F16>(base, i);
        case MNEMO_DTYPE_BF16: return load1<MNEMO_DTYPE_BF16>(base, i);
        default: return load1<MNEMO_DTYPE_F32>(base, i);
    }
}

}  // namespace mnemo_cpu::avx2
#endif
