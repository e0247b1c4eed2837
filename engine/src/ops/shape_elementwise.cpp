// Shape rules of the elementwise family: ADD, MUL, SCALE, SILU, GELU, SWIGLU, CLAMP.
#include "ops/shape_rule.hpp"

namespace mnemo::shape {
namespace {

TensorShape broadcast(const Rule& r) {
    const TensorShape& a = r.f32(0, 1, 4, "a");
    const TensorShape& b = r.f32(1, 1, 4, "b");
    if (!suffix_broadcastable(a, b)) r.fail("b " + b.str() + " must equal a trailing part of a's shape " + a.str());
    return a;
}

}  // namespace

TensorShape shape_add(const Rule& r) { return broadcast(r); }
TensorShape shape_mul(const Rule& r) { return broadcast(r); }

TensorShape shape_scale(const Rule& r) {
    r.need_f(1);
    return r.f32(0, 1, 4, "x");
}

TensorShape shape_silu(const Rule& r) { return r.f32(0, 1, 4, "x"); }

TensorShape shape_gelu(const Rule& r) {
    const int64_t form = r.i_or(0, 0);
    if (form != 0 && form != 1)
        r.fail("form i[0] must be 0 (tanh approximation) or 1 (exact erf), got " + std::to_string(form));
    return r.f32(0, 1, 4, "x");
}

TensorShape shape_clamp(const Rule& r) {
    r.need_f(2);
    const TensorShape& x = r.f32(0, 1, 4, "x");
    if (!(r.f(0) <= r.f(1)))  // NaN bounds fail too
        r.fail("bounds lo = f[0] = " + std::to_string(r.f(0)) + " and hi = f[1] = " + std::to_string(r.f(1)) + " need lo <= hi");
    return x;
}

TensorShape shape_swiglu(const Rule& r) {
    const TensorShape& g = r.f32(0, 1, 4, "gate");
    const TensorShape& u = r.f32(1, 1, 4, "up");
    if (!same_shape(g, u)) r.fail("gate " + g.str() + " and up " + u.str() + " differ");
    return g;
}

}  // namespace mnemo::shape
