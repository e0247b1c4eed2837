#version 450
// RMS_NORM and LAYER_NORM over the last dimension: one workgroup per row, each invocation
// striding over the row (stride = workgroup size, so loads are coalesced), reductions in f32
// through reduce_common.glsl. LAYER_NORM takes two passes for the statistics (mean, then the
// squared deviations from it), which keeps rows with a large common offset exact where
// E[x^2] - E[x]^2 would cancel. The optional weight and bias are f32/f16/bf16 (Weight).
//
// Variants: OP_LAYER (else RMS), REDUCE_SUBGROUPS (subgroup arithmetic, else shared memory).
// Specialization constant 0: the workgroup size (a power of two, picked by the host from D).
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

#define REDUCE_SIZE WG
#include "reduce_common.glsl"

layout(push_constant) uniform Push {
    uvec2 x;
    uvec2 out_;
    Weight w;          // read only when (flags & 1)
    Weight b;          // read only when (flags & 2)
    uint rows;
    uint d;
    float eps;
    uint flags;
    uint row_groups;   // gl_NumWorkGroups.x: rows beyond 65535 continue in grid y
} pc;

void main() {
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * pc.row_groups;
    if (row >= pc.rows) return;  // the whole workgroup leaves together: no barrier is skipped
    const uint t = gl_LocalInvocationID.x;
    const uint d = pc.d;
    const uint base = row * d;
    Floats x = Floats(pc.x);
    Floats y = Floats(pc.out_);

#if defined(OP_LAYER)
    float s = 0.0;
    for (uint i = t; i < d; i += WG) s += x.v[base + i];
    const float mean = wg_sum(s) / float(d);
#else
    const float mean = 0.0;
#endif
    float q = 0.0;
    for (uint i = t; i < d; i += WG) {
        const float c = x.v[base + i] - mean;
        q += c * c;
    }
    // 1/sqrt rather than inversesqrt: once per row, and Vulkan lets inversesqrt be 2 ulp off.
    const float inv = 1.0 / sqrt(wg_sum(q) / float(d) + pc.eps);

    const bool has_w = (pc.flags & 1u) != 0u, has_b = (pc.flags & 2u) != 0u;
    for (uint i = t; i < d; i += WG) {
        float v = (x.v[base + i] - mean) * inv;
        if (has_w) v *= weight_at(pc.w, i);
        if (has_b) v += weight_at(pc.b, i);
        y.v[base + i] = v;
    }
}
