// MATMUL with a Q8_0 or Q4_0 W against several rows of x (batched decode, prefill), on AVX-512
// VNNI: eight rows of W at a time, each 32-weight block of the eight transposed in registers so
// that one VPDPBUSD multiplies four weights of all eight rows by the same four bytes of x,
// broadcast from memory. A block of one x row then costs 8 VPDPBUSD, one conversion and one FMA
// for eight outputs, where the row-at-a-time kernels (matmul_quant_x86.inl) spend a conversion,
// a lane shuffle and an FMA per row of W: at batch 16 those, not the dot products, bounded the
// step (small Llama q8_0, 2-vCPU EPYC: matmul was 94 % of a batch-16 decode step). Single
// thread, K = 1024, M = 32000: N = 4 2.8 -> 2.0 ms, N = 16 9.1 -> 4.7 ms, N = 64 (M = 4096) 4.4 -> 2.3 ms.
//
// The transposition (24 shuffles) and the eight rows' scales are paid once per block of the
// tile and shared by every x row of the chunk; the eight outputs of an x row land in one vector,
// in the order of W's rows, with no horizontal sum. VPDPBUSD takes unsigned bytes times signed
// bytes: W's codes go in unsigned (Q8_0's q + 128, Q4_0's nibbles as stored) and x's signed, and
// the offset comes back exactly in integers, -offset * sum(qx) being where each block's
// accumulator starts. The arithmetic is the integer kernels': x quantized to 8 bits per block of
// 32 (quantize_rows_vnni), an exact integer dot product per block, scaled by dw * dx in f32.
#if !defined(__x86_64__) && !defined(__i386__)
#error "arch/x86/ files are compiled for x86 targets only"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../../kernel_api.hpp"
#include "../../matmul_quant.hpp"

#define TV_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))
#define TV_INLINE TV_TARGET __attribute__((always_inline)) inline

namespace mnemo_cpu::quant {
namespace {

constexpr int kTileRows = 8;  // rows of W per tile: the eight int32 lanes of a ymm register

template <int DT>
struct Layout;
template <>
struct Layout<MNEMO_DTYPE_Q8_0> {
    static constexpr int64_t kBytes = 34;    // f16 d, 32 int8 q; w = d q
    static constexpr int32_t kOffset = 128;  // the unsigned code is q + 128
};
template <>
struct Layout<MNEMO_DTYPE_Q4_0> {
    static constexpr int64_t kBytes = 18;  // f16 d, 16 bytes: weight j low nibble, j + 16 high; w = d (q - 8)
    static constexpr int32_t kOffset = 8;
};

// The 32 unsigned codes of the block at p, in the order of the block's weights.
template <int DT>
TV_INLINE __m256i codes(const uint8_t* p) {
    if constexpr (DT == MNEMO_DTYPE_Q8_0) {
        return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2)), _mm256_set1_epi8(static_cast<char>(0x80)));
    } else {
        const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
        return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(qs, 4), qs), _mm256_set1_epi8(0x0f));
    }
}

// v[r] holds the eight dwords of row r; afterwards v[c] holds dword c of rows 0..7 in lanes 0..7.
TV_INLINE void transpose8x8(__m256i* v) {
    __m256i a[8], b[8];
    for (int i = 0; i < 4; ++i) {
        a[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);      // c0 c0 c1 c1 | c4 c4 c5 c5 of rows 2i, 2i+1
        a[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);  // c2 c2 c3 c3 | c6 c6 c7 c7
    }
    for (int h = 0; h < 2; ++h) {  // rows 0-3, then 4-7
        const __m256i* s = a + 4 * h;
        b[4 * h + 0] = _mm256_unpacklo_epi64(s[0], s[2]);  // c0 of four rows | c4
        b[4 * h + 1] = _mm256_unpackhi_epi64(s[0], s[2]);  // c1 | c5
        b[4 * h + 2] = _mm256_unpacklo_epi64(s[1], s[3]);  // c2 | c6
        b[4 * h + 3] = _mm256_unpackhi_epi64(s[1], s[3]);  // c3 | c7
    }
    for (int c = 0; c < 4; ++c) {
        v[c] = _mm256_permute2x128_si256(b[c], b[4 + c], 0x20);
        v[c + 4] = _mm256_permute2x128_si256(b[c], b[4 + c], 0x31);
    }
}

