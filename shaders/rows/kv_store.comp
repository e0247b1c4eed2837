#version 450
// KV_STORE: cache[seq[t], h, pos[t], :] = src[t, h, :], in place. One invocation per unit of src
// (one float, or four with VEC4: D % 4 == 0 and 16-byte aligned cache and src), flattened over
// (t, h, unit) on a 2D grid. A sequence or position out of range is reported (by the invocation
// holding unit 0 of head 0) and that token's rows are skipped. CACHE_F16: an f16 cache, a unit is
// two values packed into one word (D even). CACHE_F16_ODD: an f16 cache of odd D, one value per
// unit; a word may hold halves of two rows (written by other invocations, or not at all), so each
// half is replaced with two atomics that touch only its own 16 bits.
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
    uint units;       // units per row: D, D / 4 with VEC4, D / 2 with CACHE_F16
    uint total;       // N * H * units
    uint node;
    uint row_groups;  // gl_NumWorkGroups.x
} pc;

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
#if defined(CACHE_F16_ODD)
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
