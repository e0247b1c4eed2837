// One K/V cache row against a query (dot) or added into an accumulator (axpy), for each cache
// dtype ATTENTION reads: f32, f16 (F16C converts 8 halves per instruction) and q8_0 (blocks of
// 32 int8 with one f16 scale: the block's dot product is summed in int8-widened floats and
// scaled once, so a row is never expanded into a float copy). KV_STORE's conversions on store
// are here too, so the two ops agree on the layout.
#pragma once

#include <cstdint>
#include <cstring>

#include "arch/x86/simd_avx2.hpp"
#include "mnemo/abi/mnemo_abi.h"
#include "mnemo/ops/dtype.hpp"

namespace mnemo_cpu::kv {

constexpr int64_t kQ8Block = 32;
constexpr int64_t kQ8BlockBytes = 34;  // f16 scale d, then 32 int8: value = d * q

inline float q8_scale(const char* block) {
    uint16_t h;
    std::memcpy(&h, block, 2);  // blocks are 34 bytes: no alignment to rely on
    return mnemo::f16_to_f32(h);
}

template <int DT>
inline float dot_scalar(const float* q, const char* row, int64_t d) {
    float s = 0.0f;
    if constexpr (DT == MNEMO_DTYPE_F32) {
        const float* k = reinterpret_cast<const float*>(row);
        for (int64_t i = 0; i < d; ++i) s += q[i] * k[i];
    } else if constexpr (DT == MNEMO_DTYPE_F16) {
        const uint16_t* k = reinterpret_cast<const uint16_t*>(row);
        for (int64_t i = 0; i < d; ++i) s += q[i] * mnemo::f16_to_f32(k[i]);
    } else {
        for (int64_t b = 0; b < d / kQ8Block; ++b, row += kQ8BlockBytes) {
            const int8_t* qs = reinterpret_cast<const int8_t*>(row + 2);
            float bs = 0.0f;
            for (int64_t i = 0; i < kQ8Block; ++i) bs += q[b * kQ8Block + i] * static_cast<float>(qs[i]);
            s += bs * q8_scale(row);
        }
    }
    return s;
}

template <int DT>
inline void axpy_scalar(float p, const char* row, float* acc, int64_t d) {
    if constexpr (DT == MNEMO_DTYPE_F32) {
        const float* v = reinterpret_cast<const float*>(row);
        for (int64_t i = 0; i < d; ++i) acc[i] += p * v[i];
    } else if constexpr (DT == MNEMO_DTYPE_F16) {
        const uint16_t* v = reinterpret_cast<const uint16_t*>(row);
        for (int64_t i = 0; i < d; ++i) acc[i] += p * mnemo::f16_to_f32(v[i]);
    } else {
        for (int64_t b = 0; b < d / kQ8Block; ++b, row += kQ8BlockBytes) {
            const int8_t* qs = reinterpret_cast<const int8_t*>(row + 2);
            const float ps = p * q8_scale(row);
            for (int64_t i = 0; i < kQ8Block; ++i) acc[b * kQ8Block + i] += ps * static_cast<float>(qs[i]);
        }
    }
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)

// A q8_0 block's scale through F16C (the portable f16_to_f32 is a dozen integer operations).
MNEMO_AVX2_INLINE float q8_scale_f16c(const char* block) {
    uint16_t h;
    std::memcpy(&h, block, 2);
    return _cvtsh_ss(h);
}

// 8 int8 of a q8_0 block as floats.
MNEMO_AVX2_INLINE __m256 q8_load8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

template <int DT>
MNEMO_AVX2_INLINE float dot_avx2(const float* q, const char* row, int64_t d) {
    if constexpr (DT == MNEMO_DTYPE_F32) {
        return avx2::dot(q, reinterpret_cast<const float*>(row), d);
    } else if constexpr (DT == MNEMO_DTYPE_F16) {
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 16 <= d; i += 16) {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), avx2::load8<MNEMO_DTYPE_F16>(row, static_cast<size_t>(i)), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), avx2::load8<MNEMO_DTYPE_F16>(row, static_cast<size_t>(i + 8)), s1);
        }
        for (; i + 8 <= d; i += 8)
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), avx2::load8<MNEMO_DTYPE_F16>(row, static_cast<size_t>(i)), s0);
        float s = avx2::hsum(_mm256_add_ps(s0, s1));
        for (; i < d; ++i) s += q[i] * avx2::load1<MNEMO_DTYPE_F16>(row, static_cast<size_t>(i));
        return s;
    } else {
        __m256 s = _mm256_setzero_ps();
        for (int64_t b = 0; b < d / kQ8Block; ++b, row += kQ8BlockBytes) {
            const int8_t* qs = reinterpret_cast<const int8_t*>(row + 2);
            const float* qb = q + b * kQ8Block;
            __m256 bs = _mm256_mul_ps(_mm256_loadu_ps(qb), q8_load8(qs));
            bs = _mm256_fmadd_ps(_mm256_loadu_ps(qb + 8), q8_load8(qs + 8), bs);
            bs = _mm256_fmadd_ps(_mm256_loadu_ps(qb + 16), q8_load8(qs + 16), bs);
            bs = _mm256_fmadd_ps(_mm256_loadu_ps(qb + 24), q8_load8(qs + 24), bs);
            s = _mm256_fmadd_ps(_mm256_set1_ps(q8_scale_f16c(row)), bs, s);
        }
        return avx2::hsum(s);
    }
}

template <int DT>
MNEMO_AVX2_INLINE void axpy_avx2(float p, const char* row, float* acc, int64_t d) {
    const __m256 pv = _mm256_set1_ps(p);
    if constexpr (DT == MNEMO_DTYPE_Q8_0) {
        for (int64_t b = 0; b < d / kQ8Block; ++b, row += kQ8BlockBytes) {
            const int8_t* qs = reinterpret_cast<const int8_t*>(row + 2);
            const __m256 ps = _mm256_set1_ps(p * q8_scale_f16c(row));
            float* a = acc + b * kQ8Block;
            for (int j = 0; j < 32; j += 8) _mm256_storeu_ps(a + j, _mm256_fmadd_ps(ps, q8_load8(qs + j), _mm256_loadu_ps(a + j)));
        }
    } else {
        int64_t i = 0;
        for (; i + 8 <= d; i += 8)
            _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(pv, avx2::load8<DT>(row, static_cast<size_t>(i)), _mm256_loadu_ps(acc + i)));
        for (; i < d; ++i) acc[i] += p * avx2::load1<DT>(row, static_cast<size_t>(i));
    }
}

// d floats -> d halves, round to nearest even (what mnemo::f32_to_f16 does). Not always_inline:
// KV_STORE calls it from a kernel compiled for baseline x86-64.
MNEMO_AVX2 inline void store_f16_avx2(const float* src, uint16_t* dst, int64_t d) {
    int64_t i = 0;
    for (; i + 8 <= d; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < d; ++i) dst[i] = mnemo::f32_to_f16(src[i]);
}

#endif

}  // namespace mnemo_cpu::kv