TV_INLINE uint16_t u16_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return h;
}

TV_INLINE __m256i broadcast_dword(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// -offset * (sum of each x block's 32 codes), exact integers: where the block's accumulator starts,
// taking back the offset of W's unsigned codes.
TV_TARGET void block_starts(const void* xq, int64_t rows, int64_t k, int32_t offset, int32_t* starts) {
    const __m256i ones = _mm256_set1_epi8(1);
    const int64_t nb = k / 32;
    for (int64_t r = 0; r < rows; ++r) {
        const QuantizedRow x = row_at(xq, k, r);
        for (int64_t b = 0; b < nb; ++b) {
            const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + 32 * b)));
            __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
            t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
            starts[r * nb + b] = -offset * _mm_cvtsi128_si32(t);
        }
    }
}

// acc[j] += block b of the W tile (t: transposed codes, dw: scales) . block b of x row j, j < NR.
// Each x row's dot product runs as two chains of VPDPBUSD (even and odd dwords) and NR rows side
// by side: one chain of eight waited on the instruction's latency (single thread, N = 16, K =
// 1024, M = 256, W in L2: 74 us, the row-at-a-time kernels' 72; with the two chains: 43).
template <int NR>
TV_INLINE void x_rows(const __m256i* t, __m256 dw, const QuantizedRow* x, const int32_t* const* starts, int64_t b, __m256* acc) {
    __m256i even[NR], odd[NR];
    for (int j = 0; j < NR; ++j) {
        even[j] = _mm256_set1_epi32(starts[j][b]);
        odd[j] = _mm256_setzero_si256();
    }
    for (int c = 0; c < 8; c += 2)
        for (int j = 0; j < NR; ++j) {
            const int8_t* q = x[j].q + 32 * b + 4 * c;
            even[j] = _mm256_dpbusd_epi32(even[j], t[c], broadcast_dword(q));
            odd[j] = _mm256_dpbusd_epi32(odd[j], t[c + 1], broadcast_dword(q + 4));
        }
    for (int j = 0; j < NR; ++j)
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(even[j], odd[j])), _mm256_mul_ps(dw, _mm256_set1_ps(x[j].d[b])), acc[j]);
}

// acc[j] (lanes: the tile's rows) = W tile . x row j, for the chunk's `count` x rows. rows[r]:
// the tile's row r. The tile's rows lie one after another in memory, and so does the next tile
// of the band: fetching it into L2 while this one is computed turns eight short streams, which
// the hardware prefetcher follows badly (single thread, N = 4, M = 32000: 5.5 ms, where reading W
// alone would take 1.4), into one long one (2.0 ms; into L1 instead of L2: 2.3).
template <int DT>
TV_INLINE void tile_chunk(const uint8_t* const* rows, const uint8_t* next_tile, int64_t nb, const QuantizedRow* x,
                          const int32_t* const* starts, int64_t count, __m256* acc) {
    constexpr int64_t kBytes = Layout<DT>::kBytes;
    for (int64_t j = 0; j < count; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        if (next_tile)
            for (int64_t o = kTileRows * kBytes * b; o < kTileRows * kBytes * (b + 1); o += 64)
                _mm_prefetch(reinterpret_cast<const char*>(next_tile) + o, _MM_HINT_T1);
        __m256i t[kTileRows];
        for (int r = 0; r < kTileRows; ++r) t[r] = codes<DT>(rows[r] + kBytes * b);
        transpose8x8(t);
        // The eight rows' f16 scales (a gather measured no faster).
        __m128i dh = _mm_setzero_si128();
        dh = _mm_insert_epi16(dh, u16_at(rows[0] + kBytes * b), 0);
        dh = _mm_insert_epi16(dh, u16_at(rows[1] + kBytes * b), 1);
        dh = _mm_insert_epi16(dh, u16_at(rows[2] + kBytes * b), 2);
        dh = _mm_insert_epi16(dh, u16_at(rows[3] + kBytes * b), 3);
        dh = _mm_insert_epi16(dh, u16_at(rows[4] + kBytes * b), 4);
        dh = _mm_insert_epi16(dh, u16_at(rows[5] + kBytes * b), 5);
        dh = _mm_insert_epi16(dh, u16_at(rows[6] + kBytes * b), 6);
        dh = _mm_insert_epi16(dh, u16_at(rows[7] + kBytes * b), 7);
        const __m256 dw = _mm256_cvtph_ps(dh);
        int64_t j = 0;
        for (; j + 4 <= count; j += 4) x_rows<4>(t, dw, x + j, starts + j, b, acc + j);
        for (; j < count; ++j) x_rows<1>(t, dw, x + j, starts + j, b, acc + j);
    }
}

