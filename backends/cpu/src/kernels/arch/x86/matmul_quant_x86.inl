// The integer kernels of MATMUL with a block-quantized W on x86, written once and compiled twice:
// by matmul_quant_avx2.cpp (AVX2: VPMADDUBSW + VPMADDWD) and by matmul_quant_vnni.cpp (AVX-512
// VNNI's VPDPBUSD on ymm registers). The including file defines
//   QK_NS      the namespace of this copy (inside mnemo_cpu::quant)
//   QK_TARGET  the function attribute of every function here (the copy's target ISA)
//   QK_VNNI    1 to use VPDPBUSD, 0 for VPMADDUBSW + VPMADDWD
//   QK_ENTRY   the name of the entry point, quant::integer_kernel_<isa>(dtype)
// and nothing here is compiled for another target: the two copies never share a function.
//
// Each thread quantizes every row of x into its scratch (quant::QuantizedRow: 8-bit blocks of 32
// with their scale, their exact f32 sum and its rounding residual), then streams its band of W
// rows once per chunk of x rows (decode: one chunk): for every block of 32 weights the integer dot product with the matching x block (8
// int32 lanes, each the sum of 4 consecutive products), converted to f32 and scaled by the weight
// block's and the x block's scales (eight blocks' scales at once where the layout allows).
// Q8_0's signed weights go through VPMADDUBSW's unsigned operand as |w| with x's signs flipped
// where w < 0 (sign trick); the unsigned codes of Q4_0 and the K-quants go in directly, and the
// result of codes centred on their middle (Q4_0 w = d (q - 8), Q6_K d sc (q - 32), Q4_K / Q5_K
// centred on 8 / 16) is restored from the x blocks' sums: x's rounding then moves the output by
// how the weights vary inside a block, not by their offset. That rounding is the only
// approximation against the reference (dequantize + f64): an NMSE of about 2e-5 of the output
// (tests/conformance/op_cases_matmul.hpp bounds it per type).

#if !defined(QK_NS) || !defined(QK_TARGET) || !defined(QK_VNNI) || !defined(QK_ENTRY)
#error "include matmul_quant_x86.inl from matmul_quant_avx2.cpp or matmul_quant_vnni.cpp only"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../../kernel_api.hpp"
#include "../../matmul_quant.hpp"

// (QK_INLINE stays defined for the rest of the including file.)
#define QK_INLINE QK_TARGET __attribute__((always_inline)) inline

