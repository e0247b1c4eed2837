#version 450
// MATMUL for a few rows of x (decode): y[n, m] = sum_k x[n, k] W[m, k] for n < NX <= 8.
//
// Decode is bound by how fast W streams from memory, so W must be read exactly once, in wide
// coalesced loads: a workgroup owns ROWS consecutive rows of W, its threads stride over K in
// chunks of E elements (one 16-byte load per chunk in the VEC variants), and every chunk of W is
// multiplied against all NX rows of x in the same pass (x is small and stays in cache). The
// per-thread partial sums are then reduced across the workgroup: subgroupAdd and one shared
// step between subgroups (USE_SUBGROUPS), or a shared-memory tree.
//
// Variants (matmul.cmake), chosen by the host from dtype and alignment:
//   LOAD_VEC   16-byte loads of W and x: rows of W and x start 16-byte aligned (K*esize % 16 == 0)
//   LOAD_WORD  16-bit W as one word (2 elements) per load, x as vec2: K even, `first` 0
//   (neither)  one element per load through weight_at: any K, any `first`, any dtype
//   Q_TYPE     a block-quantized W (quant.glsl), decoded to f32 in registers (each block read
//              once): a wide chunk per load (Q_WIDE: q8_0, q4_0 a block of 32; q4_k, q5_k 64
//              weights; q6_k a group of 32), its words in one go, then quad by quad against x. x in vec4s with X_VEC (x starts 16-byte aligned), else one
//              float at a time. Per-lane loads are what a CPU implementation (lavapipe) pays
//              for, and on a GPU fewer, wider loads are no worse.
// W_F32 / W_F16 / W_BF16 fix the dtype of the VEC/WORD variants; the generic one reads it at
// run time.
#if defined(USE_SUBGROUPS)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"
#include "matmul_common.glsl"
#if defined(Q_TYPE)
#include "quant.glsl"
#endif

layout(local_size_x_id = 0) in;              // WG threads, a power of two
layout(constant_id = 1) const uint NX = 1;   // rows of x (1..8)
layout(constant_id = 2) const uint ROWS = 2; // rows of W per workgroup
const uint WG = gl_WorkGroupSize.x;

layout(push_constant) uniform Push {
    uvec2 x;      // f32 [NX, K]
    uvec2 y;      // f32 [NX, M]
    Weight w;     // [M, K]
    uint K;
    uint M;
    uint row_groups;  // workgroups per grid row (gl_NumWorkGroups.x)
} pc;

// Elements per load.
#if defined(Q_WIDE)
#define E Q_WIDE_ELEMS
#elif defined(LOAD_VEC) && defined(W_F32)
#define E 4
#elif defined(LOAD_VEC)
#define E 8
#elif defined(LOAD_WORD)
#define E 2
#else
#define E 1
#endif

// One partial sum per (value, thread); the subgroup variant only uses one slot per subgroup.
shared float red[NX * ROWS * WG];

#if !defined(Q_WIDE)  // (the Q_WIDE loop in main() decodes W and reads x quad by quad instead)
// Chunk c of a row of W.
void load_w(Weight row, uint c, out float v[E]) {
#if defined(LOAD_VEC) && defined(W_F32)
    const vec4 q = Vec4s(row.addr).v[c];
    v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
#elif defined(LOAD_VEC)
    const uvec4 q = UVec4s(row.addr).v[c];
    const vec2 p0 = unpack_pair(q.x), p1 = unpack_pair(q.y), p2 = unpack_pair(q.z), p3 = unpack_pair(q.w);
    v[0] = p0.x; v[1] = p0.y; v[2] = p1.x; v[3] = p1.y;
    v[4] = p2.x; v[5] = p2.y; v[6] = p3.x; v[7] = p3.y;
#elif defined(LOAD_WORD)
    const vec2 p = unpack_pair(Words(row.addr).v[c]);
    v[0] = p.x; v[1] = p.y;
#else
    v[0] = weight_at(row, c);
#endif
}

// Chunk c of a row of x.
void load_x(uvec2 row, uint c, out float v[E]) {
#if E == 8
    const vec4 a = Vec4s(row).v[2u * c], b = Vec4s(row).v[2u * c + 1u];
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
    v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
#elif E == 4
    const vec4 a = Vec4s(row).v[c];
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
#elif E == 2
    const vec2 a = Vec2s(row).v[c];
    v[0] = a.x; v[1] = a.y;
#else
    v[0] = Floats(row).v[c];
#endif
}
#else
// Quad q (elements 4q .. 4q+3) of a row of x, for the quantized path.
vec4 load_x_quad(uvec2 row, uint q) {
#if defined(X_VEC)
    return Vec4s(row).v[q];
#else
    const uint k = 4u * q;
    return vec4(Floats(row).v[k], Floats(row).v[k + 1u], Floats(row).v[k + 2u], Floats(row).v[k + 3u]);
#endif
}
#endif

