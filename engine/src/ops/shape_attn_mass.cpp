// Shape rule of ATTN_MASS (Memory3 §3.3 token selection).
#include "ops/shape_rule.hpp"

namespace mnemo::shape {

TensorShape shape_attn_mass(const Rule& r) {
    r.need_i(2);
    r.need_f(1);
    const TensorShape& q = r.f32(0, 3, 3, "q [N, Hq, D]");
    const TensorShape& k = r.f32(1, 3, 3, "k [N, Hkv, D]");
    r.i32_vec(2, q.shape[0], "sequence ids");
    r.i32_vec(3, q.shape[0], "positions");
    if (k.shape[0] != q.shape[0] || k.shape[2] != q.shape[2])
        r.fail("q " + q.str() + " and k " + k.str() + " need the same rows and head dim");
    if (k.shape[1] == 0 || q.shape[1] % k.shape[1] != 0)
        r.fail("query heads " + std::to_string(q.shape[1]) + " are not a multiple of kv heads " + std::to_string(k.shape[1]));
    if (r.i(0) != 0 && r.i(0) != 1) r.fail("mode i[0] must be 0 (softmax) or 1 (exp), got " + std::to_string(r.i(0)));
    TensorShape out;
    out.ndim = 2;
    out.shape[0] = q.shape[0];
    out.shape[1] = k.shape[1];
    return out;
}

}  // namespace mnemo::shape
