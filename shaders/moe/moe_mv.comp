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
//
// Block-quantized weights (Q_TYPE, shaders/quant.glsl; UP: gate and up share it) are read eight
// weights at a time under one scale read (q_oct): rows are whole
// blocks of 32 or 256 weights, so a row length is a multiple of 8. Each weight is decoded
// exactly as the CPU reference decodes it.
#ifdef SUBGROUPS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"
#if defined(Q_TYPE)
#include "quant.glsl"
#endif

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

#if defined(Q_TYPE)
// v[o + r] += src[s0 + p] . row r of W over p < len, the rows given by their numbers BASE[r] in
// W (viewed as [rows, len]), eight weights per step.
#define QROW_DOTS(W, BASE, O, S0, LEN)                                                         \
    {                                                                                          \
        Weight qrow[R];                                                                        \
        [[unroll]] for (uint r = 0; r < R; ++r) qrow[r] = quant_row(W, BASE[r], quant_row_bytes(LEN)); \
        for (uint p = tid; p < (LEN) / 8u; p += WG) {                                          \
            const uint at = (S0) + 8u * p;                                                     \
            Floats sf = Floats(pc.src);                                                        \
            const vec4 s0 = vec4(sf.v[at], sf.v[at + 1u], sf.v[at + 2u], sf.v[at + 3u]);       \
            const vec4 s1 = vec4(sf.v[at + 4u], sf.v[at + 5u], sf.v[at + 6u], sf.v[at + 7u]);  \
            [[unroll]] for (uint r = 0; r < R; ++r) {                                          \
                vec4 w0, w1;                                                                   \
                q_oct(qrow[r], 8u * p, w0, w1);                                                \
                v[(O) + r] += dot(s0, w0) + dot(s1, w1);                                       \
            }                                                                                  \
        }                                                                                      \
    }
#endif

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
    const uint x0 = (slot / pc.k) * pc.dim;
#if defined(Q_TYPE)
    // Row numbers: a quantized row is addressed by its number and byte width (quant_row).
    [[unroll]] for (uint r = 0; r < R; ++r) base[r] = uint(e) * pc.hidden + min(r0 + r, pc.hidden - 1u);
    QROW_DOTS(pc.w0, base, 0u, x0, pc.dim)
    QROW_DOTS(pc.w1, base, R, x0, pc.dim)
#else
    [[unroll]] for (uint r = 0; r < R; ++r) base[r] = (uint(e) * pc.hidden + min(r0 + r, pc.hidden - 1u)) * pc.dim;
    ROW_DOTS(pc.w0, base, 0u, x0, pc.dim)
    ROW_DOTS(pc.w1, base, R, x0, pc.dim)
#endif
    wg_sum(v);
    if (tid < R && r0 + tid < pc.hidden)
        Floats(pc.dst).v[s * pc.hidden + r0 + tid] = Floats(pc.wts).v[slot] * silu(wg_total[tid]) * wg_total[R + tid];
#else
    const uint t = gl_WorkGroupID.y;  // token within the chunk
    const uint token = pc.n0 + t;
    for (uint j = 0; j < pc.k; ++j) {
        const int e = expert_of(pc.idx, token * pc.k + j, pc.experts);
        if (e < 0) continue;
#if defined(Q_TYPE)
        [[unroll]] for (uint r = 0; r < R; ++r) base[r] = uint(e) * pc.dim + min(r0 + r, pc.dim - 1u);
        QROW_DOTS(pc.w0, base, 0u, (t * pc.k + j) * pc.hidden, pc.hidden)
#else
        [[unroll]] for (uint r = 0; r < R; ++r) base[r] = (uint(e) * pc.dim + min(r0 + r, pc.dim - 1u)) * pc.hidden;
        ROW_DOTS(pc.w0, base, 0u, (t * pc.k + j) * pc.hidden, pc.hidden)
#endif
    }
    wg_sum(v);
    if (tid < R && r0 + tid < pc.dim) Floats(pc.dst).v[token * pc.dim + r0 + tid] = wg_total[tid];
#endif
}
