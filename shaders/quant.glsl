// Block-quantized weights (GGUF's layouts), decoded four weights at a time: MATMUL (mat-vec and
// tiled) and GET_ROWS include this after common.glsl, with Q_TYPE set to the mnemo_dtype number.
//
// Layouts (engine/include/mnemo/abi/mnemo_abi.h; the CPU reference decoder is
// engine/src/quant/dequantize.cpp, the NumPy one tools/reference/ggml_quants.py):
//   q8_0 (16)  32 weights in  34 bytes: f16 d, int8 q[32]                       w = q * d
//   q4_0 (17)  32 weights in  18 bytes: f16 d, qs[16]; byte j holds weight j in its low nibble
//              and weight j + 16 in its high nibble                              w = (q - 8) * d
//   q4_k (18) 256 weights in 144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins of 8
//              sub-blocks of 32, qs[128]; weights 64i .. 64i+31 are the low nibbles of qs[32i ..],
//              64i+32 .. 64i+63 the high ones (sub-blocks 2i, 2i+1)       w = d*sc*q - dmin*m
//   q5_k (19) 176 bytes: q4_k's with qh[32] before qs; bit 2i (2i+1) of qh[l] is the fifth bit of
//              weight 64i + l (64i + 32 + l)
//   q6_k (20) 256 weights in 210 bytes: ql[128], qh[64], int8 sc[16], f16 d at the end. In half h
//              (128 weights), weight 32k + l takes its low 4 bits from ql[64h + l + 32(k&1)]
//              (low nibble for k < 2, high for k >= 2), its top 2 bits from bits 2k of
//              qh[32h + l], and scale sc[8h + 2k + l/16]                   w = d * sc * (q - 32)
//
// Blocks are packed, so they are only 2-byte aligned (34, 18, 210 bytes) and a row of a
// quantized [M, K] weight is K / block-weights blocks. Nothing here assumes more: bytes and
// halves are shifted out of 32-bit words read at word-aligned addresses, so no 8/16-bit storage
// feature is needed. A quad (4 consecutive weights k .. k+3, k % 4 == 0) always shares one
// scale and sits in 4 consecutive bytes of each array it draws on, so it costs a few word loads.
// The products are evaluated in the reference's order and marked `precise` (no fused
// multiply-add), so GET_ROWS reproduces the CPU's rows bit for bit.

#if Q_TYPE == 16
const uint Q_BLOCK_ELEMS = 32u, Q_BLOCK_BYTES = 34u;
#elif Q_TYPE == 17
const uint Q_BLOCK_ELEMS = 32u, Q_BLOCK_BYTES = 18u;
#elif Q_TYPE == 18
const uint Q_BLOCK_ELEMS = 256u, Q_BLOCK_BYTES = 144u;
#elif Q_TYPE == 19
const uint Q_BLOCK_ELEMS = 256u, Q_BLOCK_BYTES = 176u;
#elif Q_TYPE == 20
const uint Q_BLOCK_ELEMS = 256u, Q_BLOCK_BYTES = 210u;
#else
#error "Q_TYPE must be a block-quantized mnemo_dtype (16..20)"
#endif

// Bytes of a row of `cols` weights (cols is a whole number of blocks; the host keeps it < 2^31).
uint quant_row_bytes(uint cols) { return cols / Q_BLOCK_ELEMS * Q_BLOCK_BYTES; }

// Row `row` of a quantized weight as a Weight of its own. For quantized weights `first` is the
// byte offset (0 or 2) of the row's first byte inside the word at `addr`: the host passes the
// tensor as a WeightArg (address rounded down to 4 bytes, first = 1 for a start on a half word),
// and a row start moves by row_bytes, which may be any even number. 64-bit: an LM head passes
// 4 GiB.
Weight quant_row(Weight w, uint row, uint row_bytes) {
    uint hi, lo;
    umulExtended(row, row_bytes, hi, lo);
    uint c1, c2;
    uint a = uaddCarry(w.addr.x, lo, c1);
    a = uaddCarry(a, w.first * 2u, c2);
    return Weight(uvec2(a & ~3u, w.addr.y + hi + c1 + c2), w.dtype, a & 3u);
}

// Byte, 16 bits and 32 bits at byte o of a row (o even for the wider two, as every f16 and every
// quad's bytes are).
uint q_u8(Weight row, uint o) {
    const uint p = row.first + o;
    return (Words(row.addr).v[p >> 2] >> ((p & 3u) * 8u)) & 0xFFu;
}
uint q_u16(Weight row, uint o) {
    const uint p = row.first + o;
    return (Words(row.addr).v[p >> 2] >> ((p & 2u) * 8u)) & 0xFFFFu;
}
uint q_u32(Weight row, uint o) {
    const uint p = row.first + o;
    const uint w0 = Words(row.addr).v[p >> 2];
    if ((p & 3u) == 0u) return w0;
    return (w0 >> 16) | (Words(row.addr).v[(p >> 2) + 1u] << 16);  // straddles two words
}

