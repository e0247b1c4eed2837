#version 450
// MOE_FFN prefill, step 4: out[token, d] = sum over the token's choices j (ascending) of
// y[slot, d], skipping bad expert ids (reported by the grouping pass). One element per invocation.
#include "common.glsl"
#include "moe_common.glsl"

layout(local_size_x = 256) in;

layout(push_constant) uniform Push {
    uvec2 y;     // the chunk's down results [slots, D]
    uvec2 idx;   // expert ids [N, k]
    uvec2 out_;  // [N, D]
    uint k, experts, dim, n0;
    uint count;       // elements of the chunk's output rows
    uint row_groups;  // workgroups per grid row
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * pc.row_groups * 256u;
    if (i >= pc.count) return;
    const uint t = i / pc.dim, d = i - t * pc.dim;
    const uint token = pc.n0 + t;
    float sum = 0.0;
    for (uint j = 0; j < pc.k; ++j)
        if (expert_of(pc.idx, token * pc.k + j, pc.experts) >= 0) sum += Floats(pc.y).v[(t * pc.k + j) * pc.dim + d];
    Floats(pc.out_).v[token * pc.dim + d] = sum;
}
