// References of the elementwise family: ADD, MUL, SCALE, SILU, GELU, SWIGLU, CLAMP, each value
// computed in double and rounded once.
#include <cmath>
#include <numbers>

#include "ops/reference_detail.hpp"

namespace mnemo::reference {
namespace {

template <typename F>
void broadcast_binary(const Ctx& c, F op) {
    const In& a = c.in[0];
    const In& b = c.in[1];
    const int64_t nb = b.numel();
    if (nb == 0) return;  // then a is empty too: b's shape is a suffix of a's
    for (int64_t i = 0; i < a.numel(); ++i) c.out[i] = op(a.f(i), b.f(i % nb));
}

template <typename F>
void unary(const Ctx& c, F op) {
    for (int64_t i = 0; i < c.in[0].numel(); ++i) c.out[i] = static_cast<float>(op(static_cast<double>(c.in[0].f(i))));
}

double silu_value(double x) { return x / (1.0 + std::exp(-x)); }

// x Phi(x) written with erfc: equal to 0.5 x (1 + erf(x / sqrt 2)) but without the cancellation
// of 1 + erf in the negative tail.
double gelu_erf_value(double x) { return 0.5 * x * std::erfc(-x / std::numbers::sqrt2); }

}  // namespace

void add(const Ctx& c) { broadcast_binary(c, [](float a, float b) { return a + b; }); }
void mul(const Ctx& c) { broadcast_binary(c, [](float a, float b) { return a * b; }); }

void scale(const Ctx& c) {
    const double s = c.node.fparams[0];
    unary(c, [s](double x) { return s * x; });
}

void silu(const Ctx& c) { unary(c, silu_value); }

// x < lo and x > hi are both false for NaN, which therefore stays NaN (as torch.clamp).
void clamp(const Ctx& c) {
    const double lo = c.node.fparams[0], hi = c.node.fparams[1];
    unary(c, [lo, hi](double x) { return x < lo ? lo : x > hi ? hi : x; });
}

void gelu(const Ctx& c) { c.node.iparams[0] == 1 ? unary(c, gelu_erf_value) : unary(c, gelu_tanh); }

void swiglu(const Ctx& c) {
    for (int64_t i = 0; i < c.in[0].numel(); ++i)
        c.out[i] = static_cast<float>(silu_value(static_cast<double>(c.in[0].f(i))) * static_cast<double>(c.in[1].f(i)));
}

}  // namespace mnemo::reference