namespace mnemo_cpu::quant::QK_NS {
namespace {

QK_INLINE float f16_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

QK_INLINE __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

QK_INLINE uint16_t u16_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return h;
}

QK_INLINE float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

QK_INLINE float hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// W streams through a thread's band of rows in order; fetching it a few KiB ahead of use keeps
// more lines in flight per core than the hardware prefetcher does on its own (1B q4_0 decode on
// the 2-vCPU EPYC: 38-39 -> 45-47 t/s; 2 KiB ahead gave 42-43, 8 KiB 43-44). Decode is bound by
// how many misses a core has outstanding, not by the memory's bandwidth: one thread reaches half
// of two threads' speed. `bytes` of W starting at p are about to be read.
#define QK_PREFETCH_AHEAD 4096
#define QK_PREFETCH(p, bytes)                                                              \
    do {                                                                                   \
        for (int64_t o_ = 0; o_ < static_cast<int64_t>(bytes); o_ += 64)                   \
            _mm_prefetch(reinterpret_cast<const char*>(p) + QK_PREFETCH_AHEAD + o_, _MM_HINT_T0); \
    } while (0)

// Lane i (0..7): sum of u[4i + j] * s[4i + j], j = 0..3, u unsigned and s signed bytes. No
// saturation for the operands used here: |u| <= 128 and |s| <= 127 (VPMADDUBSW's pair sums stay
// below 2^15).
QK_INLINE __m256i dot4(__m256i u, __m256i s) {
#if QK_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// Signed weights w (|w| = u, computed once per block) against signed x: 8 f32 partial sums.
QK_INLINE __m256 dot_signed(__m256i u, __m256i w, const int8_t* x) {
    return _mm256_cvtepi32_ps(dot4(u, _mm256_sign_epi8(load32(x), w)));
}

// Lane j of v in every lane.
QK_INLINE __m256 lane(__m256 v, int j) { return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(j)); }

// ------------------------------------------------------------------ x rows to 8-bit blocks

QK_TARGET void quantize_rows(const float* x, int64_t rows, int64_t k, void* out) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t r = 0; r < rows; ++r) {
        auto* base = static_cast<uint8_t*>(out) + static_cast<size_t>(r) * row_bytes(k);
        auto* q = reinterpret_cast<int8_t*>(base);
        auto* d = reinterpret_cast<float*>(base + k);
        float* s = d + k / 32;
        float* res = s + k / 32;
        float* halves = res + k / 32;
        const float* xr = x + r * k;
        for (int64_t b = 0; b < k / 32; ++b) {
            const float* xb = xr + 32 * b;
            const __m256 v0 = _mm256_loadu_ps(xb), v1 = _mm256_loadu_ps(xb + 8), v2 = _mm256_loadu_ps(xb + 16),
                         v3 = _mm256_loadu_ps(xb + 24);
            s[b] = hsum(_mm256_add_ps(_mm256_add_ps(v0, v1), _mm256_add_ps(v2, v3)));
            const __m256 a = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                                           _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
            const float amax = hmax(a);
            d[b] = amax / 127.0f;
            const __m256 id = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
            // Round to nearest (MXCSR's default), |q| <= 127; pack 4 x 8 int32 into 32 int8 in order.
            const __m256i q0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, id)), q1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, id));
            const __m256i q2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, id)), q3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, id));
            const __m256i q01 = _mm256_packs_epi32(q0, q1), q23 = _mm256_packs_epi32(q2, q3);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b), _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q01, q23), order));
            const float h0 = hsum(_mm256_cvtepi32_ps(_mm256_add_epi32(q0, q1))), h1 = hsum(_mm256_cvtepi32_ps(_mm256_add_epi32(q2, q3)));
            halves[2 * b] = d[b] * h0;
            halves[2 * b + 1] = d[b] * h1;
            res[b] = s[b] - d[b] * (h0 + h1);
        }
    }
}

// Q4_0's layout of x (row_32): in every group of 8 blocks, blocks 2i and 2i + 1 become [first
// halves of both | second halves of both], as a register of two Q4_0 blocks holds its weights.
QK_TARGET void interleave_pairs(void* rows_base, int64_t rows, int64_t k) {
    for (int64_t r = 0; r < rows; ++r) {
        auto* q = static_cast<uint8_t*>(rows_base) + static_cast<size_t>(r) * row_bytes(k);
        for (int64_t b = 0; b + 2 <= k / 32 / 8 * 8; b += 2) {
            const __m256i a = load32(q + 32 * b), c = load32(q + 32 * b + 32);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b), _mm256_permute2x128_si256(a, c, 0x20));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b + 32), _mm256_permute2x128_si256(a, c, 0x31));
        }
    }
}

// ------------------------------------------------------------------ one row of W against NR rows of x
// Each writes out[n] = W_row . x_n for n < NR. Two accumulators per x row (even and odd blocks, or
// the two sub-blocks of a pair) keep two FMA chains in flight.

