// The AVX2 integer (decode) kernels of MATMUL with a block-quantized W: 8-bit dot products with
// VPMADDUBSW and VPMADDWD (the body: matmul_quant_x86.inl); and the AVX2 dequantizers of the prefill, which
// decode bands of W to f32 with the reference dequantizer's products (the same floats but for
// fused multiply-adds the compiler may form).
#if !defined(__x86_64__) && !defined(__i386__)
#error "arch/x86/ files are compiled for x86 targets only"
#endif

#define QK_NS avx2_decode
#define QK_TARGET __attribute__((target("avx2,fma,f16c")))
#define QK_VNNI 0
#define QK_ENTRY integer_kernel_avx2
#include "matmul_quant_x86.inl"

namespace mnemo_cpu::quant::avx2_decode {
namespace {

// 32 signed bytes as f32 times a scale (y[0..15] by lo, y[16..31] by hi), minus an offset.
QK_INLINE void store32(float* y, __m256i q, __m256 lo, __m256 hi, __m256 offset) {
    const __m128i a = _mm256_castsi256_si128(q), b = _mm256_extracti128_si256(q, 1);
    const __m256 f0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(a));
    const __m256 f1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(a, 8)));
    const __m256 f2 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
    const __m256 f3 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8)));
    _mm256_storeu_ps(y, _mm256_sub_ps(_mm256_mul_ps(lo, f0), offset));
    _mm256_storeu_ps(y + 8, _mm256_sub_ps(_mm256_mul_ps(lo, f1), offset));
    _mm256_storeu_ps(y + 16, _mm256_sub_ps(_mm256_mul_ps(hi, f2), offset));
    _mm256_storeu_ps(y + 24, _mm256_sub_ps(_mm256_mul_ps(hi, f3), offset));
}

template <int DT>
QK_TARGET void dequantize(const void* src, float* y, int64_t n) {
    const auto* p = static_cast<const uint8_t*>(src);
    const __m256 zero = _mm256_setzero_ps();
    const __m256i low = _mm256_set1_epi8(0x0f);
    if constexpr (DT == MNEMO_DTYPE_Q8_0 || DT == MNEMO_DTYPE_Q4_0) {
        constexpr int64_t kBytes = DT == MNEMO_DTYPE_Q8_0 ? 34 : 18;
        for (int64_t b = 0; b < n / 32; ++b, p += kBytes, y += 32) {
            const __m256 d = _mm256_set1_ps(f16_at(p));
            __m256i q;
            if constexpr (DT == MNEMO_DTYPE_Q8_0) {
                q = load32(p + 2);
            } else {
                const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
                q = _mm256_sub_epi8(_mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(qs, 4), qs), low), _mm256_set1_epi8(8));
            }
            store32(y, q, d, d, zero);
        }
    } else if constexpr (DT == MNEMO_DTYPE_Q4_K || DT == MNEMO_DTYPE_Q5_K) {
        constexpr bool kQ5 = DT == MNEMO_DTYPE_Q5_K;
        const __m256i bit4 = _mm256_set1_epi8(0x10);
        for (int64_t b = 0; b < n / 256; ++b, p += kQ5 ? 176 : 144, y += 256) {
            __m256 sc, mn;
            k4_scales(p + 4, sc, mn);
            alignas(32) float d1[8], m1[8];  // the reference's d * sc and dmin * m
            _mm256_store_ps(d1, _mm256_mul_ps(_mm256_set1_ps(f16_at(p)), sc));
            _mm256_store_ps(m1, _mm256_mul_ps(_mm256_set1_ps(f16_at(p + 2)), mn));
            const uint8_t* qs = p + (kQ5 ? 48 : 16);
            const __m256i qh = kQ5 ? load32(p + 16) : _mm256_setzero_si256();
            for (int i = 0; i < 4; ++i) {
                const __m256i bytes = load32(qs + 32 * i);
                __m256i lo = _mm256_and_si256(bytes, low), hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low);
                if constexpr (kQ5) {
                    const __m256i s0 = _mm256_set1_epi8(static_cast<char>(1 << (2 * i)));
                    const __m256i s1 = _mm256_set1_epi8(static_cast<char>(1 << (2 * i + 1)));
                    lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, s0), s0), bit4));
                    hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, s1), s1), bit4));
                }
                const __m256 dl = _mm256_set1_ps(d1[2 * i]), dh = _mm256_set1_ps(d1[2 * i + 1]);
                store32(y + 64 * i, lo, dl, dl, _mm256_set1_ps(m1[2 * i]));
                store32(y + 64 * i + 32, hi, dh, dh, _mm256_set1_ps(m1[2 * i + 1]));
            }
        }
    } else {
        const __m256i high = _mm256_set1_epi8(0x30), off = _mm256_set1_epi8(32);
        for (int64_t b = 0; b < n / 256; ++b, p += 210, y += 256) {
            const auto* scales = reinterpret_cast<const int8_t*>(p + 192);
            const float d = f16_at(p + 208);
            for (int h = 0; h < 2; ++h) {
                const __m256i a = load32(p + 64 * h), bq = load32(p + 64 * h + 32), qh = load32(p + 128 + 32 * h);
                __m256i q[4];
                q[0] = _mm256_or_si256(_mm256_and_si256(a, low), _mm256_and_si256(_mm256_slli_epi16(qh, 4), high));
                q[1] = _mm256_or_si256(_mm256_and_si256(bq, low), _mm256_and_si256(_mm256_slli_epi16(qh, 2), high));
                q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low), _mm256_and_si256(qh, high));
                q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bq, 4), low), _mm256_and_si256(_mm256_srli_epi16(qh, 2), high));
                for (int g = 0; g < 4; ++g)
                    store32(y + 128 * h + 32 * g, _mm256_sub_epi8(q[g], off), _mm256_set1_ps(d * static_cast<float>(scales[8 * h + 2 * g])),
                            _mm256_set1_ps(d * static_cast<float>(scales[8 * h + 2 * g + 1])), zero);
            }
        }
    }
}

}  // namespace
}  // namespace mnemo_cpu::quant::avx2_decode

namespace mnemo_cpu::quant {

DequantizeFn dequantize_avx2(int32_t dtype) {
    switch (dtype) {
        case MNEMO_DTYPE_Q8_0: return avx2_decode::dequantize<MNEMO_DTYPE_Q8_0>;
        case MNEMO_DTYPE_Q4_0: return avx2_decode::dequantize<MNEMO_DTYPE_Q4_0>;
        case MNEMO_DTYPE_Q4_K: return avx2_decode::dequantize<MNEMO_DTYPE_Q4_K>;
        case MNEMO_DTYPE_Q5_K: return avx2_decode::dequantize<MNEMO_DTYPE_Q5_K>;
        case MNEMO_DTYPE_Q6_K: return avx2_decode::dequantize<MNEMO_DTYPE_Q6_K>;
        default: return nullptr;
    }
}

}  // namespace mnemo_cpu::quant
