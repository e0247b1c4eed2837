#version 450
// PEER_GATE: out[n, j, ...] = act(table[idx[n, j] % R] . x[n]) * s[n, j, ...]
//
// One workgroup of 64 invocations per entry (n, j): each invocation takes pairs of columns of
// the gathered row (one 32-bit word of a 16-bit table) against x[n], the partial dot products
// are summed by subgroupAdd and then across subgroups in shared memory (SUBGROUPS), or by a
// shared-memory tree; then every invocation applies the activation and scales its share of the
// entry's C scores. Accumulation is f32.
//
// A block-quantized table (Q_TYPE, shaders/quant.glsl) is read a quad of four columns per
// invocation and step (P is a whole number of blocks, so of quads), each quad decoded exactly as
// the CPU reference decodes it.
#if defined(SUBGROUPS)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"
#include "gelu.glsl"
#include "lookup_common.glsl"
#if defined(Q_TYPE)
#include "quant.glsl"
#endif

#define THREADS 64u

layout(local_size_x = 64) in;

layout(push_constant) uniform Push {
    Weight table;  // [R, P]
    uvec2 idx;     // i32 [N, m]
    uvec2 x;       // f32 [N, P]
    uvec2 s;       // f32 [N, m] or [N, m, C]
    uvec2 out_;    // s's shape
    uint rows;     // R
    uint width;    // P
    uint m;
    uint per_entry;  // C (1 for s [N, m])
    uint entries;    // N * m
    uint act;        // 0 none, 1 GELU erf, 2 GELU tanh
    uint node;
} pc;

shared float s_red[THREADS];

float workgroup_sum(float v, uint tid) {
#if defined(SUBGROUPS)
    const float part = subgroupAdd(v);
    if (subgroupElect()) s_red[gl_SubgroupID] = part;
    barrier();
    float total = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; ++i) total += s_red[i];
    return total;
#else
    s_red[tid] = v;
    barrier();
    [[unroll]] for (uint stride = THREADS / 2u; stride > 0u; stride >>= 1) {
        if (tid < stride) s_red[tid] += s_red[tid + stride];
        barrier();
    }
    return s_red[0];
#endif
}

void main() {
    const uint e = folded_workgroup();
    if (e >= pc.entries) return;  // whole workgroup: no barrier is skipped by half
    const uint tid = gl_LocalInvocationIndex;
    const int v = Ints(pc.idx).v[e];
    // Any index >= 0 names row v % R (it may carry a group); a negative one, or any index into
    // an empty table, is an error: reported, and the entry skipped (its outputs are not written).
    if (v < 0 || pc.rows == 0u) {
        if (tid == 0u) report_bad_index(pc.node, v, pc.rows == 0u ? 0 : 0x7FFFFFFF);
        return;
    }
    const uint n = e / pc.m;
    Floats x = Floats(pc.x);
    const uint x0 = n * pc.width;
    float dot_part = 0.0;
#if defined(Q_TYPE)
    const Weight row = quant_row(pc.table, uint(v) % pc.rows, quant_row_bytes(pc.width));
    for (uint c = 4u * tid; c < pc.width; c += 4u * THREADS) {
        const vec4 t = q_quad(row, c);
        const vec4 xv = vec4(x.v[x0 + c], x.v[x0 + c + 1u], x.v[x0 + c + 2u], x.v[x0 + c + 3u]);
        dot_part += (t.x * xv.x + t.y * xv.y) + (t.z * xv.z + t.w * xv.w);
    }
#else
    const WeightRow row = weight_row(pc.table, uint(v) % pc.rows, pc.width);
    for (uint c = 2u * tid; c < pc.width; c += 2u * THREADS) {
        const vec2 t = row_pair(row, c, pc.width);
        const vec2 xv = vec2(x.v[x0 + c], c + 1u < pc.width ? x.v[x0 + c + 1u] : 0.0);
        dot_part += t.x * xv.x + t.y * xv.y;
    }
#endif
    const float d = workgroup_sum(dot_part, tid);
    const float a = pc.act == 1u ? gelu_erf(d) : pc.act == 2u ? gelu_tanh(d) : d;
    Floats s = Floats(pc.s);
    Floats o = Floats(pc.out_);
    for (uint k = tid; k < pc.per_entry; k += THREADS) o.v[e * pc.per_entry + k] = a * s.v[e * pc.per_entry + k];
}
