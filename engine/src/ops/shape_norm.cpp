// Shape rules of the norm family: RMS_NORM, LAYER_NORM.
#include "ops/shape_rule.hpp"

namespace mnemo::shape {
namespace {

// x [..., D], then up to two [D] vectors (weight, bias), and eps = f[0] >= 0.
TensorShape row_norm(const Rule& r) {
    r.need_f(1);
    const TensorShape& x = r.f32(0, 1, 4, "x [..., D]");
    const int64_t d = x.shape[x.ndim - 1];
    for (size_t i = 1; i < r.inputs(); ++i) {
        const TensorShape& w = r.weight(i, 1, i == 1 ? "weight [D]" : "bias [D]");
        if (w.shape[0] != d) r.fail_input(i, "length " + std::to_string(d));
    }
    if (!(r.f(0) >= 0.0f)) r.fail("eps must be >= 0");
    return x;
}

}  // namespace

TensorShape shape_rms_norm(const Rule& r) { return row_norm(r); }
TensorShape shape_layer_norm(const Rule& r) { return row_norm(r); }

}  // namespace mnemo::shape
