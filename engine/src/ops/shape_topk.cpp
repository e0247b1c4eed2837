// Shape rules of the top-k family: ARGTOPK, TAKE_ALONG.
#include "ops/shape_rule.hpp"

namespace mnemo::shape {

TensorShape shape_argtopk(const Rule& r) {
    r.need_i(1);
    const TensorShape& x = r.f32(0, 1, 4, "x [..., D]");
    const int64_t d = x.shape[x.ndim - 1], k = r.i(0);
    if (k < 1 || k > d) r.fail("k = " + std::to_string(k) + " must be in 1..D, and x " + x.str() + " has D = " + std::to_string(d));
    TensorShape out = x;
    out.dtype = DType::I32;
    out.shape[x.ndim - 1] = k;
    return out;
}

TensorShape shape_take_along(const Rule& r) {
    const TensorShape& x = r.f32(0, 1, 4, "x [..., D]");
    const TensorShape& idx = r.of_dtype(1, DType::I32, "indices [..., k]");
    bool same_lead = idx.ndim == x.ndim;
    for (int32_t i = 0; same_lead && i + 1 < x.ndim; ++i) same_lead = idx.shape[i] == x.shape[i];
    if (!same_lead) r.fail("indices " + idx.str() + " must have the leading dimensions of x " + x.str() + " (all but the last)");
    TensorShape out = idx;
    out.dtype = DType::F32;
    return out;
}

}  // namespace mnemo::shape
