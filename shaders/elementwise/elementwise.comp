#version 450
// Elementwise ops over n elements; binary ops broadcast b (nb elements) as a trailing suffix of
// a's shape: b index = i % nb. One element per invocation, 2D grid for large tensors.
#include "common.glsl"
#include "gelu.glsl"

layout(local_size_x = 256) in;

layout(push_constant) uniform Push {
    uvec2 a;
    uvec2 b;    // second operand (binary ops)
    uvec2 out_;
    uint n;     // elements of the output
    uint nb;    // elements of b
    float s;    // SCALE factor, CLAMP's lo
    uint row_groups;  // workgroups per grid row (gl_NumWorkGroups.x)
    float hi;   // CLAMP's hi
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * pc.row_groups * 256u;
    if (i >= pc.n) return;
    const float x = Floats(pc.a).v[i];
    float y;
#if defined(OP_ADD)
    y = x + Floats(pc.b).v[i % pc.nb];
#elif defined(OP_MUL)
    y = x * Floats(pc.b).v[i % pc.nb];
#elif defined(OP_SCALE)
    y = pc.s * x;
#elif defined(OP_SILU)
    y = x / (1.0 + exp(-x));
#elif defined(OP_GELU_TANH)
    y = gelu_tanh(x);
#elif defined(OP_GELU_ERF)
    y = gelu_erf(x);
#elif defined(OP_CLAMP)
    // Not GLSL's clamp(), which leaves NaN undefined: NaN stays NaN. The NaN test is on the bits:
    // NVIDIA's compiler turns compares (and isnan) into min/max, which give hi for a NaN.
    const bool is_nan = (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u;
    y = is_nan ? x : (x < pc.s ? pc.s : (x > pc.hi ? pc.hi : x));
#elif defined(OP_SWIGLU)
    const float u = Floats(pc.b).v[i];
    y = x / (1.0 + exp(-x)) * u;
#endif
    Floats(pc.out_).v[i] = y;
}
