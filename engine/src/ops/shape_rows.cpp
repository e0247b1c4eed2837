// Shape rules of the rows family: GET_ROWS, KV_STORE (into an f32, f16 or q8_0 cache).
#include "ops/shape_cache.hpp"

namespace mnemo::shape {

TensorShape shape_get_rows(const Rule& r) {
    const TensorShape& table = r.packed_weight(0, 2, "table [R, C]");
    const TensorShape& idx = r.i32_vec(1, -1, "row indices");
    TensorShape out;
    out.ndim = 2;
    out.shape[0] = idx.shape[0];
    out.shape[1] = table.shape[1];
    return out;
}

TensorShape shape_kv_store(const Rule& r) {
    const TensorShape& cache = kv_cache(r, 0, "cache [S, H, C, D]");  // src is rounded into its dtype
    const TensorShape& src = r.f32(1, 3, 3, "src [N, H, D]");
    if (src.shape[1] != cache.shape[1] || src.shape[2] != cache.shape[3])
        r.fail("src " + src.str() + " does not fit cache " + cache.str());
    r.i32_vec(2, src.shape[0], "sequence ids");
    r.i32_vec(3, src.shape[0], "positions");
    return cache;
}

}  // namespace mnemo::shape
