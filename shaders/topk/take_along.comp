#version 450
// TAKE_ALONG: out[r, j] = x[r, idx[r, j]]. One invocation per output element on a 2D grid. An
// index outside 0..D-1 is reported and its element skipped.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(push_constant) uniform Push {
    uvec2 x;
    uvec2 idx;
    uvec2 out_;
    uint d;           // x's last dimension
    uint k;           // idx's last dimension
    uint total;       // output elements (rows * k)
    uint node;
    uint row_groups;  // gl_NumWorkGroups.x
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * pc.row_groups * 256u;
    if (i >= pc.total) return;
    const int j = Ints(pc.idx).v[i];
    if (j < 0 || uint(j) >= pc.d) {
        report_bad_index(pc.node, j, int(pc.d));
        return;
    }
    Floats(pc.out_).v[i] = Floats(pc.x).v[(i / pc.k) * pc.d + uint(j)];
}
