#version 450
// MOE_FFN at decode: mat-vec passes over only the chosen experts' weights.
//   UP   (one workgroup per slot and block of R hidden rows):
//        h[slot, f] = w[slot] * silu(gate[e, f] . x[token]) * (up[e, f] . x[token])
//   DOWN (one workgroup per token and block of R output rows):
//        out[token, d] = sum_j down[e_j, d] . h[token*k + j]
// Every invocation strides over the whole row (coalesced loads) and keeps the R rows' partial
// sums; one workgroup reduction per row block. DOWN sums the choices j in ascending order inside
// each invocation, so the result is deterministic and needs no float atomics. A bad expert id is
// reported by UP and its slot skipped by both passes.
#ifdef SUBGROUPS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"

#define WG 256u
#define R 4u  // weight rows per workgroup
#ifdef UP
#define NV 8u  // gate and up sums of R rows
#else
#define NV 4u
#endif
#define MOE_WG_SUM
#include "moe_common.glsl"

layout(local_size_x = 256) in;
// 16-bit weights whose rows start on a word: read two elements per load.
layout(constant_id = 0) const bool PAIRS = false;

layout(push_constant) uniform Push {
    Weight w0;   // UP: gate [E, F, D]; DOWN: down [E, D, F]
    Weight w1;   // UP: up [E, F, D]
    uvec2 src;   // UP: x [N, D]; DOWN: the chunk's h rows [slots, F]
    uvec2 idx;   // expert ids [N, k]
    uvec2 wts;   // router weights [N, k]
    uvec2 dst;   // UP: the chunk's h rows; DOWN: out [N, D]
    uint k, experts, dim, hidden;
    uint n0;     // first token of the chunk
    uint node;
} pc;

// v[o + r] += src[s0 + p] . w[base[r] + p] over p < len, for R rows of one weight.
#define ROW_DOTS(W, BASE, O, S0, LEN)                                                          \
    if (PAIRS) {                                                                               \
        for (uint p = tid; p < (LEN) / 2u; p += WG) {                                          \
            const vec2 sv = vec2(Floats(pc.src).v[(S0) + 2u * p], Floats(pc.src).v[(S0) + 2u * p + 1u]); \
            [[unroll]] for (uint r = 0; r < R; ++r) v[(O) + r] += dot(sv, weight_pair16(W, BASE[r] / 2u + p)); \
        }                                                                                      \
    } else {                                                                                   \
        for (uint p = tid; p < (LEN); p += WG) {                                               \
            const float sv = Floats(pc.src).v[(S0) + p];                                       \
            [[unroll]] for (uint r = 0; r < R; ++r) v[(O) + r] += sv * weight_at(W, BASE[r] + p); \
        }                                                                                      \
    }

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint r0 = gl_WorkGroupID.x * R;
    float v[NV];
    [[unroll]] for (uint i = 0; i < NV; ++i) v[i] = 0.0;
    uint base[R];
#ifdef UP
    const uint s = gl_WorkGroupID.y;  // slot within the chunk
    const uint slot = pc.n0 * pc.k + s;
    const int e = expert_of(pc.idx, slot, pc.experts);
    if (e < 0) {  // the whole workgroup leaves, so no barrier is skipped by part of it
        if (tid == 0u && gl_WorkGroupID.x == 0u) report_bad_index(pc.node, Ints(pc.idx).v[slot], int(pc.experts));
        return;
    }
    // Rows past F repeat the last row (in bounds); their sums are not stored.
    [[unroll]] for (uint r = 0; r < R; ++r) base[r] = (uint(e) * pc.hidden + min(r0 + r, pc.hidden - 1u)) * pc.dim;
    const uint x0 = (slot / pc.k) * pc.dim;
    ROW_DOTS(pc.w0, base, 0u, x0, pc.dim)
    ROW_DOTS(pc.w1, base, R, x0, pc.dim)
    wg_sum(v);
    if (tid < R && r0 + tid < pc.hidden)
        Floats(pc.dst).v[s * pc.hidden + r0 + tid] = Floats(pc.wts).v[slot] * silu(wg_total[tid]) * wg_total[R + tid];
#else
    const uint t = gl_WorkGroupID.y;  // token within the chunk
    const uint token = pc.n0 + t;
    for (uint j = 0; j < pc.k; ++j) {
        const int e = expert_of(pc.idx, token * pc.k + j, pc.experts);
        if (e < 0) continue;
        [[unroll]] for (uint r = 0; r < R; ++r) base[r] = (uint(e) * pc.dim + min(r0 + r, pc.dim - 1u)) * pc.hidden;
        ROW_DOTS(pc.w0, base, 0u, (t * pc.k + j) * pc.hidden, pc.hidden)
    }
    wg_sum(v);
    if (tid < R && r0 + tid < pc.dim) Floats(pc.dst).v[token * pc.dim + r0 + tid] = wg_total[tid];
#endif
}
