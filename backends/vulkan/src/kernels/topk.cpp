// ARGTOPK and PK_TOPK: exact top-k selection (shaders/topk_common.glsl, argtopk.comp,
// argtopk_sort.comp, pk_topk.comp).
//
// Both ops must return the reference's indices bit for bit, so the shaders rank unique integer
// tuples (order key of the value, then the complement of the index) and never compare floats.
// One workgroup per row:
//  - k small enough for shared memory (2K <= capacity, K = k rounded up to a power of two): the
//    row streams through a filtered bitonic top-K selection; one dispatch (argtopk_select,
//    pk_topk_select_*).
//  - larger k: the row's tuples are sorted completely. A row of at most `capacity` tuples is
//    sorted in shared memory by one dispatch; a longer one goes to scratch and is sorted by
//    shared-memory block passes plus one global dispatch per long compare distance
//    (argtopk_sort_*). PK_TOPK first runs pk_topk_stage1_* (stage 1 in shared memory, then every
//    pair's tuple into scratch). Rows are processed in batches that bound the scratch size.
// PK_TOPK scores in double: native with shaderFloat64, else exact integer emulation (the *_soft
// variants, shaders/topk_f64.glsl); both reproduce the reference's doubles exactly.
#include <algorithm>
#include <climits>

#include "kernel_api.hpp"

namespace mnemo_vk {
namespace {

constexpr uint32_t kMaxCapacity = 4096;          // tuples; beyond it a reduction costs more than it saves
constexpr uint64_t kBatchBytes = uint64_t{64} << 20;  // scratch of one batch of sorted rows
constexpr int kMaxCores = 5;                     // Tucker cores in the PK_TOPK push block

uint32_t u32(uint64_t v) { return static_cast<uint32_t>(v); }

uint64_t pow2_ceil(uint64_t v) {
    uint64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

// Workgroup size: 256 invocations, or the largest power of two the device allows.
uint32_t workgroup(const DeviceFeatures& f) {
    uint32_t wg = 256;
    while (wg > 32 && wg > f.max_workgroup_invocations) wg >>= 1;
    return wg;
}

// Selection capacity: the largest power of two n <= kMaxCapacity whose shared arrays
// (bytes_per_tuple * n, plus counters) fit the device, and at least two passes of the workgroup;
// 0 when none does.
uint32_t capacity(const DeviceFeatures& f, uint32_t bytes_per_tuple) {
    const uint32_t wg = workgroup(f);
    for (uint32_t n = kMaxCapacity; n >= 2 * wg; n >>= 1)
        if (uint64_t{n} * bytes_per_tuple + 64 <= f.max_shared_memory) return n;
    return 0;
}

// The streaming selection keeps K tuples and admits a full pass of candidates next to them.
bool selection_fits(uint64_t K, uint32_t n, uint32_t wg) { return n != 0 && 2 * K <= n && K + wg <= n; }

// Workgroups numbered linearly, folded into rows of at most the device's x limit (the shaders'
// group_linear).
struct Grid {
    uint32_t x = 1, y = 1;
};
Grid fold(const DeviceFeatures& f, uint64_t groups) {
    Grid g;
    const uint64_t max_x = std::max<uint32_t>(std::min<uint32_t>(f.max_workgroup_count[0], 65535), 1);
    g.x = u32(std::min<uint64_t>(std::max<uint64_t>(groups, 1), max_x));
    g.y = groups_for(groups, g.x);
    return g;
}

// ------------------------------------------------------------------ the full sort in scratch

struct SortPush {
    uint64_t src, keys, out, aux;
    uint32_t rows, row0, d, p, k, size_first, size_last, stride, flags, grid_x, m, nk;
};
static_assert(sizeof(SortPush) == 80);

constexpr uint32_t kLoadSource = 1;   // the first block pass reads x itself (ARGTOPK)
constexpr uint32_t kWriteOutput = 2;  // the pass writes the op's output instead of scratch

// Bytes per tuple in the sort's shared memory / per selection shape.
constexpr uint32_t kArgtopkTuple = 8;     // 2 words
constexpr uint32_t kPkSortTuple = 12;     // 3 words
constexpr uint32_t kPkSelectTuple = 14;   // 3 words + candidate lists of n/4 each side
constexpr uint32_t kPkStage1Tuple = 16;   // 3 words + candidate lists of n/2 each side

// Dispatches that sort `rows` rows of p tuples (already in scratch at p.keys, or loaded from x
// when `from_source`) and write the first k of each as output. `keys` / `aux` are the scratch
// ranges of the batch (aux: PK_TOPK's candidate lists, read by the final pass).
void add_sort(KernelBuilder& b, const char* local, const char* global, SortPush p, uint32_t n, uint32_t wg,
              bool from_source, const Range& keys, const Range* aux) {
    const uint32_t block = std::min(p.p, n);
    const std::vector<uint32_t> spec = {wg, n};
    auto pass = [&](const char* shader, uint64_t groups, bool reads_keys, bool writes_output) {
        const Grid g = fold(b.features(), groups);
        p.grid_x = g.x;
        Dispatch& d = b.dispatch(shader, p, g.x, g.y, 1, spec);
        if (reads_keys) d.reads.push_back(keys);
        if (writes_output && aux) d.reads.push_back(*aux);
        if (!writes_output) d.writes = {keys};
    };
    const uint64_t blocks = uint64_t{p.rows} * (p.p / block);
    p.flags = (from_source ? kLoadSource : 0) | (p.p == block ? kWriteOutput : 0);
    p.size_first = 2;
    p.size_last = block;
    pass(local, blocks, !from_source, p.p == block);
    for (uint32_t size = 2 * block; size != 0 && size <= p.p; size <<= 1) {
        for (uint32_t stride = size / 2; stride >= block; stride /= 2) {
            p.size_first = size;
            p.stride = stride;
            pass(global, uint64_t{p.rows} * (p.p / (2 * wg)), true, false);
        }
        p.flags = size == p.p ? kWriteOutput : 0;
        p.size_first = p.size_last = size;
        pass(local, blocks, true, size == p.p);
    }
}

// Rows per batch when each row needs `row_bytes` of scratch.
uint64_t batch_rows(uint64_t rows, uint64_t row_bytes) {
    return std::clamp<uint64_t>(kBatchBytes / std::max<uint64_t>(row_bytes, 1), 1, std::max<uint64_t>(rows, 1));
}

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

// ------------------------------------------------------------------ PK_TOPK

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

}  // namespace

void register_topk_kernels() {
    register_kernel(MNEMO_OP_ARGTOPK, Kernel{argtopk_supports, argtopk_scratch, argtopk_build});
    register_kernel(MNEMO_OP_PK_TOPK, Kernel{pk_topk_supports, pk_topk_scratch, pk_topk_build});
}

}  // namespace mnemo_vk
