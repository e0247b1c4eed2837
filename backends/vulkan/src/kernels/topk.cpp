// ARGTOPK: exact top-k selection (shaders/topk/; the machinery is shared with PK_TOPK in
// topk_select.hpp). TAKE_ALONG: pick the scores of the chosen keys (shaders/topk/take_along.comp),
// one invocation per output element; its indices are data: the shader checks them, reports the
// first bad one through the status word and skips that element, and the graph fails the run
// with the value.
#include <algorithm>
#include <climits>

#include "kernel_api.hpp"
#include "topk_select.hpp"

namespace mnemo_vk {
namespace {

using namespace topk;

// ------------------------------------------------------------------ ARGTOPK

struct ArgtopkPush {
    uint64_t x, out;
    uint32_t rows, d, k, K, grid_x, pad;
};
static_assert(sizeof(ArgtopkPush) == 40);

struct ArgtopkPlan {
    uint32_t wg = 0, n = 0;  // workgroup size, selection capacity
    bool select = false;     // streaming selection, else a full sort
    uint64_t K = 0, P = 0;   // k and D rounded up to powers of two
    uint64_t batch = 0;      // rows per batch of a sort in scratch (0: no scratch)
};

ArgtopkPlan argtopk_plan(const DeviceFeatures& f, const mnemo_node& node) {
    const mnemo_tensor& x = node.inputs[0];
    ArgtopkPlan pl;
    pl.wg = workgroup(f);
    pl.n = capacity(f, kArgtopkTuple);
    pl.K = pow2_ceil(static_cast<uint64_t>(node.iparams[0]));
    pl.P = pow2_ceil(static_cast<uint64_t>(x.shape[x.ndim - 1]));
    pl.select = selection_fits(pl.K, pl.n, pl.wg);
    if (!pl.select && pl.P > pl.n) pl.batch = batch_rows(rows(x), pl.P * 8);
    return pl;
}

bool argtopk_supports(const DeviceFeatures& f, const mnemo_node& node) {
    const mnemo_tensor& x = node.inputs[0];
    if (x.dtype != MNEMO_DTYPE_F32 || node.output.dtype != MNEMO_DTYPE_I32 || x.ndim < 1) return false;
    const int64_t d = x.shape[x.ndim - 1], k = node.iparams[0];
    if (d < 1 || d > INT32_MAX || k < 1 || k > d || rows(x) > UINT32_MAX) return false;
    const ArgtopkPlan pl = argtopk_plan(f, node);
    return pl.n != 0 && pl.P * 2 <= UINT32_MAX / 2;  // scratch word indices stay 32-bit
}

uint64_t argtopk_scratch(const DeviceFeatures& f, const mnemo_node& node) {
    const ArgtopkPlan pl = argtopk_plan(f, node);
    return pl.batch * pl.P * 8;
}

void argtopk_build(KernelBuilder& b) {
    const mnemo_node& node = b.node();
    const mnemo_tensor& x = node.inputs[0];
    const uint64_t n_rows = rows(x);
    if (n_rows == 0) return;
    const ArgtopkPlan pl = argtopk_plan(b.features(), node);
    const uint32_t d = u32(x.shape[x.ndim - 1]), k = u32(node.iparams[0]);
    if (pl.select) {
        ArgtopkPush p{};
        p.x = KernelBuilder::address(x);
        p.out = KernelBuilder::address(node.output);
        p.rows = u32(n_rows);
        p.d = d;
        p.k = k;
        p.K = u32(pl.K);
        const Grid g = fold(b.features(), n_rows);
        p.grid_x = g.x;
        b.dispatch("argtopk_select", p, g.x, g.y, 1, {pl.wg, pl.n});
        return;
    }
    const uint64_t batch = pl.batch ? pl.batch : n_rows;  // a row that fits the block needs no scratch
    for (uint64_t row0 = 0; row0 < n_rows; row0 += batch) {
        SortPush p{};
        p.src = KernelBuilder::address(x);
        p.keys = pl.batch ? b.scratch(0) : 0;
        p.out = KernelBuilder::address(node.output);
        p.rows = u32(std::min(batch, n_rows - row0));
        p.row0 = u32(row0);
        p.d = d;
        p.p = u32(pl.P);
        p.k = k;
        const Range keys = pl.batch ? b.scratch_range(0, uint64_t{p.rows} * pl.P * 8) : Range{};
        add_sort(b, "argtopk_sort_local", "argtopk_sort_global", p, pl.n, pl.wg, true, keys, nullptr);
    }
}

constexpr uint32_t kLocal = 256;  // take_along.comp local_size_x
// Element indices inside the shaders stay below 2^31: an access chain index is signed.
constexpr uint64_t kMaxIndex = 0x7FFFFFFFull;

// 256-wide groups covering `count` invocations; the shader folds (x, y) back with row_groups.
Grid grid_for(const KernelBuilder& b, uint64_t count) { return fold_groups(b.features(), groups_for(count, kLocal)); }

// ------------------------------------------------------------------ TAKE_ALONG

struct TakeAlongPush {
    uint64_t x, idx, out;
    uint32_t d, k, total, node, row_groups;
};

bool take_along_supported(const DeviceFeatures&, const mnemo_node& n) {
    return n.inputs[0].dtype == MNEMO_DTYPE_F32 && n.inputs[1].dtype == MNEMO_DTYPE_I32 &&
           n.output.dtype == MNEMO_DTYPE_F32 && numel(n.inputs[0]) <= kMaxIndex && numel(n.inputs[1]) <= kMaxIndex;
}

void build_take_along(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& x = n.inputs[0];
    const mnemo_tensor& idx = n.inputs[1];
    TakeAlongPush p{};
    p.x = KernelBuilder::address(x);
    p.idx = KernelBuilder::address(idx);
    p.out = KernelBuilder::address(n.output);
    p.d = static_cast<uint32_t>(x.shape[x.ndim - 1]);
    p.k = static_cast<uint32_t>(idx.shape[idx.ndim - 1]);
    p.total = static_cast<uint32_t>(numel(idx));
    p.node = b.node_index();
    if (p.total == 0) return;
    const Grid g = grid_for(b, p.total);
    p.row_groups = g.x;
    b.dispatch("take_along", p, g.x, g.y);
}

}  // namespace

void register_topk_kernels() {
    register_kernel(MNEMO_OP_ARGTOPK, Kernel{argtopk_supports, argtopk_scratch, argtopk_build});
    register_kernel(MNEMO_OP_TAKE_ALONG, Kernel{take_along_supported, nullptr, build_take_along});
}

}  // namespace mnemo_vk
