// Shape rule of MATMUL.
#include "ops/shape_rule.hpp"

namespace mnemo::shape {

TensorShape shape_matmul(const Rule& r) {
    const TensorShape& x = r.f32(0, 1, 4, "activations [..., K]");
    const TensorShape& w = r.packed_weight(1, 2, "weight [M, K]");
    if (w.shape[1] != x.shape[x.ndim - 1])
        r.fail("inner dimensions differ: x " + x.str() + " has K=" + std::to_string(x.shape[x.ndim - 1]) + ", W " + w.str() +
               " has K=" + std::to_string(w.shape[1]));
    TensorShape out = x;
    out.shape[x.ndim - 1] = w.shape[0];
    return out;
}

}  // namespace mnemo::shape
