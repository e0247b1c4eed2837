// The value retrieval of memory layers: EMBEDDING_BAG (fused gather-weight-sum over a table,
// with UltraMem's groups and per-core weights), PEER_GATE (a gathered row's dot product with the
// query, activated, scaling that entry's scores), HIVE (MIDUS: a bag per head over a latent bank,
// then the head's projection) and PK_PAIR_SCORES (scores of chosen product-key pairs).
//
// Each is one dispatch (shaders/embedding_bag.comp, peer_gate.comp, hive.comp,
// pk_pair_scores.comp). Indices are validated by the shaders: a bad one is reported through the
// status word and its entry skipped, and the graph returns the error. Work-item counts are
// folded into an x * y grid so that prefill-sized batches stay under the per-dimension limit.
#include <algorithm>
#include <climits>

#include "kernel_api.hpp"

namespace mnemo_vk {
namespace {

// Element counts the shaders index with 32-bit unsigned integers are kept below 2^31, so that
// no driver can take an index for a negative one. Gathered rows are addressed in 64 bits
// (lookup_common.glsl), so tables and banks may be larger.
constexpr uint64_t kMaxElements = uint64_t{1} << 31;
// The latent vector of a HIVE bag lives in shared memory (hive.comp MAX_RANK).
constexpr int64_t kMaxRank = 2048;
// Tucker cores a PK_PAIR_SCORES push block has room for (pk_pair_scores.comp MAX_CORES).
constexpr int kMaxCores = 5;
// Columns per workgroup block (embedding_bag.comp: 64 lanes x 2 columns).
constexpr uint64_t kBlockCols = 128;

bool small(const mnemo_tensor& t) { return numel(t) < kMaxElements; }
// A row of `cols` elements of the weight `t` spans fewer than 2^32 bytes (weight_row in
// lookup_common.glsl multiplies in 32 bits).
bool row_bytes_fit(const mnemo_tensor& t, int64_t cols) {
    return static_cast<uint64_t>(cols) * dtype_bytes(t.dtype) < (uint64_t{1} << 32);
}

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }


// ------------------------------------------------------------------ EMBEDDING_BAG

struct EmbeddingBagPush {
    WeightArg table;
    uint64_t idx, w, out;
    uint32_t rows, cols, groups, m, cores, core_cols, blocks, segments, limit, node;
};
static_assert(sizeof(EmbeddingBagPush) == 80);

int64_t bag_groups(const mnemo_node& n) { return n.iparams[0] == 0 ? 1 : n.iparams[0]; }

bool embedding_bag_supports(const DeviceFeatures&, const mnemo_node& n) {
    const mnemo_tensor& table = n.inputs[0];
    return small(n.inputs[1]) && small(n.inputs[2]) && small(n.output) && row_bytes_fit(table, table.shape[1]) &&
           bag_groups(n) * table.shape[0] <= INT32_MAX;
}

void embedding_bag_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& table = n.inputs[0];
    const mnemo_tensor& w = n.inputs[2];
    EmbeddingBagPush p{};
    p.table = KernelBuilder::weight(table);
    p.idx = KernelBuilder::address(n.inputs[1]);
    p.w = KernelBuilder::address(w);
    p.out = KernelBuilder::address(n.output);
    p.rows = u32(table.shape[0]);
    p.cols = u32(table.shape[1]);
    p.groups = u32(bag_groups(n));
    p.m = u32(n.inputs[1].shape[1]);
    p.cores = w.ndim == 3 ? u32(w.shape[2]) : 1;
    p.core_cols = p.cols / p.cores;  // the shape rules checked that the cores divide C
    p.blocks = groups_for(p.cols, kBlockCols);
    p.segments = u32(n.inputs[1].shape[0] * p.groups);
    p.limit = u32(bag_groups(n) * table.shape[0]);
    p.node = b.node_index();
    const uint64_t work = uint64_t{p.segments} * p.blocks;
    if (work == 0) return;  // no bags or no columns: the output is empty
    const Grid g = fold_groups(b.features(), work);
    b.dispatch("embedding_bag", p, g.x, g.y);
}

// ------------------------------------------------------------------ PEER_GATE

struct PeerGatePush {
    WeightArg table;
    uint64_t idx, x, s, out;
    uint32_t rows, width, m, per_entry, entries, act, node, pad;
};
static_assert(sizeof(PeerGatePush) == 80);

bool peer_gate_supports(const DeviceFeatures&, const mnemo_node& n) {
    return small(n.inputs[1]) && small(n.inputs[2]) && small(n.inputs[3]) && row_bytes_fit(n.inputs[0], n.inputs[0].shape[1]);
}

