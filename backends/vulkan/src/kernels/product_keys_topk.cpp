// PK_TOPK: the two-stage product-key top-k (shaders/product_keys/pk_topk.comp), exact like ARGTOPK
// on the machinery of topk_select.hpp. Stage 1 ranks s1, s2 in shared memory; the pairs are
// then selected or sorted like ARGTOPK's rows. Scores in double: native with shaderFloat64, else
// exact integer emulation (the *_soft variants, shaders/topk_f64.glsl).
#include <algorithm>
#include <climits>

#include "product_keys.hpp"
#include "topk_select.hpp"

namespace mnemo_vk {

using namespace topk;

namespace {

struct PkTopkPush {
    uint64_t s, out, aux, u, v, core[kMaxCores];
    uint32_t wmeta, rows, row0, heads, nk, rank, m, k, K1, K2, p, grid_x;
};
static_assert(sizeof(PkTopkPush) == 128);

struct PkPlan {
    uint32_t wg = 0;
    uint32_t n = 0;            // capacity of the chosen selection variant
    uint32_t n_sort = 0;       // capacity of the sort passes (global path)
    bool select = false;       // everything in one workgroup, else stage 1 + a full sort of the pairs
    bool ok = false;
    uint64_t K1 = 0, K2 = 0, P = 0;  // m, k and m*m rounded up to powers of two
    uint64_t batch = 0;        // rows per batch (global path)
    uint64_t keys_bytes = 0;   // scratch: tuples of a batch, then its candidate lists
    uint64_t aux_bytes = 0;
};

PkPlan pk_plan(const DeviceFeatures& f, const mnemo_node& node) {
    const mnemo_tensor& s = node.inputs[0];
    const uint64_t m = static_cast<uint64_t>(node.iparams[0]), k = static_cast<uint64_t>(node.iparams[1]);
    PkPlan pl;
    pl.wg = workgroup(f);
    pl.K1 = pow2_ceil(m);
    pl.K2 = pow2_ceil(k);
    pl.P = pow2_ceil(m * m);
    const uint32_t n_select = capacity(f, kPkSelectTuple);
    if (4 * m <= n_select && selection_fits(pl.K1, n_select, pl.wg) && selection_fits(pl.K2, n_select, pl.wg)) {
        pl.select = pl.ok = true;
        pl.n = n_select;
        return pl;
    }
    pl.n = capacity(f, kPkStage1Tuple);
    pl.n_sort = capacity(f, kPkSortTuple);
    if (!selection_fits(pl.K1, pl.n, pl.wg) || pl.n_sort == 0) return pl;  // stage 1 alone does not fit
    const uint64_t n_rows = static_cast<uint64_t>(s.shape[0]) * static_cast<uint64_t>(s.shape[1] / 2);
    pl.batch = batch_rows(n_rows, pl.P * 12 + 2 * m * 4);
    pl.keys_bytes = pl.batch * pl.P * 12;
    pl.aux_bytes = pl.batch * 2 * m * 4;
    pl.ok = pl.P * 3 <= UINT32_MAX / 2;
    return pl;
}

}  // namespace

bool pk_topk_supports(const DeviceFeatures& f, const mnemo_node& node) {
    const mnemo_tensor& s = node.inputs[0];
    if (s.dtype != MNEMO_DTYPE_F32 || s.ndim != 4 || node.output.dtype != MNEMO_DTYPE_I32) return false;
    for (int32_t i = 1; i < node.n_inputs; ++i)
        if (!is_weight_dtype(node.inputs[i].dtype)) return false;
    if (node.n_inputs > 3 + kMaxCores) return false;
    const int64_t nk = s.shape[2], rank = s.shape[3], m = node.iparams[0], k = node.iparams[1];
    if (m < 1 || m > nk || k < 1 || k > m * m || nk * nk > INT32_MAX || nk * rank > INT32_MAX) return false;
    if (s.shape[0] * (s.shape[1] / 2) > UINT32_MAX) return false;
    return pk_plan(f, node).ok;
}

uint64_t pk_topk_scratch(const DeviceFeatures& f, const mnemo_node& node) {
    const PkPlan pl = pk_plan(f, node);
    return pl.keys_bytes + pl.aux_bytes;
}

void pk_topk_build(KernelBuilder& b) {
    const mnemo_node& node = b.node();
    const mnemo_tensor& s = node.inputs[0];
    const uint64_t heads = static_cast<uint64_t>(s.shape[1] / 2), n_rows = static_cast<uint64_t>(s.shape[0]) * heads;
    if (n_rows == 0) return;
    const PkPlan pl = pk_plan(b.features(), node);
    if (!pl.ok) throw KernelError("pk_topk: no selection fits this device's shared memory");
    const bool f64 = b.features().shader_float64;
    const uint32_t m = u32(node.iparams[0]), k = u32(node.iparams[1]), nk = u32(s.shape[2]);

    PkTopkPush p{};
    p.s = KernelBuilder::address(s);
    // Weights: u (slot 0), v (slot 1), cores (slots 2..6): address, and dtype | first << 2.
    auto set_weight = [&](uint64_t& addr, int slot, const mnemo_tensor& t) {
        const WeightArg w = KernelBuilder::weight(t);
        addr = w.address;
        p.wmeta |= (w.dtype | w.first << 2) << (3 * slot);
    };
    const int cores = node.n_inputs > 1 ? node.n_inputs - 3 : 0;
    if (cores > 0) {
        set_weight(p.u, 0, node.inputs[1]);
        set_weight(p.v, 1, node.inputs[2]);
        for (int c = 0; c < cores; ++c) set_weight(p.core[c], 2 + c, node.inputs[3 + c]);
    }
    p.wmeta |= static_cast<uint32_t>(cores) << 21;
    p.heads = u32(heads);
    p.nk = nk;
    p.rank = u32(s.shape[3]);
    p.m = m;
    p.k = k;
    p.K1 = u32(pl.K1);
    p.K2 = u32(pl.K2);
    const std::vector<uint32_t> spec = {pl.wg, pl.n};

    if (pl.select) {
        p.out = KernelBuilder::address(node.output);
        p.rows = u32(n_rows);
        const Grid g = fold(b.features(), n_rows);
        p.grid_x = g.x;
        b.dispatch(f64 ? "pk_topk_select_f64" : "pk_topk_select_soft", p, g.x, g.y, 1, spec);
        return;
    }
    for (uint64_t row0 = 0; row0 < n_rows; row0 += pl.batch) {
        const uint32_t count = u32(std::min(pl.batch, n_rows - row0));
        const Range keys = b.scratch_range(0, uint64_t{count} * pl.P * 12);
        const Range aux = b.scratch_range(pl.keys_bytes, uint64_t{count} * 2 * m * 4);
        p.out = b.scratch(0);
        p.aux = b.scratch(pl.keys_bytes);
        p.rows = count;
        p.row0 = u32(row0);
        p.p = u32(pl.P);
        const Grid g = fold(b.features(), count);
        p.grid_x = g.x;
        Dispatch& d = b.dispatch(f64 ? "pk_topk_stage1_f64" : "pk_topk_stage1_soft", p, g.x, g.y, 1, spec);
        d.writes = {keys, aux};

        SortPush sp{};
        sp.keys = p.out;
        sp.out = KernelBuilder::address(node.output);
        sp.aux = p.aux;
        sp.rows = count;
        sp.row0 = u32(row0);
        sp.d = m * m;
        sp.p = u32(pl.P);
        sp.k = k;
        sp.m = m;
        sp.nk = nk;
        add_sort(b, "pk_topk_sort_local", "pk_topk_sort_global", sp, pl.n_sort, pl.wg, false, keys, &aux);
    }
}

}  // namespace mnemo_vk
