#version 450
// VQ_DECODE, second pass: x[n, i] = sum over l = 0..Do-1, ascending, of y[n, l] * A[l, i], one
// invocation per output element. The order is the CPU's (and FAISS's over reference BLAS), and
// `precise` forbids fusing the multiply into the add, so each product is rounded as there: the
// result matches the CPU bit for bit wherever f32 multiplication and addition are correctly
// rounded and denormals are kept.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(push_constant) uniform Push {
    uvec2 y;          // [N, Do], written by vq_decode
    uvec2 a;          // [Do, Di]
    uvec2 out_;       // [N, Di]
    uint total;       // N * Di
    uint d_out;
    uint d_in;
    uint row_groups;  // gl_NumWorkGroups.x
} pc;

void main() {
    const uint e = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * pc.row_groups * 256u;
    if (e >= pc.total) return;
    const uint n = e / pc.d_in, i = e - n * pc.d_in;
    const uint y0 = n * pc.d_out;
    precise float acc = 0.0;
    for (uint l = 0u; l < pc.d_out; ++l) {
        precise float product = Floats(pc.y).v[y0 + l] * Floats(pc.a).v[l * pc.d_in + i];
        acc = acc + product;
    }
    Floats(pc.out_).v[e] = acc;
}
