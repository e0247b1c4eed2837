#version 450
// KV_STORE: cache[seq[t], h, pos[t], :] = src[t, h, :], in place. One invocation per unit of src
// (one float, or four with VEC4: D % 4 == 0 and 16-byte aligned cache and src), flattened over
// (t, h, unit) on a 2D grid. A sequence or position out of range is reported (by the invocation
// holding unit 0 of head 0) and that token's rows are skipped. CACHE_F16: an f16 cache, a unit is
// two values packed into one word (D even). CACHE_F16_ODD: an f16 cache of odd D, one value per
// unit; a word may hold halves of two rows (written by other invocations, or not at all), so each
// half is replaced with two atomics that touch only its own 16 bits. CACHE_Q8: a q8_0 cache (D a
// multiple of 32), a unit is one block of 32 values, quantized as the CPU's reference quantizer
// does (below).
#include "common.glsl"
#include "rows_common.glsl"


layout(local_size_x = 256) in;

layout(push_constant) uniform Push {
    uvec2 cache;
    uvec2 src;
    uvec2 seq;
    uvec2 pos;
    uint seqs;        // S
    uint heads;       // H
    uint ctx;         // C
    uint units;       // units per row: D, D / 4 with VEC4, D / 2 with CACHE_F16, D / 32 with CACHE_Q8
    uint total;       // N * H * units
    uint node;
    uint row_groups;  // gl_NumWorkGroups.x
} pc;

#if defined(CACHE_Q8)
// Block u of row `row` of a q8_0 cache, from 32 floats of src at `first`: d = max|x| / 127 stored
// as f16, q = x / d rounded to the nearest integer, halves away from zero (the reference quantizer,
// engine/src/quant/quantize.cpp, with the f32 d, not the rounded f16 one). The block's 34 bytes
// (17 halves) start on an even byte: every word of it but one is the block's own and is stored
// whole; the one it shares with the block before (start on a half word) or after (start on a
// word) gets its half by atomics that touch only those 16 bits, as CACHE_F16_ODD does.
void store_q8_block(uvec2 row_at, uint u, uint first) {
    float amax = 0.0;
    for (uint j = 0; j < 32u; ++j) amax = max(amax, abs(Floats(pc.src).v[first + j]));
    const float d = amax / 127.0;
    const float id = d != 0.0 ? 1.0 / d : 0.0;
    uint halves[17];
    halves[0] = packHalf2x16(vec2(d, 0.0)) & 0xFFFFu;
    for (uint j = 0; j < 16u; ++j) {
        uint pair = 0u;
        for (uint e = 0; e < 2u; ++e) {
            precise float v = Floats(pc.src).v[first + 2u * j + e] * id;
            // Round half away from zero without adding 0.5 (which itself rounds for v just below
            // a half): the fraction v - trunc(v) is exact.
            float q = trunc(v);
            if (abs(v - q) >= 0.5) q += sign(v);
            // +-inf / NaN (a block whose largest value is subnormal: 1 / d overflows) are pinned
            // to +-127 / 0, as the reference quantizer does.
            q = isnan(v) ? 0.0 : clamp(q, -127.0, 127.0);
            pair |= (uint(int(q)) & 0xFFu) << (8u * e);
        }
        halves[1u + j] = pair;
    }
    const uvec2 at = addr_add(row_at, uvec2(u * 34u, 0u));
    const uvec2 word = uvec2(at.x & ~3u, at.y);
    if ((at.x & 2u) == 0u) {
        // Words 0..7 hold halves 0..15; half 16 is the low half of word 8.
        for (uint w = 0; w < 8u; ++w) Words(word).v[w] = halves[2u * w] | (halves[2u * w + 1u] << 16);
        atomicAnd(Words(word).v[8], 0xFFFF0000u);
        atomicOr(Words(word).v[8], halves[16]);
    } else {
        // Half 0 is the high half of word 0; words 1..8 hold halves 1..16.
        atomicAnd(Words(word).v[0], 0x0000FFFFu);
        atomicOr(Words(word).v[0], halves[0] << 16);
        for (uint w = 1; w <= 8u; ++w) Words(word).v[w] = halves[2u * w - 1u] | (halves[2u * w] << 16);
    }
}
#endif

void main() {
    const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * pc.row_groups * 256u;
    if (i >= pc.total) return;
    const uint r = i / pc.units, u = i - r * pc.units;  // src row (t, h), unit in the row
    const uint t = r / pc.heads, h = r - t * pc.heads;
    const int s = Ints(pc.seq).v[t], p = Ints(pc.pos).v[t];
    const bool bad_seq = s < 0 || uint(s) >= pc.seqs;
    if (bad_seq || p < 0 || uint(p) >= pc.ctx) {
        if (h == 0u && u == 0u) {
            if (bad_seq) report_bad_index(pc.node, s, int(pc.seqs));
            else report_bad_index(pc.node, p, int(pc.ctx));
        }
        return;
    }
    const uint row = (uint(s) * pc.heads + h) * pc.ctx + uint(p);
#if defined(CACHE_Q8)
    store_q8_block(row_address(pc.cache, row, pc.units * 34u), u, i * 32u);
#elif defined(CACHE_F16_ODD)
    const uint h16 = row * pc.units + u;  // element number in the cache (the host keeps it < 2^32)
    const uint shift = (h16 & 1u) * 16u;
    const uint bits = packHalf2x16(vec2(Floats(pc.src).v[i], 0.0)) & 0xFFFFu;
    atomicAnd(Words(pc.cache).v[h16 >> 1], ~(0xFFFFu << shift));
    atomicOr(Words(pc.cache).v[h16 >> 1], bits << shift);
#elif defined(CACHE_F16)
    Words(row_address(pc.cache, row, pc.units * 4u)).v[u] = packHalf2x16(vec2(Floats(pc.src).v[2u * i], Floats(pc.src).v[2u * i + 1u]));
#elif defined(VEC4)
    Vec4s(row_address(pc.cache, row, pc.units * 16u)).v[u] = Vec4s(pc.src).v[i];
#else
    Floats(row_address(pc.cache, row, pc.units * 4u)).v[u] = Floats(pc.src).v[i];
#endif
}
