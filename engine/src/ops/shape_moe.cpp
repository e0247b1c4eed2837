// Shape rule of MOE_FFN. The experts may be block-quantized (rows of whole blocks), like MATMUL's W.
#include <climits>

#include "ops/shape_rule.hpp"

namespace mnemo::shape {

TensorShape shape_moe_ffn(const Rule& r) {
    const TensorShape& x = r.f32(0, 2, 2, "activations [N, D]");
    const TensorShape& idx = r.of_dtype(1, DType::I32, "expert ids [N, k]");
    const TensorShape& w = r.f32(2, 2, 2, "expert weights [N, k]");
    if (idx.ndim != 2 || idx.shape[0] != x.shape[0]) r.fail_input(1, "i32 expert ids [" + std::to_string(x.shape[0]) + ", k]");
    if (!same_shape(idx, w)) r.fail("expert weights " + w.str() + " must have the shape of the expert ids " + idx.str());
    const TensorShape& gate = r.packed_weight(3, 3, "gate [E, F, D]");
    const TensorShape& up = r.packed_weight(4, 3, "up [E, F, D]");
    const TensorShape& down = r.packed_weight(5, 3, "down [E, D, F]");
    const int64_t e = gate.shape[0], f = gate.shape[1], d = x.shape[1];
    if (gate.shape[2] != d) r.fail_input(3, "gate [E, F, " + std::to_string(d) + "]");
    if (up.shape[0] != e || up.shape[1] != f || up.shape[2] != d) r.fail_input(4, "up with the shape of gate " + gate.str());
    if (down.shape[0] != e || down.shape[1] != d || down.shape[2] != f)
        r.fail_input(5, "down [" + std::to_string(e) + ", " + std::to_string(d) + ", " + std::to_string(f) + "]");
    // Kernels number the (token, choice) slots in i32.
    if (idx.shape[1] > 0 && x.shape[0] > INT32_MAX / idx.shape[1])
        r.fail(std::to_string(x.shape[0]) + " tokens x " + std::to_string(idx.shape[1]) + " experts each exceed i32 slot numbers");
    return x;
}

}  // namespace mnemo::shape