// Q8_0 (34 bytes per 32 weights: f16 d, 32 int8; w = d q) and Q4_0 (18 bytes: f16 d, 16 bytes of
// which byte j holds weights j (low nibble) and j + 16 (high nibble); w = d (q - 8)): block b of a
// row into acc.
template <int DT, int MW, int NR>
QK_INLINE void block32(const uint8_t* const* w, int64_t b, const QuantizedRow* x, __m256 (*acc)[NR]) {
    for (int mw = 0; mw < MW; ++mw) {
        const uint8_t* p = w[mw] + (DT == MNEMO_DTYPE_Q8_0 ? 34 : 18) * b;
        __m256i q;
        if constexpr (DT == MNEMO_DTYPE_Q8_0) {
            q = load32(p + 2);
        } else {
            const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
            q = _mm256_sub_epi8(_mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(qs, 4), qs), _mm256_set1_epi8(0x0f)),
                                _mm256_set1_epi8(8));
        }
        const __m256i u = _mm256_sign_epi8(q, q);
        const float d = f16_at(p);
        for (int n = 0; n < NR; ++n)
            acc[mw][n] = _mm256_fmadd_ps(dot_signed(u, q, x[n].q + 32 * b), _mm256_set1_ps(d * x[n].d[b]), acc[mw][n]);
    }
}

