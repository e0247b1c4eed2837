#version 450
// Second pass of split ATTENTION (attention.comp with SPLIT): one workgroup per (query head,
// token) merges the chunks that hold keys of the token's causal prefix. Chunk c stored its
// running max m_c, its sum l_c and its unnormalised row o_c (chunk 0 includes the query's
// prefix slots, when it has any); with M = max m_c,
//   out = sum_c exp(m_c - M) o_c / sum_c exp(m_c - M) l_c.
// Chunks past pos[n] were skipped by the first pass and are never read here (their scratch is
// stale). A token with a bad seq, pos, prefix block or prefix length was reported by the first
// pass; it is skipped here.
#include "common.glsl"

layout(local_size_x = 128) in;

layout(push_constant) uniform Push {
    uvec2 seq, pos, out_;
    uvec2 part;    // (m, sum, row[dv]) per (token, head, chunk)
    uvec2 plen;    // 0: no prefix
    uvec2 pblock;  // 0: block 0 for every query
    uint hq;
    uint dv;
    uint ctx;
    uint n_seq;
    uint chunk;
    uint splits;  // <= 128 (the host's limit)
    uint n_blocks;
    uint slots;
} pc;

shared float w_s[128];  // exp(m_c - M) per chunk
shared float inv_s;

// False when the query's prefix block or its length is bad (the first pass reported it).
bool prefix_ok(uint n) {
    if (pc.plen == uvec2(0)) return true;
    const int b = pc.pblock == uvec2(0) ? 0 : Ints(pc.pblock).v[n];
    if (b >= int(pc.n_blocks)) return false;
    if (b < 0) return true;
    const int len = Ints(pc.plen).v[b];
    return len >= 0 && len <= int(pc.slots);
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint h = gl_WorkGroupID.x;
    const uint n = gl_WorkGroupID.y;
    const int sq = Ints(pc.seq).v[n];
    const int ps = Ints(pc.pos).v[n];
    if (sq < 0 || sq >= int(pc.n_seq) || ps < 0 || ps >= int(pc.ctx) || h >= pc.hq || !prefix_ok(n)) return;
    const uint used = min(pc.splits, uint(ps) / pc.chunk + 1);
    const uint stride = pc.dv + 2;  // floats per chunk record
    const uint first = (n * pc.hq + h) * pc.splits;
    Floats part = Floats(pc.part);

    float big = uintBitsToFloat(0xFF800000u);
    for (uint c = 0; c < used; ++c) big = max(big, part.v[(first + c) * stride]);
    if (tid < used) w_s[tid] = exp(part.v[(first + tid) * stride] - big);
    barrier();
    if (tid == 0) {
        float total = 0.0;
        for (uint c = 0; c < used; ++c) total += w_s[c] * part.v[(first + c) * stride + 1];
        inv_s = 1.0 / total;
    }
    barrier();
    const float inv = inv_s;
    for (uint i = tid; i < pc.dv; i += 128) {
        float o = 0.0;
        for (uint c = 0; c < used; ++c) o += w_s[c] * part.v[(first + c) * stride + 2 + i];
        Floats(pc.out_).v[(n * pc.hq + h) * pc.dv + i] = o * inv;
    }
}