void peer_gate_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& sc = n.inputs[3];
    PeerGatePush p{};
    p.table = KernelBuilder::weight(n.inputs[0]);
    p.idx = KernelBuilder::address(n.inputs[1]);
    p.x = KernelBuilder::address(n.inputs[2]);
    p.s = KernelBuilder::address(sc);
    p.out = KernelBuilder::address(n.output);
    p.rows = u32(n.inputs[0].shape[0]);
    p.width = u32(n.inputs[0].shape[1]);
    p.m = u32(n.inputs[1].shape[1]);
    p.per_entry = sc.ndim == 3 ? u32(sc.shape[2]) : 1;
    p.entries = u32(numel(n.inputs[1]));
    p.act = u32(n.iparams[0]);
    p.node = b.node_index();
    if (p.entries == 0 || p.per_entry == 0) return;  // empty output
    const Grid g = fold_groups(b.features(), p.entries);
    b.dispatch(b.features().subgroup_arithmetic ? "peer_gate_subgroups" : "peer_gate", p, g.x, g.y);
}

// ------------------------------------------------------------------ HIVE

struct HivePush {
    WeightArg bank, proj;
    uint64_t idx, w, out;
    uint32_t rows, rank, dh, heads, m, bags, node, pad;
};
static_assert(sizeof(HivePush) == 88);

bool hive_supports(const DeviceFeatures&, const mnemo_node& n) {
    const mnemo_tensor& bank = n.inputs[0];
    const mnemo_tensor& proj = n.inputs[3];
    return bank.shape[1] <= kMaxRank && small(n.inputs[1]) && small(n.inputs[2]) && small(n.output) &&
           row_bytes_fit(bank, bank.shape[1]) && row_bytes_fit(proj, proj.shape[2]) &&
           proj.shape[0] * proj.shape[1] <= UINT32_MAX;
}

void hive_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& idx = n.inputs[1];
    HivePush p{};
    p.bank = KernelBuilder::weight(n.inputs[0]);
    p.proj = KernelBuilder::weight(n.inputs[3]);
    p.idx = KernelBuilder::address(idx);
    p.w = KernelBuilder::address(n.inputs[2]);
    p.out = KernelBuilder::address(n.output);
    p.rows = u32(n.inputs[0].shape[0]);
    p.rank = u32(n.inputs[0].shape[1]);
    p.dh = u32(n.inputs[3].shape[2]);
    p.heads = u32(idx.shape[1]);
    p.m = u32(idx.shape[2]);
    p.bags = u32(idx.shape[0] * idx.shape[1]);
    p.node = b.node_index();
    if (p.bags == 0 || p.dh == 0) return;  // empty output
    const Grid g = fold_groups(b.features(), p.bags);
    b.dispatch("hive", p, g.x, g.y);
}

// ------------------------------------------------------------------ PK_PAIR_SCORES

struct PairScoresPush {
    uint64_t s, idx, out, core[kMaxCores];
    uint32_t core_dtypes, heads, nk, rk, k, cores, total, limit, node, pad;
};
static_assert(sizeof(PairScoresPush) == 104);

bool pair_scores_supports(const DeviceFeatures&, const mnemo_node& n) {
    return n.n_inputs - 2 <= kMaxCores && small(n.inputs[0]) && small(n.output);
}

void pair_scores_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& sc = n.inputs[0];
    const mnemo_tensor& idx = n.inputs[1];
    PairScoresPush p{};
    p.s = KernelBuilder::address(sc);
    p.idx = KernelBuilder::address(idx);
    p.out = KernelBuilder::address(n.output);
    p.cores = u32(n.n_inputs - 2);
    for (uint32_t c = 0; c < p.cores; ++c) {
        p.core[c] = KernelBuilder::address(n.inputs[2 + c]);
        p.core_dtypes |= static_cast<uint32_t>(n.inputs[2 + c].dtype) << (2 * c);
    }
    p.heads = u32(sc.shape[1] / 2);
    p.nk = u32(sc.shape[2]);
    p.rk = u32(sc.shape[3]);
    p.k = u32(idx.shape[2]);
    p.total = u32(numel(n.output));
    p.limit = u32(std::min<int64_t>(sc.shape[2] * sc.shape[2], INT32_MAX));
    p.node = b.node_index();
    if (p.total == 0) return;
    const Grid g = fold_groups(b.features(), groups_for(p.total, 64));
    // The additive sum is exact either way; Tucker sums match the reference bit for bit in double.
    const bool f64 = p.cores > 0 && b.features().shader_float64;
    b.dispatch(f64 ? "pk_pair_scores_f64" : "pk_pair_scores", p, g.x, g.y);
}

}  // namespace

void register_lookup_kernels() {
    register_kernel(MNEMO_OP_EMBEDDING_BAG, Kernel{embedding_bag_supports, nullptr, embedding_bag_build});
    register_kernel(MNEMO_OP_PEER_GATE, Kernel{peer_gate_supports, nullptr, peer_gate_build});
    register_kernel(MNEMO_OP_HIVE, Kernel{hive_supports, nullptr, hive_build});
    register_kernel(MNEMO_OP_PK_PAIR_SCORES, Kernel{pair_scores_supports, nullptr, pair_scores_build});
}

}  // namespace mnemo_vk