template <int DT, int MW, int NR>
QK_INLINE void row_32(const uint8_t* const* w, int64_t k, const QuantizedRow* x, float (*out)[4]) {
    constexpr int64_t kBytes = DT == MNEMO_DTYPE_Q8_0 ? 34 : 18;
    // What the unsigned codes carry on top of the weight's: Q4_0's q = w/d + 8, Q8_0's q + 128.
    // Q8_0 goes in unsigned only for VNNI's prefill pairs (1B pp128 98 -> 114-118 t/s); decode
    // measured 4 % faster with the sign trick, and AVX2's VPMADDUBSW would saturate.
    constexpr bool kQ8Unsigned = DT == MNEMO_DTYPE_Q8_0 && QK_VNNI && MW == 2;
    constexpr float kCodeOffset = DT == MNEMO_DTYPE_Q4_0 ? 8.0f : 128.0f;
    // With one W row, even and odd blocks go to two accumulators (two FMA chains in flight); with
    // more, the rows are the independent chains.
    constexpr int kChains = MW == 1 ? 2 : 1;
    __m256 acc[kChains][MW][NR], offset[MW][NR];
    for (int mw = 0; mw < MW; ++mw)
        for (int n = 0; n < NR; ++n) {
            offset[mw][n] = _mm256_setzero_ps();
            for (int c = 0; c < kChains; ++c) acc[c][mw][n] = _mm256_setzero_ps();
        }
    const int64_t nb = k / 32;
    int64_t b = 0;
    // Eight blocks at a time: their scales in one vector (the f16s gathered), multiplied by the x
    // blocks' scales at once. Q4_0's codes go in unsigned, its -8 restored from x's block sums:
    // d (q - 8) . x~ = d (dx q . qx - 8 dx sum(qx)), dx sum(qx) = s - r.
    for (; b + 8 <= nb; b += 8) {
        __m256 scale[MW][NR];
        for (int mw = 0; mw < MW; ++mw) {
            const uint8_t* p = w[mw] + kBytes * b;
            QK_PREFETCH(p, kBytes * 8);
            __m128i dh = _mm_setzero_si128();
            dh = _mm_insert_epi16(dh, u16_at(p), 0);
            dh = _mm_insert_epi16(dh, u16_at(p + kBytes), 1);
            dh = _mm_insert_epi16(dh, u16_at(p + 2 * kBytes), 2);
            dh = _mm_insert_epi16(dh, u16_at(p + 3 * kBytes), 3);
            dh = _mm_insert_epi16(dh, u16_at(p + 4 * kBytes), 4);
            dh = _mm_insert_epi16(dh, u16_at(p + 5 * kBytes), 5);
            dh = _mm_insert_epi16(dh, u16_at(p + 6 * kBytes), 6);
            dh = _mm_insert_epi16(dh, u16_at(p + 7 * kBytes), 7);
            const __m256 dw = _mm256_cvtph_ps(dh);
            for (int n = 0; n < NR; ++n) {
                scale[mw][n] = _mm256_mul_ps(dw, _mm256_loadu_ps(x[n].d + b));
                if constexpr (DT == MNEMO_DTYPE_Q4_0 || kQ8Unsigned)
                    offset[mw][n] = _mm256_fnmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(kCodeOffset)),
                                                     _mm256_sub_ps(_mm256_loadu_ps(x[n].s + b), _mm256_loadu_ps(x[n].r + b)), offset[mw][n]);
            }
        }
        if constexpr (kQ8Unsigned) {
            // VPDPBUSD neither saturates nor needs the sign trick: the codes go in as q + 128
            // (unsigned), and the 128 comes back out of x's block sums with the offset above.
#pragma GCC unroll 8
            for (int j = 0; j < 8; ++j)
                for (int mw = 0; mw < MW; ++mw) {
                    const __m256i u = _mm256_xor_si256(load32(w[mw] + kBytes * (b + j) + 2), _mm256_set1_epi8(static_cast<char>(0x80)));
                    for (int n = 0; n < NR; ++n)
                        acc[j % kChains][mw][n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot4(u, load32(x[n].q + 32 * (b + j)))),
                                                                  lane(scale[mw][n], j), acc[j % kChains][mw][n]);
                }
        } else if constexpr (DT == MNEMO_DTYPE_Q8_0) {
#pragma GCC unroll 8
            for (int j = 0; j < 8; ++j)
                for (int mw = 0; mw < MW; ++mw) {
                    const __m256i q = load32(w[mw] + kBytes * (b + j) + 2);
                    const __m256i u = _mm256_sign_epi8(q, q);
                    for (int n = 0; n < NR; ++n)
                        acc[j % kChains][mw][n] =
                            _mm256_fmadd_ps(dot_signed(u, q, x[n].q + 32 * (b + j)), lane(scale[mw][n], j), acc[j % kChains][mw][n]);
                }
        } else {
            // Two blocks per register: their 16 bytes side by side, so the low nibbles are the two
            // blocks' first halves and the high nibbles their second halves; x's blocks were
            // interleaved the same way (interleave_pairs), and lanes 0-3 / 4-7 of each dot product
            // belong to the first / second block.
#pragma GCC unroll 4
            for (int j = 0; j < 8; j += 2) {
                __m256i lo[MW], hi[MW];
                for (int mw = 0; mw < MW; ++mw) {
                    const uint8_t* p = w[mw] + kBytes * b;
                    const __m256i v = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(p + kBytes * (j + 1) + 2),
                                                          reinterpret_cast<const __m128i*>(p + kBytes * j + 2));
                    lo[mw] = _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
                    hi[mw] = _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f));
                }
                for (int n = 0; n < NR; ++n) {
                    const int8_t* xp = x[n].q + 32 * (b + j);
                    const __m256i x0 = load32(xp), x1 = load32(xp + 32);
                    for (int mw = 0; mw < MW; ++mw) {
                        const __m256 pair =
                            _mm256_permutevar8x32_ps(scale[mw][n], _mm256_setr_epi32(j, j, j, j, j + 1, j + 1, j + 1, j + 1));
                        acc[0][mw][n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot4(lo[mw], x0)), pair, acc[0][mw][n]);
                        acc[kChains - 1][mw][n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot4(hi[mw], x1)), pair, acc[kChains - 1][mw][n]);
                    }
                }
            }
        }
    }
    for (; b < nb; ++b) block32<DT, MW, NR>(w, b, x, acc[b % kChains]);
    for (int mw = 0; mw < MW; ++mw)
        for (int n = 0; n < NR; ++n) {
            __m256 t = _mm256_add_ps(acc[0][mw][n], offset[mw][n]);
            if constexpr (kChains == 2) t = _mm256_add_ps(t, acc[1][mw][n]);
            out[mw][n] = hsum(t);
        }
}

