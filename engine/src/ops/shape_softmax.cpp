// Shape rule of SOFTMAX.
#include "ops/shape_rule.hpp"

namespace mnemo::shape {

TensorShape shape_softmax(const Rule& r) { return r.f32(0, 1, 4, "x"); }

}  // namespace mnemo::shape