float q_f16(Weight row, uint o) { return half_to_f32(q_u16(row, o)); }

// The four bytes of a word as unsigned (codes) or signed (int8) values.
uvec4 bytes_u(uint v) { return uvec4(v & 0xFFu, (v >> 8) & 0xFFu, (v >> 16) & 0xFFu, v >> 24); }
ivec4 bytes_i(uint v) { return ivec4(int(v << 24), int(v << 16), int(v << 8), int(v)) >> 24; }

#if Q_TYPE == 18 || Q_TYPE == 19
// Scale and min of sub-block j (0..7) from the 12 packed bytes, given as the words h1, h2, h3
// (bytes 0-3, 4-7, 8-11): sub-blocks 0-3 keep 6 bits in bytes j (scale) and j + 4 (min); 4-7
// their low 4 bits in byte j + 4 and their top 2 bits in the top bits of bytes j - 4 (scale) and
// j (min). By shifts only: j is not known at compile time, and indexing a local array by it costs
// a CPU implementation a trip through memory per lane.
uvec2 q_scale_min_of_words(uint h1, uint h2, uint h3, uint j) {
    const uint shift = 8u * (j & 3u);
    const uint b1 = (h1 >> shift) & 0xFFu, b2 = (h2 >> shift) & 0xFFu, b3 = (h3 >> shift) & 0xFFu;
    if (j < 4u) return uvec2(b1 & 63u, b2 & 63u);
    return uvec2((b3 & 0x0Fu) | ((b1 >> 6) << 4), (b3 >> 4) | ((b2 >> 6) << 4));
}
// The same from the 12 bytes at byte s of a row.
uvec2 q_scale_min(Weight row, uint s, uint j) {
    return q_scale_min_of_words(q_u32(row, s), q_u32(row, s + 4u), q_u32(row, s + 8u), j);
}
#endif

// A weight is a * code - b for its block's (or sub-block's) scale (a, b) and its code, centred
// already where the format centres it (b is 0 but for q4_k/q5_k's mins). q_scale gives (a, b) of
// the weights at offset j (j % 8 == 0) of the block at byte `base`, shared by the 8 weights
// j .. j+7 (every type's scales cover 16 or more); q_codes the codes of the quad at j (j % 4 == 0).
vec2 q_scale(Weight row, uint base, uint j) {
#if Q_TYPE == 16 || Q_TYPE == 17
    return vec2(q_f16(row, base), 0.0);
#elif Q_TYPE == 18 || Q_TYPE == 19
    const vec2 dm = unpack_half2(q_u32(row, base));  // d, dmin
    const uvec2 sm = q_scale_min(row, base + 4u, j / 32u);
    precise float a = dm.x * float(sm.x), b = dm.y * float(sm.y);
    return vec2(a, b);
#else  // Q_TYPE == 20: sub-block of 16 (32k + l in half h) -> scale sc[8h + 2k + l/16]
    const uint h = j / 128u, kk = (j / 32u) & 3u, l = j % 32u;
    const float sc = float(int(q_u8(row, base + 192u + 8u * h + 2u * kk + l / 16u) << 24) >> 24);
    precise float a = q_f16(row, base + 208u) * sc;
    return vec2(a, 0.0);
#endif
}

ivec4 q_codes(Weight row, uint base, uint j) {
#if Q_TYPE == 16
    return bytes_i(q_u32(row, base + 2u + j));
#elif Q_TYPE == 17
    return ivec4(bytes_u((q_u32(row, base + 2u + (j & 15u)) >> ((j & 16u) / 4u)) & 0x0F0F0F0Fu)) - 8;
#elif Q_TYPE == 18 || Q_TYPE == 19
    const uint i = j / 64u, h = (j / 32u) & 1u, l = j % 32u;
#if Q_TYPE == 18
    const uint q = (q_u32(row, base + 16u + 32u * i + l) >> (4u * h)) & 0x0F0F0F0Fu;
#else
    const uint fifth = ((q_u32(row, base + 16u + l) >> (2u * i + h)) & 0x01010101u) << 4;
    const uint q = ((q_u32(row, base + 48u + 32u * i + l) >> (4u * h)) & 0x0F0F0F0Fu) | fifth;
#endif
    return ivec4(bytes_u(q));
#else  // Q_TYPE == 20
    const uint h = j / 128u, kk = (j / 32u) & 3u, l = j % 32u;
    const uint lo = (q_u32(row, base + 64u * h + 32u * (kk & 1u) + l) >> (4u * (kk >> 1))) & 0x0F0F0F0Fu;
    const uint hi = (q_u32(row, base + 128u + 32u * h + l) >> (2u * kk)) & 0x03030303u;
    return ivec4(bytes_u(lo | (hi << 4))) - 32;
#endif
}