// The 6-bit scales and mins of the 8 sub-blocks of a Q4_K / Q5_K block from its 12 bytes, as
// floats: sub-blocks 0-3 keep 6 bits in bytes j (scale) and j + 4 (min); 4-7 keep their low 4 bits
// in byte j + 4 and their high 2 bits in the top bits of bytes j - 4 (scale) and j (min).
QK_INLINE void k4_scales(const uint8_t* p, __m256& sc, __m256& mn) {
    uint32_t a, b, c;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + 4, 4);
    std::memcpy(&c, p + 8, 4);
    const uint64_t scales = (a & 0x3f3f3f3fu) | static_cast<uint64_t>((c & 0x0f0f0f0fu) | (((a >> 6) & 0x03030303u) << 4)) << 32;
    const uint64_t mins = (b & 0x3f3f3f3fu) | static_cast<uint64_t>(((c >> 4) & 0x0f0f0f0fu) | (((b >> 6) & 0x03030303u) << 4)) << 32;
    sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(scales))));
    mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(mins))));
}

// Q4_K (144 bytes per 256 weights) and Q5_K (176): f16 d, f16 dmin, 12 bytes of scales and mins,
// [Q5_K: 32 bytes of fifth bits], 128 bytes of nibbles. Chunk i (0..3) of 64 weights: 32 bytes
// whose low nibbles are sub-block 2i and high nibbles sub-block 2i + 1; their fifth bits are bits
// 2i and 2i + 1 of the 32 qh bytes. w = d sc q - dmin m. The unsigned codes go straight into the
// integer dot products, but the result is the one of codes centred on c = 8 (16 for Q5_K), so that
// x's rounding moves it by how the weights vary inside a sub-block, not by their common offset:
// d sc (q - c) . x~ + (d sc c - dmin m) sum(x) = d sc (dx q . qx + c (sum(x) - dx sum(qx))) - dmin m sum(x),
// the last terms from the x block's exact sum and rounding residual, eight sub-blocks at once.
template <int MW, int NR, bool Q5>
QK_INLINE void row_k4(const uint8_t* const* w, int64_t k, const QuantizedRow* x, float (*out)[4]) {
    constexpr int64_t kBytes = Q5 ? 176 : 144;
    constexpr float kCentre = Q5 ? 16.0f : 8.0f;
    constexpr int kChains = MW == 1 ? 2 : 1;  // as row_32
    __m256 acc[kChains][MW][NR], offset[MW][NR];
    for (int mw = 0; mw < MW; ++mw)
        for (int n = 0; n < NR; ++n) {
            offset[mw][n] = _mm256_setzero_ps();
            for (int c = 0; c < kChains; ++c) acc[c][mw][n] = _mm256_setzero_ps();
        }
    const __m256i low = _mm256_set1_epi8(0x0f), bit4 = _mm256_set1_epi8(0x10);
    for (int64_t sb = 0; sb < k / 256; ++sb) {
        __m256 scale[MW][NR];  // d sc dx of each sub-block
        const uint8_t* qs[MW];
        __m256i qh[MW];
        for (int mw = 0; mw < MW; ++mw) {
            const uint8_t* p = w[mw] + kBytes * sb;
            QK_PREFETCH(p, kBytes);
            const float d = f16_at(p), dmin = f16_at(p + 2);
            __m256 sc, mn;
            k4_scales(p + 4, sc, mn);
            const __m256 dsc = _mm256_mul_ps(sc, _mm256_set1_ps(d));
            const __m256 centred = _mm256_mul_ps(dsc, _mm256_set1_ps(kCentre)), dmn = _mm256_mul_ps(mn, _mm256_set1_ps(dmin));
            for (int n = 0; n < NR; ++n) {
                scale[mw][n] = _mm256_mul_ps(dsc, _mm256_loadu_ps(x[n].d + 8 * sb));
                offset[mw][n] = _mm256_fmadd_ps(centred, _mm256_loadu_ps(x[n].r + 8 * sb), offset[mw][n]);
                offset[mw][n] = _mm256_fnmadd_ps(dmn, _mm256_loadu_ps(x[n].s + 8 * sb), offset[mw][n]);
            }
            qs[mw] = p + (Q5 ? 48 : 16);
            qh[mw] = Q5 ? load32(p + 16) : _mm256_setzero_si256();
        }
        for (int i = 0; i < 4; ++i) {
            __m256i lo[MW], hi[MW];
            for (int mw = 0; mw < MW; ++mw) {
                const __m256i bytes = load32(qs[mw] + 32 * i);
                lo[mw] = _mm256_and_si256(bytes, low);
                hi[mw] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low);
                if constexpr (Q5) {
                    const __m256i m0 = _mm256_set1_epi8(static_cast<char>(1 << (2 * i)));
                    const __m256i m1 = _mm256_set1_epi8(static_cast<char>(1 << (2 * i + 1)));
                    lo[mw] = _mm256_or_si256(lo[mw], _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh[mw], m0), m0), bit4));
                    hi[mw] = _mm256_or_si256(hi[mw], _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh[mw], m1), m1), bit4));
                }
            }
            const int64_t xq = 32 * (8 * sb + 2 * i);
            for (int n = 0; n < NR; ++n) {
                const __m256i x0 = load32(x[n].q + xq), x1 = load32(x[n].q + xq + 32);
                for (int mw = 0; mw < MW; ++mw) {
                    acc[0][mw][n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot4(lo[mw], x0)), lane(scale[mw][n], 2 * i), acc[0][mw][n]);
                    acc[kChains - 1][mw][n] =
                        _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot4(hi[mw], x1)), lane(scale[mw][n], 2 * i + 1), acc[kChains - 1][mw][n]);
                }
            }
        }
    }
    for (int mw = 0; mw < MW; ++mw)
        for (int n = 0; n < NR; ++n) {
            __m256 t = _mm256_add_ps(acc[0][mw][n], offset[mw][n]);
            if constexpr (kChains == 2) t = _mm256_add_ps(t, acc[1][mw][n]);
            out[mw][n] = hsum(t);
        }
}

