// Shape rule of VQ_DECODE: tables of exactly 2^bits centroids covering the same Do dimensions, a
// list number of at most 32 bits, and a code that fits its words (what every kernel relies on).
#include "ops/shape_rule.hpp"

namespace mnemo::shape {

TensorShape shape_vq_decode(const Rule& r) {
    r.need_i(2);
    const TensorShape& codes = r.of_dtype(0, DType::I32, "codes [N, W]");
    if (codes.ndim != 2) r.fail_input(0, "2-D i32 codes [N, W]");
    const TensorShape& coarse = r.f32(1, 3, 3, "coarse centroids [Mc, 2^bc, Do/Mc]");
    const TensorShape& pq = r.f32(2, 3, 3, "PQ centroids [Mp, 2^bp, Do/Mp]");
    const int64_t bc = r.i(0), bp = r.i(1);
    if (bc < 1 || bc > 16 || bp < 1 || bp > 16)
        r.fail("code bits must be in 1..16 (coarse " + std::to_string(bc) + ", pq " + std::to_string(bp) + ")");
    const int64_t mc = coarse.shape[0], mp = pq.shape[0];
    if (mc < 1 || mc * bc > 32) r.fail("coarse codes of " + std::to_string(mc) + " x " + std::to_string(bc) + " bits do not fit 32 bits");
    if (coarse.shape[1] != (int64_t{1} << bc)) r.fail("coarse table " + coarse.str() + " must hold 2^" + std::to_string(bc) + " centroids");
    if (mp < 1 || pq.shape[1] != (int64_t{1} << bp))
        r.fail("PQ table " + pq.str() + " must hold 2^" + std::to_string(bp) + " centroids per sub-quantizer");
    const int64_t d_out = coarse.shape[0] * coarse.shape[2];
    // Mp <= 2^40 keeps Mp * bp below from overflowing (a real Mp is at most Do).
    if (mp > (int64_t{1} << 40) || pq.shape[0] * pq.shape[2] != d_out)
        r.fail("coarse table " + coarse.str() + " and PQ table " + pq.str() + " cover different dimensions");
    const int64_t bytes = (mc * bc + 7) / 8 + (mp * bp + 7) / 8;
    if (codes.shape[1] * 4 < bytes)
        r.fail("codes " + codes.str() + " hold " + std::to_string(codes.shape[1] * 4) + " bytes per vector, a code needs " +
               std::to_string(bytes));
    TensorShape out;
    out.ndim = 2;
    out.shape[0] = codes.shape[0];
    out.shape[1] = d_out;
    if (r.inputs() == 4) {
        const TensorShape& a = r.f32(3, 2, 2, "rotation A [Do, Di]");
        if (a.shape[0] != d_out) r.fail("rotation " + a.str() + " must have Do = " + std::to_string(d_out) + " rows");
        out.shape[1] = a.shape[1];
    }
    return out;
}

}  // namespace mnemo::shape