vec4 q_apply(vec2 s, ivec4 codes) {
    precise vec4 w = s.x * vec4(codes) - s.y;
    return w;
}

// Weights k .. k+3 of a row (k % 4 == 0), dequantized to f32.
vec4 q_quad(Weight row, uint k) {
    const uint base = (k / Q_BLOCK_ELEMS) * Q_BLOCK_BYTES, j = k % Q_BLOCK_ELEMS;
    return q_apply(q_scale(row, base, j & ~7u), q_codes(row, base, j));
}

// Weights k .. k+7 (k % 8 == 0): two quads under one scale read, for the mat-vec.
void q_oct(Weight row, uint k, out vec4 w0, out vec4 w1) {
    const uint base = (k / Q_BLOCK_ELEMS) * Q_BLOCK_BYTES, j = k % Q_BLOCK_ELEMS;
    const vec2 s = q_scale(row, base, j);
    w0 = q_apply(s, q_codes(row, base, j));
    w1 = q_apply(s, q_codes(row, base, j + 4u));
}

// ------------------------------------------------------------------ wide chunks for the mat-vec
// A lane decodes Q_WIDE_ELEMS consecutive weights at once (q8_0, q4_0: a whole block of 32; q4_k,
// q5_k: the 64 weights of two sub-blocks, whose codes share their bytes; q6_k: a group of 32
// under two scales, its low and high bits from two arrays): the chunk's bytes are
// read in as few aligned word loads as they span (never a word holding none of them: it could lie
// past the tensor), realigned in registers, and its scales worked out once, instead of a few
// loads per quad. Q_WIDE_WORDS words per row hold what the quads are decoded from.
#define Q_WIDE 1
#if Q_TYPE == 16
const uint Q_WIDE_ELEMS = 32u, Q_WIDE_WORDS = 8u;
#elif Q_TYPE == 17
const uint Q_WIDE_ELEMS = 32u, Q_WIDE_WORDS = 4u;
#elif Q_TYPE == 18
const uint Q_WIDE_ELEMS = 64u, Q_WIDE_WORDS = 8u;
#elif Q_TYPE == 19
const uint Q_WIDE_ELEMS = 64u, Q_WIDE_WORDS = 16u;  // 8 words of codes, 8 of fifth bits
#else
const uint Q_WIDE_ELEMS = 32u, Q_WIDE_WORDS = 16u;  // 8 words of low 4 bits, 8 of top 2 bits
#endif

// The word at byte p (even) of a row, from the aligned words lo (holding byte p & ~3) and hi.
uint q_funnel(uint lo, uint hi, bool odd_half) { return odd_half ? (lo >> 16) | (hi << 16) : lo; }

// N words from byte p (even) of a row into o[0..N-1]: N loads when p is word-aligned, N + 1
// when it is not (never a word that holds none of the bytes: it could lie past the tensor).
#define Q_READ_WORDS(N, row, p, o)                                                           \
    {                                                                                        \
        const uint a_ = (p) >> 2;                                                            \
        const bool odd_ = ((p) & 2u) != 0u;                                                  \
        uint w_[N + 1];                                                                      \
        [[unroll]] for (uint i_ = 0u; i_ < N; ++i_) w_[i_] = Words((row).addr).v[a_ + i_];   \
        w_[N] = odd_ ? Words((row).addr).v[a_ + N] : 0u;                                     \
        [[unroll]] for (uint i_ = 0u; i_ < N; ++i_) o[i_] = q_funnel(w_[i_], w_[i_ + 1u], odd_); \
    }

