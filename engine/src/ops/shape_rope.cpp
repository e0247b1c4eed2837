// Shape rule of ROPE.
#include "ops/shape_rule.hpp"

namespace mnemo::shape {

TensorShape shape_rope(const Rule& r) {
    r.need_i(2);
    const TensorShape& x = r.f32(0, 3, 3, "x [N, H, D]");
    r.i32_vec(1, x.shape[0], "positions");
    const TensorShape& f = r.f32(2, 1, 1, "inverse frequencies [R/2]");
    const int64_t rot = r.i(1);
    if (r.i(0) != 0 && r.i(0) != 1) r.fail("mode must be 0 (rotate half) or 1 (interleaved)");
    if (rot <= 0 || rot % 2 != 0 || rot > x.shape[2])
        r.fail("rotary dims " + std::to_string(rot) + " must be even and in 2.." + std::to_string(x.shape[2]));
    if (f.shape[0] != rot / 2)
        r.fail("inverse frequencies hold " + std::to_string(f.shape[0]) + " values, rotary dims " + std::to_string(rot) +
               " need " + std::to_string(rot / 2));
    // pos + offset must stay an i32 for every position an i32 can hold
    const int64_t offset = r.i_or(2, 0);
    if (offset < -(int64_t{1} << 30) || offset > (int64_t{1} << 30))
        r.fail("position offset " + std::to_string(offset) + " is outside -2^30..2^30");
    return x;
}

}  // namespace mnemo::shape
