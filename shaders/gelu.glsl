// GELU, shared by every shader that applies it (elementwise.comp, peer_gate.comp), so that the
// same activation gives the same f32 result whichever op applies it.

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

// The exact (erf) GELU: 0.5 x (1 + erf(x / sqrt 2)).
float gelu_erf(float x) { return 0.5 * x * (1.0 + erf_approx(x * 0.7071067811865476)); }