// Chunk c of a row: its words, and the scales its quads use ((a, b) of the first 32 weights in
// .xy, of the next 32 in .zw; a weight is a * code - b).
vec4 q_wide_load(Weight row, uint c, out uint words[Q_WIDE_WORDS]) {
#if Q_TYPE == 16 || Q_TYPE == 17
    // The block (2 + 4 * Q_WIDE_WORDS bytes) spans Q_WIDE_WORDS + 1 aligned words from its even
    // start either way: f16 d, then the codes from byte 2.
    const uint p = row.first + c * Q_BLOCK_BYTES;
    const uint a = p >> 2;
    uint w[Q_WIDE_WORDS + 1u];
    [[unroll]] for (uint i = 0u; i <= Q_WIDE_WORDS; ++i) w[i] = Words(row.addr).v[a + i];
    const bool odd_half = (p & 2u) != 0u;  // the block starts in the upper half of w[0]
    [[unroll]] for (uint i = 0u; i < Q_WIDE_WORDS; ++i) words[i] = odd_half ? w[i + 1u] : (w[i] >> 16) | (w[i + 1u] << 16);
    const float d = half_to_f32(odd_half ? w[0] >> 16 : w[0]);
    return vec4(d, 0.0, d, 0.0);
#elif Q_TYPE == 20
    // Group g = 4h + k of a block: weights 128h + 32k + l take their low 4 bits from ql[64h + l +
    // 32(k & 1)] (nibble k >> 1), their top 2 from bits 2k of qh[32h + l], and scale sc[8h + 2k +
    // l / 16]; both sets of bits are moved into place here, once.
    const uint g = c % 8u, h = g / 4u, k = g % 4u;
    const uint base = row.first + (c / 8u) * Q_BLOCK_BYTES;
    uint lo[8], hi[8];
    Q_READ_WORDS(8u, row, base + 64u * h + 32u * (k & 1u), lo)
    Q_READ_WORDS(8u, row, base + 128u + 32u * h, hi)
    [[unroll]] for (uint q = 0u; q < 8u; ++q) {
        words[q] = (lo[q] >> (4u * (k >> 1))) & 0x0F0F0F0Fu;
        words[8u + q] = ((hi[q] >> (2u * k)) & 0x03030303u) << 4;
    }
    const uint sc = q_u16(row, (c / 8u) * Q_BLOCK_BYTES + 192u + 8u * h + 2u * k);  // two int8
    const float d = q_f16(row, (c / 8u) * Q_BLOCK_BYTES + 208u);
    precise float a0 = d * float(int(sc << 24) >> 24), a1 = d * float(int(sc << 16) >> 24);
    return vec4(a0, 0.0, a1, 0.0);
#else
    const uint per_block = Q_BLOCK_ELEMS / Q_WIDE_ELEMS;  // 4 chunks of 64 in a block of 256
    const uint i = c % per_block;
    const uint base = row.first + (c / per_block) * Q_BLOCK_BYTES;
    uint h[4];  // d, dmin; 12 bytes of scales and mins
    Q_READ_WORDS(4u, row, base, h)
#if Q_TYPE == 18
    Q_READ_WORDS(8u, row, base + 16u + 32u * i, words)
#else
    uint codes[8], high[8];
    Q_READ_WORDS(8u, row, base + 48u + 32u * i, codes)
    Q_READ_WORDS(8u, row, base + 16u, high)
    [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        words[k] = codes[k];
        words[8u + k] = high[k] >> (2u * i);  // bit 0: the fifth bit of the first 32, bit 1 the next
    }
#endif
    const vec2 dm = unpack_half2(h[0]);  // d, dmin
    const uvec2 s0 = q_scale_min_of_words(h[1], h[2], h[3], 2u * i), s1 = q_scale_min_of_words(h[1], h[2], h[3], 2u * i + 1u);
    precise float a0 = dm.x * float(s0.x), b0 = dm.y * float(s0.y);
    precise float a1 = dm.x * float(s1.x), b1 = dm.y * float(s1.y);
    return vec4(a0, b0, a1, b1);
#endif
}

// Weights 4q .. 4q+3 of a loaded chunk (q < Q_WIDE_ELEMS / 4).
vec4 q_wide_quad(uint words[Q_WIDE_WORDS], vec4 scales, uint q) {
#if Q_TYPE == 16
    return q_apply(scales.xy, bytes_i(words[q]));
#elif Q_TYPE == 17  // byte j holds weight j (low nibble) and j + 16 (high nibble)
    return q_apply(scales.xy, ivec4(bytes_u((words[q & 3u] >> (q & 4u)) & 0x0F0F0F0Fu)) - 8);
#elif Q_TYPE == 20  // quads 0-3 under the group's first scale, 4-7 under its second
    return q_apply(q < 4u ? scales.xy : scales.zw, ivec4(bytes_u(words[q] | words[8u + q])) - 32);
#else  // the first 32 weights are the low nibbles of the 32 code bytes, the next 32 the high ones
    const uint half_ = q / 8u, w = q % 8u;
    uint codes = (words[w] >> (4u * half_)) & 0x0F0F0F0Fu;
#if Q_TYPE == 19  // the fifth bit (qh, shifted to the chunk by q_wide_load)
    codes |= ((words[8u + w] >> half_) & 0x01010101u) << 4;
#endif
    return q_apply(half_ == 0u ? scales.xy : scales.zw, ivec4(bytes_u(codes)));
#endif
}