// Q6_K (210 bytes per 256 weights): 128 bytes of low nibbles, 64 bytes of 2-bit highs, 16 int8
// scales, f16 d. Half h (128 weights), 32-weight group g (0..3): low 4 bits from byte l (g = 0, 2)
// or l + 32 (g = 1, 3) of the half's 64 ql bytes (low nibble for g < 2, high for g >= 2), high 2
// bits from bits 2g of the half's 32 qh bytes; weights l < 16 of the group use scale 2g of the
// half's 8, the others scale 2g + 1: sub-block j of 16 weights has scale j. w = d sc (q - 32): the
// unsigned codes go into the dot products, the -32 comes from x's sums over each 16 weights.
template <int MW, int NR>
QK_INLINE void row_q6_k(const uint8_t* const* w, int64_t k, const QuantizedRow* x, float (*out)[4]) {
    constexpr int kChains = MW == 1 ? 2 : 1;  // as row_32
    __m256 acc[kChains][MW][NR], offset[MW][NR];
    for (int mw = 0; mw < MW; ++mw)
        for (int n = 0; n < NR; ++n) {
            offset[mw][n] = _mm256_setzero_ps();
            for (int c = 0; c < kChains; ++c) acc[c][mw][n] = _mm256_setzero_ps();
        }
    const __m256i low = _mm256_set1_epi8(0x0f), high = _mm256_set1_epi8(0x30);
    const __m256 minus32 = _mm256_set1_ps(-32.0f);
    for (int64_t sb = 0; sb < k / 256; ++sb) {
        __m256 sc[MW][2];
        for (int mw = 0; mw < MW; ++mw) {
            const uint8_t* p = w[mw] + 210 * sb;
            QK_PREFETCH(p, 210);
            const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 192));
            const __m256 d = _mm256_set1_ps(f16_at(p + 208));
            sc[mw][0] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8)));
            sc[mw][1] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc8, 8))));
            for (int n = 0; n < NR; ++n) {
                const float* hx = x[n].h + 16 * sb;
                offset[mw][n] = _mm256_fmadd_ps(_mm256_mul_ps(sc[mw][0], minus32), _mm256_loadu_ps(hx), offset[mw][n]);
                offset[mw][n] = _mm256_fmadd_ps(_mm256_mul_ps(sc[mw][1], minus32), _mm256_loadu_ps(hx + 8), offset[mw][n]);
            }
        }
        for (int h = 0; h < 2; ++h) {
            __m256i q[MW][4];
            for (int mw = 0; mw < MW; ++mw) {
                const uint8_t* p = w[mw] + 210 * sb;
                const __m256i a = load32(p + 64 * h), b = load32(p + 64 * h + 32), qh = load32(p + 128 + 32 * h);
                q[mw][0] = _mm256_or_si256(_mm256_and_si256(a, low), _mm256_and_si256(_mm256_slli_epi16(qh, 4), high));
                q[mw][1] = _mm256_or_si256(_mm256_and_si256(b, low), _mm256_and_si256(_mm256_slli_epi16(qh, 2), high));
                q[mw][2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low), _mm256_and_si256(qh, high));
                q[mw][3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), low), _mm256_and_si256(_mm256_srli_epi16(qh, 2), high));
            }
