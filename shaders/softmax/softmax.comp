#version 450
// SOFTMAX of scale * x over the last dimension: one workgroup per row, three strided passes
// over the row (max, sum of exp(scale*x - max), write exp(scale*x - max) / sum). exp is
// recomputed in the last pass instead of being stored and reread: one read of x instead of a
// write plus a read of y. Large rows (a 128k vocabulary) simply loop; the row stays in cache
// between passes on real GPUs.
//
// Edge cases follow the reference (engine/src/ops/reference_softmax.cpp): -inf inputs give 0; a row
// whose entries are all -inf has max = -inf, the reference computes exp(-inf - -inf) = NaN
// there, so the row is written as NaN explicitly (not left to the driver's exp(NaN)).
//
// Variants: REDUCE_SUBGROUPS (subgroup arithmetic, else shared memory). Specialization
// constant 0: the workgroup size (a power of two).
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

#define REDUCE_SIZE WG
#include "reduce_common.glsl"

layout(push_constant) uniform Push {
    uvec2 x;
    uvec2 out_;
    uint rows;
    uint d;
    float scale;       // already 1 where the node says 0
    uint row_groups;   // gl_NumWorkGroups.x: rows beyond 65535 continue in grid y
} pc;

void main() {
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * pc.row_groups;
    if (row >= pc.rows) return;  // the whole workgroup leaves together
    const uint t = gl_LocalInvocationID.x;
    const uint d = pc.d;
    const uint base = row * d;
    const float scale = pc.scale;
    Floats x = Floats(pc.x);
    Floats y = Floats(pc.out_);

    float m = uintBitsToFloat(0xFF800000u);  // -inf
    for (uint i = t; i < d; i += WG) m = max(m, scale * x.v[base + i]);
    m = wg_max(m);

    if (isinf(m) && m < 0.0) {
        for (uint i = t; i < d; i += WG) y.v[base + i] = uintBitsToFloat(0x7FC00000u);  // NaN
        return;
    }

    float s = 0.0;
    for (uint i = t; i < d; i += WG) s += exp(scale * x.v[base + i] - m);
    const float inv = 1.0 / wg_sum(s);

    for (uint i = t; i < d; i += WG) y.v[base + i] = exp(scale * x.v[base + i] - m) * inv;
}
