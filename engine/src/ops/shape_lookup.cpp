// Shape rules of the lookup family (memory values: index pipeline, bags, gates, HIVE):
// EMBEDDING_BAG, MEM_INDEX, PEER_GATE, HIVE. The tables (value table, pre-value table, latent
// bank) may be block-quantized like MATMUL's W: they are where a memory layer spends its bytes.
#include <algorithm>
#include <climits>

#include "ops/shape_rule.hpp"

namespace mnemo::shape {

TensorShape shape_embedding_bag(const Rule& r) {
    const TensorShape& table = r.packed_weight(0, 2, "table [R, C]");
    const TensorShape& idx = r.of_dtype(1, DType::I32, "bag indices [N, m]");
    if (idx.ndim != 2) r.fail_input(1, "2-D i32 bag indices [N, m]");
    const TensorShape& w = r.f32(2, 2, 3, "bag weights [N, m] or per-core [N, m, P]");
    if (w.shape[0] != idx.shape[0] || w.shape[1] != idx.shape[1])
        r.fail("bag weights " + w.str() + " must start with the shape of the bag indices " + idx.str());
    const int64_t cols = table.shape[1];
    if (w.ndim == 3 && (w.shape[2] < 1 || cols % w.shape[2] != 0))
        r.fail("per-core weights " + w.str() + ": the " + std::to_string(w.shape[2]) + " cores must divide the table width C = " +
               std::to_string(cols));
    const int64_t groups = r.i_or(0, 0) == 0 ? 1 : r.i(0);
    if (groups < 1) r.fail("group count " + std::to_string(groups) + " must be >= 1");
    // Indices are i32, so groups x rows must fit one; and G x C is the output width.
    if (groups > INT32_MAX / std::max<int64_t>(1, table.shape[0]))
        r.fail(std::to_string(groups) + " groups x " + std::to_string(table.shape[0]) + " table rows exceed i32 indices");
    if (cols > 0 && groups > INT64_MAX / cols) r.fail(std::to_string(groups) + " groups x C = " + std::to_string(cols) + " overflow");
    TensorShape out;
    out.ndim = 2;
    out.shape[0] = idx.shape[0];
    out.shape[1] = groups * cols;
    return out;
}

TensorShape shape_mem_index(const Rule& r) {
    r.need_i(5);
    const TensorShape& v = r.of_dtype(0, DType::I32, "virtual indices");
    if (r.inputs() == 2) r.i32_vec(1, -1, "shuffle permutation [V]");
    const int64_t value_num = r.i(0), offset = r.i(1), rows = r.i(2), groups = r.i(3), with_group = r.i(4);
    if (value_num < 1 || rows < 1 || groups < 1)
        r.fail("value_num, table rows and groups must be >= 1 (got " + std::to_string(value_num) + ", " + std::to_string(rows) + ", " +
               std::to_string(groups) + ")");
    if (offset < 0 || offset >= rows)
        r.fail("offset " + std::to_string(offset) + " is outside the table's 0.." + std::to_string(rows - 1));
    if (with_group != 0 && with_group != 1) r.fail("with_group must be 0 or 1");
    if (rows > INT32_MAX) r.fail("table rows " + std::to_string(rows) + " exceed i32 indices");
    if (with_group && groups > INT32_MAX / rows)
        r.fail(std::to_string(groups) + " groups x " + std::to_string(rows) + " rows exceed i32 indices");
    return v;
}

TensorShape shape_peer_gate(const Rule& r) {
    const TensorShape& table = r.packed_weight(0, 2, "pre-value table [R, P]");
    const TensorShape& idx = r.of_dtype(1, DType::I32, "indices [N, m]");
    if (idx.ndim != 2) r.fail_input(1, "2-D i32 indices [N, m]");
    const TensorShape& x = r.f32(2, 2, 2, "pre-value query [N, P]");
    const TensorShape& sc = r.f32(3, 2, 3, "scores [N, m] or [N, m, C]");
    if (x.shape[0] != idx.shape[0] || x.shape[1] != table.shape[1])
        r.fail("query " + x.str() + " must be [" + std::to_string(idx.shape[0]) + ", " + std::to_string(table.shape[1]) + "]");
    if (sc.shape[0] != idx.shape[0] || sc.shape[1] != idx.shape[1])
        r.fail("scores " + sc.str() + " must start with the shape of the indices " + idx.str());
    const int64_t act = r.i_or(0, 0);
    if (act < 0 || act > 2) r.fail("activation must be 0 (none), 1 (GELU erf) or 2 (GELU tanh)");
    return sc;
}

TensorShape shape_hive(const Rule& r) {
    const TensorShape& bank = r.packed_weight(0, 2, "latent bank [R, r]");
    const TensorShape& idx = r.of_dtype(1, DType::I32, "indices [N, H, m]");
    if (idx.ndim != 3) r.fail_input(1, "3-D i32 indices [N, H, m]");
    const TensorShape& w = r.f32(2, 3, 3, "weights [N, H, m]");
    if (!same_shape(idx, w)) r.fail("weights " + w.str() + " must have the shape of the indices " + idx.str());
    const TensorShape& proj = r.weight(3, 3, "head projections [H, r, Dh]");
    if (proj.shape[0] != idx.shape[1] || proj.shape[1] != bank.shape[1])
        r.fail("head projections " + proj.str() + " must be [" + std::to_string(idx.shape[1]) + ", " + std::to_string(bank.shape[1]) +
               ", Dh]");
    TensorShape out;
    out.ndim = 3;
    out.shape[0] = idx.shape[0];
    out.shape[1] = idx.shape[1];
    out.shape[2] = proj.shape[2];
    return out;
}

}  // namespace mnemo::shape