#pragma GCC unroll 4
            for (int g = 0; g < 4; ++g) {
                // Lanes 0-3 of the dot product sum weights 0..15 of the group, lanes 4-7 weights 16..31.
                const __m256i sel = _mm256_setr_epi32(2 * g, 2 * g, 2 * g, 2 * g, 2 * g + 1, 2 * g + 1, 2 * g + 1, 2 * g + 1);
                const int64_t xb = 8 * sb + 4 * h + g;
                for (int n = 0; n < NR; ++n) {
                    const __m256i xv = load32(x[n].q + 32 * xb);
                    const __m256 dx = _mm256_broadcast_ss(x[n].d + xb);
                    for (int mw = 0; mw < MW; ++mw)
                        acc[g % kChains][mw][n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot4(q[mw][g], xv)),
                                                                  _mm256_mul_ps(_mm256_permutevar8x32_ps(sc[mw][h], sel), dx),
                                                                  acc[g % kChains][mw][n]);
                }
            }
        }
    }
    for (int mw = 0; mw < MW; ++mw)
        for (int n = 0; n < NR; ++n) {
            __m256 t = _mm256_add_ps(acc[0][mw][n], offset[mw][n]);
            if constexpr (kChains == 2) t = _mm256_add_ps(t, acc[1][mw][n]);
            out[mw][n] = hsum(t);
        }
}

// out[mw][n] = W row w[mw] . x row n, for MW rows of W and NR rows of x.
template <int DT, int MW, int NR>
QK_INLINE void rows(const uint8_t* const* w, int64_t k, const QuantizedRow* x, float (*out)[4]) {
    if constexpr (DT == MNEMO_DTYPE_Q8_0 || DT == MNEMO_DTYPE_Q4_0) row_32<DT, MW, NR>(w, k, x, out);
    else if constexpr (DT == MNEMO_DTYPE_Q4_K) row_k4<MW, NR, false>(w, k, x, out);
    else if constexpr (DT == MNEMO_DTYPE_Q5_K) row_k4<MW, NR, true>(w, k, x, out);
    else row_q6_k<MW, NR>(w, k, x, out);
}



