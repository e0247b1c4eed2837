#version 450
// Elementwise ops over n elements; binary ops broadcast b (nb elements) as a trailing suffix of
// a's shape: b index = i % nb. One element per invocation, 2D grid for large tensors.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(push_constant) uniform Push {
    uvec2 a;
    uvec2 b;    // second operand (binary ops)
    uvec2 out_;
    uint n;     // elements of the output
    uint nb;    // elements of b
    float s;    // SCALE factor
    uint row_groups;  // workgroups per grid row (gl_NumWorkGroups.x)
} pc;

float gelu_tanh(float x) {
    const float c = 0.7978845608028654;  // sqrt(2/pi)
    const float u = c * (x + 0.044715 * x * x * x);
    // tanh through exp, clamped so large |u| does not overflow to inf/inf.
    const float t = tanh(clamp(u, -15.0, 15.0));
    return 0.5 * x * (1.0 + t);
}

// GLSL has no erf. The Chebyshev fit of erfc in t = 1/(1 + |x|/2) has a fractional error below
// 1.2e-7 everywhere, i.e. as good as f32 (Abramowitz-Stegun 7.1.26, at 1.5e-7 absolute, loses
// relative accuracy near 0).
float erf_approx(float x) {
    const float ax = abs(x);
    const float t = 1.0 / (1.0 + 0.5 * ax);
    const float y = t * exp(-ax * ax - 1.26551223 +
                    t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
                    t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
    const float e = 1.0 - y;
    return x >= 0.0 ? e : -e;
}

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
    y = 0.5 * x * (1.0 + erf_approx(x * 0.7071067811865476));
#elif defined(OP_SWIGLU)
    const float u = Floats(pc.b).v[i];
    y = x / (1.0 + exp(-x)) * u;
#endif
    Floats(pc.out_).v[i] = y;
}
