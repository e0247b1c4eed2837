// Shape rule of ATTENTION (with the optional explicit-memory prefix, Memory3 eq. 4).
#include "ops/shape_cache.hpp"

namespace mnemo::shape {
namespace {

// Inputs 5..8: pk [B, Hkv, M, D], pv [B, Hkv, M, Dv], plen [B] [, pblock [N]].
void check_prefix(const Rule& r, const TensorShape& q, const TensorShape& k, const TensorShape& v) {
    const TensorShape& pk = kv_cache(r, 5, "prefix keys [B, Hkv, M, D]");
    const TensorShape& pv = kv_cache(r, 6, "prefix values [B, Hkv, M, Dv]");
    same_cache_dtype(r, 1, 5);
    same_cache_dtype(r, 1, 6);
    if (pk.shape[1] != k.shape[1] || pk.shape[3] != k.shape[3])
        r.fail("prefix keys " + pk.str() + " do not match the k cache " + k.str() + " (heads, head dim)");
    if (pv.shape[0] != pk.shape[0] || pv.shape[1] != pk.shape[1] || pv.shape[2] != pk.shape[2] || pv.shape[3] != v.shape[3])
        r.fail("prefix values " + pv.str() + " do not match prefix keys " + pk.str() + " and v cache " + v.str());
    r.i32_vec(7, pk.shape[0], "prefix lengths [B]");
    if (r.inputs() == 9)
        r.i32_vec(8, q.shape[0], "prefix block of each query");
    else if (pk.shape[0] != 1)
        r.fail("without a block per query (input 8) the prefix must have 1 block, got " + pk.str());
}

}  // namespace

TensorShape shape_attention(const Rule& r) {
    r.need_f(1);
    const TensorShape& q = r.f32(0, 3, 3, "q [N, Hq, D]");
    const TensorShape& k = kv_cache(r, 1, "k cache [S, Hkv, C, D]");
    const TensorShape& v = kv_cache(r, 2, "v cache [S, Hkv, C, Dv]");
    same_cache_dtype(r, 1, 2);
    r.i32_vec(3, q.shape[0], "sequence ids");
    r.i32_vec(4, q.shape[0], "positions");
    if (k.shape[3] != q.shape[2])
        r.fail("q head dim " + std::to_string(q.shape[2]) + " != k head dim " + std::to_string(k.shape[3]));
    if (k.shape[0] != v.shape[0] || k.shape[1] != v.shape[1] || k.shape[2] != v.shape[2])
        r.fail("k cache " + k.str() + " and v cache " + v.str() + " disagree");
    if (k.shape[1] == 0 || q.shape[1] % k.shape[1] != 0)
        r.fail("query heads " + std::to_string(q.shape[1]) + " are not a multiple of kv heads " + std::to_string(k.shape[1]));
    if (r.inputs() == 6 || r.inputs() == 7) r.fail("a prefix needs pk, pv and plen (inputs 5..7)");
    if (r.inputs() >= 8) check_prefix(r, q, k, v);
    TensorShape out;
    out.ndim = 3;
    out.shape[0] = q.shape[0];
    out.shape[1] = q.shape[1];
    out.shape[2] = v.shape[3];
    return out;
}

}  // namespace mnemo::shape