template <int DT>
QK_TARGET void integer_matmul(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_node& nd = p.node;
    const int64_t m = nd.inputs[1].shape[0], k = nd.inputs[1].shape[1], n = outer_rows(nd.inputs[0]);
    int64_t m0, m1;
    split_range(m, ith, nth, 8, &m0, &m1);
    if (m0 >= m1) return;
    const auto* x = static_cast<const float*>(p.in[0]);
    const auto* w = static_cast<const uint8_t*>(p.in[1]);
    auto* y = static_cast<float*>(p.out);
    void* xq = call.scratch + static_cast<size_t>(ith) * call.scratch_stride;
    quantize_rows(x, n, k, xq);
    if constexpr (DT == MNEMO_DTYPE_Q4_0) interleave_pairs(xq, n, k);
    const uint64_t wrow = dtype_row_bytes(DT, k);
    const int64_t chunk = chunk_rows(k);
    QuantizedRow xrows[kChunkRows];
    float out[2][4];
    // Decode (n <= 8) is one chunk: W streams from memory once, a row at a time. Prefill takes the
    // x rows a chunk at a time, and the thread's band of W once per chunk, two W rows at a time
    // where the copy has the registers for it (AVX-512VL's 32): each x block loaded from L2 then
    // serves both.
    constexpr int kMw = QK_VNNI ? 2 : 1;
    const bool pair_rows = kMw == 2 && n > kDecodeMaxRows;
    for (int64_t c0 = 0; c0 < n; c0 += chunk) {
        const int64_t c1 = std::min(n, c0 + chunk);
        for (int64_t r = c0; r < c1; ++r) xrows[r - c0] = row_at(xq, k, r);
        for (int64_t i = m0; i < m1; i += pair_rows ? 2 : 1) {
            const bool two = pair_rows && i + 1 < m1;
            const uint8_t* wr[2] = {w + static_cast<uint64_t>(i) * wrow, w + static_cast<uint64_t>(i + (two ? 1 : 0)) * wrow};
            for (int64_t r = c0; r < c1; r += 4) {
                const int64_t nr = std::min<int64_t>(4, c1 - r);
                const QuantizedRow* xr = xrows + (r - c0);
                if (two) {
                    switch (nr) {
                        case 1: rows<DT, kMw, 1>(wr, k, xr, out); break;
                        case 2: rows<DT, kMw, 2>(wr, k, xr, out); break;
                        case 3: rows<DT, kMw, 3>(wr, k, xr, out); break;
                        default: rows<DT, kMw, 4>(wr, k, xr, out); break;
                    }
                } else {
                    switch (nr) {
                        case 1: rows<DT, 1, 1>(wr, k, xr, out); break;
                        case 2: rows<DT, 1, 2>(wr, k, xr, out); break;
                        case 3: rows<DT, 1, 3>(wr, k, xr, out); break;
                        default: rows<DT, 1, 4>(wr, k, xr, out); break;
                    }
                }
                for (int mw = 0; mw < (two ? 2 : 1); ++mw)
                    for (int64_t j = 0; j < nr; ++j) y[(r + j) * m + i + mw] = out[mw][j];
            }
        }
    }
}


}  // namespace
}  // namespace mnemo_cpu::quant::QK_NS

namespace mnemo_cpu::quant {

KernelFn QK_ENTRY(int32_t dtype) {
    switch (dtype) {
        case MNEMO_DTYPE_Q8_0: return QK_NS::integer_matmul<MNEMO_DTYPE_Q8_0>;
        case MNEMO_DTYPE_Q4_0: return QK_NS::integer_matmul<MNEMO_DTYPE_Q4_0>;
        case MNEMO_DTYPE_Q4_K: return QK_NS::integer_matmul<MNEMO_DTYPE_Q4_K>;
        case MNEMO_DTYPE_Q5_K: return QK_NS::integer_matmul<MNEMO_DTYPE_Q5_K>;
        case MNEMO_DTYPE_Q6_K: return QK_NS::integer_matmul<MNEMO_DTYPE_Q6_K>;
        default: return nullptr;
    }
}

}  // namespace mnemo_cpu::quant
