#version 450
// Second pass of split ATTENTION (attention.comp with SPLIT): one workgroup per (query head,
// token) merges the chunks that hold keys of the token's causal prefix. Chunk c stored its
// running max m_c, its sum l_c and its unnormalised row o_c; with M = max m_c,
//   out = sum_c exp(m_c - M) o_c / sum_c exp(m_c - M) l_c.
// Chunks past pos[n] were skipped by the first pass and are never read here (their scratch is
// stale). A token with a bad seq or pos was reported by the first pass; it is skipped here.
#include "common.glsl"

layout(local_size_x = 128) in;

layout(push_constant) uniform Push {
    uvec2 seq, pos, out_;
    uvec2 part_ml, part_acc;
    uint hq;
    uint dv;
    uint ctx;
    uint n_seq;
    uint chunk;
    uint splits;  // <= 128 (the host's limit)
} pc;

shared float w_s[128];  // exp(m_c - M) per chunk
shared float inv_s;

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint h = gl_WorkGroupID.x;
    const uint n = gl_WorkGroupID.y;
    const int sq = Ints(pc.seq).v[n];
    const int ps = Ints(pc.pos).v[n];
    if (sq < 0 || sq >= int(pc.n_seq) || ps < 0 || ps >= int(pc.ctx) || h >= pc.hq) return;
    const uint used = min(pc.splits, uint(ps) / pc.chunk + 1);
    const uint first = (n * pc.hq + h) * pc.splits;

    float big = uintBitsToFloat(0xFF800000u);
    for (uint c = 0; c < used; ++c) big = max(big, Floats(pc.part_ml).v[2 * (first + c)]);
    if (tid < used) w_s[tid] = exp(Floats(pc.part_ml).v[2 * (first + tid)] - big);
    barrier();
    if (tid == 0) {
        float total = 0.0;
        for (uint c = 0; c < used; ++c) total += w_s[c] * Floats(pc.part_ml).v[2 * (first + c) + 1];
        inv_s = 1.0 / total;
    }
    barrier();
    const float inv = inv_s;
    for (uint i = tid; i < pc.dv; i += 128) {
        float o = 0.0;
        for (uint c = 0; c < used; ++c) o += w_s[c] * Floats(pc.part_acc).v[(first + c) * pc.dv + i];
        Floats(pc.out_).v[(n * pc.hq + h) * pc.dv + i] = o * inv;
    }
}