void store(uint m0, uint v, float s) {
    const uint n = v / ROWS, m = m0 + v % ROWS;
    if (m < pc.M) Floats(pc.y).v[n * pc.M + m] = s;
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint m0 = (gl_WorkGroupID.y * pc.row_groups + gl_WorkGroupID.x) * ROWS;
    if (m0 >= pc.M) return;  // the unused tail of the last grid row (uniform: no barrier is skipped)

    // Rows past M (the last group) read row M-1 again instead of branching in the loop; their
    // sums are dropped by store().
    Weight wrow[ROWS];
#if defined(Q_TYPE)
    const uint row_bytes = quant_row_bytes(pc.K);
    [[unroll]] for (uint r = 0; r < ROWS; ++r) wrow[r] = quant_row(pc.w, min(m0 + r, pc.M - 1u), row_bytes);
#else
    [[unroll]] for (uint r = 0; r < ROWS; ++r) wrow[r] = weight_row(pc.w, min(m0 + r, pc.M - 1u), pc.K);
#endif
    uvec2 xrow[NX];
    [[unroll]] for (uint n = 0; n < NX; ++n) xrow[n] = addr_offset(pc.x, n, pc.K * 4u);

    float acc[NX * ROWS];
    [[unroll]] for (uint v = 0; v < NX * ROWS; ++v) acc[v] = 0.0;

    const uint chunks = pc.K / E;  // the host picks E dividing K
#if defined(Q_WIDE)
    for (uint c = tid; c < chunks; c += WG) {
        // Every row's chunk first, so the loads are in flight together; then quad by quad.
        uint words[ROWS * Q_WIDE_WORDS];
        vec4 scales[ROWS];
        [[unroll]] for (uint r = 0; r < ROWS; ++r) {
            uint t[Q_WIDE_WORDS];
            scales[r] = q_wide_load(wrow[r], c, t);
            [[unroll]] for (uint i = 0; i < Q_WIDE_WORDS; ++i) words[r * Q_WIDE_WORDS + i] = t[i];
        }
        [[unroll]] for (uint q = 0; q < E / 4u; ++q) {
            vec4 wq[ROWS];
            [[unroll]] for (uint r = 0; r < ROWS; ++r) {
                uint t[Q_WIDE_WORDS];
                [[unroll]] for (uint i = 0; i < Q_WIDE_WORDS; ++i) t[i] = words[r * Q_WIDE_WORDS + i];
                wq[r] = q_wide_quad(t, scales[r], q);
            }
            [[unroll]] for (uint n = 0; n < NX; ++n) {
                const vec4 xv = load_x_quad(xrow[n], (E / 4u) * c + q);
                [[unroll]] for (uint r = 0; r < ROWS; ++r) {
                    float s = acc[n * ROWS + r];
                    s = fma(xv.x, wq[r].x, s);
                    s = fma(xv.y, wq[r].y, s);
                    s = fma(xv.z, wq[r].z, s);
                    s = fma(xv.w, wq[r].w, s);
                    acc[n * ROWS + r] = s;
                }
            }
        }
    }
#else
    for (uint c = tid; c < chunks; c += WG) {
        // All weight loads first, so they are in flight together.
        float wv[ROWS * E];
        [[unroll]] for (uint r = 0; r < ROWS; ++r) {
            float t[E];
            load_w(wrow[r], c, t);
            [[unroll]] for (uint e = 0; e < E; ++e) wv[r * E + e] = t[e];
        }
        [[unroll]] for (uint n = 0; n < NX; ++n) {
            float xv[E];
            load_x(xrow[n], c, xv);
            [[unroll]] for (uint r = 0; r < ROWS; ++r) {
                float s = acc[n * ROWS + r];
                [[unroll]] for (uint e = 0; e < E; ++e) s = fma(xv[e], wv[r * E + e], s);
                acc[n * ROWS + r] = s;
            }
        }
    }
#endif

#if defined(USE_SUBGROUPS)
    [[unroll]] for (uint v = 0; v < NX * ROWS; ++v) acc[v] = subgroupAdd(acc[v]);
    if (gl_NumSubgroups == 1u) {
        if (tid == 0u) {
            [[unroll]] for (uint v = 0; v < NX * ROWS; ++v) store(m0, v, acc[v]);
        }
        return;
    }
    if (subgroupElect()) {
        [[unroll]] for (uint v = 0; v < NX * ROWS; ++v) red[v * WG + gl_SubgroupID] = acc[v];
    }
    barrier();
    for (uint v = tid; v < NX * ROWS; v += WG) {  // (a small workgroup may hold fewer threads than values)
        float s = 0.0;
        for (uint i = 0; i < gl_NumSubgroups; ++i) s += red[v * WG + i];
        store(m0, v, s);
    }
#else
    [[unroll]] for (uint v = 0; v < NX * ROWS; ++v) red[v * WG + tid] = acc[v];
    barrier();
    for (uint h = WG / 2u; h > 0u; h >>= 1) {
        if (tid < h) {
            [[unroll]] for (uint v = 0; v < NX * ROWS; ++v) red[v * WG + tid] += red[v * WG + tid + h];
        }
        barrier();
    }
    for (uint v = tid; v < NX * ROWS; v += WG) store(m0, v, red[v * WG]);
#endif
}