template <int DT>
TV_TARGET void tile_matmul(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_node& nd = p.node;
    const int64_t m = nd.inputs[1].shape[0], k = nd.inputs[1].shape[1], n = outer_rows(nd.inputs[0]);
    int64_t m0, m1;
    split_range(m, ith, nth, kTileRows, &m0, &m1);
    if (m0 >= m1) return;
    const auto* x = static_cast<const float*>(p.in[0]);
    const auto* w = static_cast<const uint8_t*>(p.in[1]);
    auto* y = static_cast<float*>(p.out);
    auto* xq = reinterpret_cast<uint8_t*>(call.scratch + static_cast<size_t>(ith) * call.scratch_stride);
    auto* starts = reinterpret_cast<int32_t*>(xq + static_cast<size_t>(n) * row_bytes(k));
    quantize_rows_vnni(x, n, k, xq);
    block_starts(xq, n, k, Layout<DT>::kOffset, starts);
    const uint64_t wrow = dtype_row_bytes(DT, k);
    const int64_t nb = k / 32, chunk = chunk_rows(k);
    __m256 acc[kChunkRows];
    QuantizedRow xrows[kChunkRows];
    const int32_t* xstarts[kChunkRows];
    for (int64_t c0 = 0; c0 < n; c0 += chunk) {
        const int64_t count = std::min(n, c0 + chunk) - c0;
        for (int64_t j = 0; j < count; ++j) {
            xrows[j] = row_at(xq, k, c0 + j);
            xstarts[j] = starts + (c0 + j) * nb;
        }
        for (int64_t i = m0; i < m1; i += kTileRows) {
            // A band's last tile may have fewer rows: the missing ones repeat its last row, and
            // only the real ones are stored.
            const int valid = static_cast<int>(std::min<int64_t>(kTileRows, m1 - i));
            const uint8_t* tile = w + static_cast<uint64_t>(i) * wrow;
            const uint8_t* rows[kTileRows];
            for (int r = 0; r < kTileRows; ++r) rows[r] = tile + static_cast<uint64_t>(std::min(r, valid - 1)) * wrow;
            tile_chunk<DT>(rows, i + kTileRows < m1 ? tile + kTileRows * wrow : nullptr, nb, xrows, xstarts, count, acc);
            const __mmask8 keep = static_cast<__mmask8>((1u << valid) - 1);
            for (int64_t j = 0; j < count; ++j) _mm256_mask_storeu_ps(y + (c0 + j) * m + i, keep, acc[j]);
        }
    }
}

}  // namespace

KernelFn tile_kernel_vnni(int32_t dtype) {
    switch (dtype) {
        case MNEMO_DTYPE_Q8_0: return tile_matmul<MNEMO_DTYPE_Q8_0>;
        case MNEMO_DTYPE_Q4_0: return tile_matmul<MNEMO_DTYPE_Q4_0>;
        default: return nullptr;
    }
}

size_t tile_scratch_floats(int64_t n, int64_t k) {
    const size_t bytes = static_cast<size_t>(n) * (row_bytes(k) + sizeof(int32_t) * static_cast<size_t>(k / 32));
    return (bytes + sizeof(float) - 1) / sizeof(float);
}

}  // namespace mnemo_cpu::quant
