#version 450
// ATTN_MASS (Memory3 token selection): out[j, g] = the attention mass key token j receives from
// the counted tokens of its sequence over the query heads of kv group g (mnemo_abi.h). Token t is
// counted when seq[t] >= 0 and pos[t] >= first. Two variants:
//
// NORM (softmax mode only, runs first): one workgroup per (query head h, token i). The threads
//   stride over the tokens j of i's sequence, keep a running (max, sum of exp) each, and merge
//   them in shared memory; (m, l) of the row goes to scratch [N, Hq, 2].
// otherwise (SUM): one workgroup per (kv group g, key token j) owns out[j, g]: the threads stride
//   over (query token i, head of the group) pairs, add exp(s - m) / l (mode 0) or exp(s)
//   (mode 1), and the workgroup sums in shared memory.
//
// Why per key token for the sum: every output element then has exactly one writer and a fixed
// summation order, so the result is deterministic and needs no float atomics (optional in
// Vulkan). Scores are recomputed in the second pass instead of kept: N x N x Hq floats of scratch
// would dwarf the op for a few hundred tokens, and the dot products are cheap at that size.
// Reductions use a shared-memory tree (one per workgroup, not worth a subgroup variant).
#include "common.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint D = 64;  // head dim

const uint WG = 128;

layout(push_constant) uniform Push {
    uvec2 q, k, seq, pos, out_;
    uvec2 norm;    // [N, Hq, 2] (m, l) per query row (softmax mode)
    uint n;
    uint hq, hkv;
    int first;     // first counted position
    uint flags;    // 1: exp mode (no normaliser), 2: no token is counted
    float scale;
} pc;

shared float row_s[D + 1];  // the workgroup's fixed q (NORM) or k (SUM) row; +1: legal for D = 0
shared float red_a[WG];
shared float red_b[WG];

bool counted(uint t) {
    return (pc.flags & 2u) == 0u && Ints(pc.seq).v[t] >= 0 && Ints(pc.pos).v[t] >= pc.first;
}

// row_s . x[base .. base + D)
float dot_row(Floats x, uint base) {
    vec4 s = vec4(0.0);
    uint i = 0;
    for (; i + 4 <= D; i += 4)
        s += vec4(row_s[i], row_s[i + 1], row_s[i + 2], row_s[i + 3]) *
             vec4(x.v[base + i], x.v[base + i + 1], x.v[base + i + 2], x.v[base + i + 3]);
    float r = (s.x + s.y) + (s.z + s.w);
    for (; i < D; ++i) r += row_s[i] * x.v[base + i];
    return r;
}

#define NEG_INF uintBitsToFloat(0xFF800000u)

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint head = gl_WorkGroupID.x;  // NORM: query head h; SUM: kv group g
    const uint t = gl_WorkGroupID.y;     // NORM: query token i; SUM: key token j
    const uint group = pc.hq / pc.hkv;
#if defined(NORM)
    if (!counted(t)) return;  // never read by the sum
    const int sq = Ints(pc.seq).v[t];
    for (uint i = tid; i < D; i += WG) row_s[i] = Floats(pc.q).v[(t * pc.hq + head) * D + i];
    barrier();
    const uint g = head / group;
    float m = NEG_INF, l = 0.0;
    for (uint j = tid; j < pc.n; j += WG) {
        if (!counted(j) || Ints(pc.seq).v[j] != sq) continue;
        const float s = pc.scale * dot_row(Floats(pc.k), (j * pc.hkv + g) * D);
        if (s > m) {
            l = l * exp(m - s) + 1.0;  // exp(-inf) = 0 for the first key
            m = s;
        } else {
            l += exp(s - m);
        }
    }
    red_a[tid] = m;
    red_b[tid] = l;
    barrier();
    for (uint stride = WG / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            const float m1 = red_a[tid], m2 = red_a[tid + stride];
            if (m2 != NEG_INF) {  // an idle thread adds nothing (and -inf - -inf would be NaN)
                const float mm = max(m1, m2);
                red_b[tid] = red_b[tid] * exp(m1 - mm) + red_b[tid + stride] * exp(m2 - mm);
                red_a[tid] = mm;
            }
        }
        barrier();
    }
    if (tid == 0) {
        const uint row = t * pc.hq + head;
        Floats(pc.norm).v[2 * row] = red_a[0];
        Floats(pc.norm).v[2 * row + 1] = red_b[0];
    }
#else
    const uint g = head;
    if (!counted(t)) {
        if (tid == 0) Floats(pc.out_).v[t * pc.hkv + g] = 0.0;
        return;
    }
    const int sq = Ints(pc.seq).v[t];
    for (uint i = tid; i < D; i += WG) row_s[i] = Floats(pc.k).v[(t * pc.hkv + g) * D + i];
    barrier();
    const bool softmax = (pc.flags & 1u) == 0u;
    float acc = 0.0;
    for (uint item = tid; item < pc.n * group; item += WG) {
        const uint i = item / group;
        if (!counted(i) || Ints(pc.seq).v[i] != sq) continue;
        const uint h = g * group + item % group;
        const uint row = i * pc.hq + h;
        const float s = pc.scale * dot_row(Floats(pc.q), row * D);
        // A branch, not a select: in exp mode there is no normaliser to read.
        if (softmax) acc += exp(s - Floats(pc.norm).v[2 * row]) / Floats(pc.norm).v[2 * row + 1];
        else acc += exp(s);
    }
    red_a[tid] = acc;
    barrier();
    for (uint stride = WG / 2; stride > 0; stride >>= 1) {
        if (tid < stride) red_a[tid] += red_a[tid + stride];
        barrier();
    }
    if (tid == 0) Floats(pc.out_).v[t * pc.hkv + g] = red_a[0];
#endif
}
