// The lookup family, the value retrieval of memory layers: EMBEDDING_BAG (fused gather-weight-sum
// over a table, with UltraMem's groups and per-core weights), MEM_INDEX (UltraMem's virtual index
// -> table row pipeline), PEER_GATE (a gathered row's dot product with the query, activated,
// scaling that entry's scores) and HIVE (MIDUS: a bag per head over a latent bank, then the
// head's projection).
//
// Each is one dispatch (shaders/lookup/embedding_bag.comp, mem_index.comp, peer_gate.comp,
// hive.comp). Indices are validated by the shaders: a bad one is reported through the
// status word and its entry skipped, and the graph returns the error. Work-item counts are
// folded into an x * y grid so that prefill-sized batches stay under the per-dimension limit.
//
// The value table, pre-value table and latent bank may be block-quantized (the op rules: they are
// where a memory layer spends its bytes); the shaders' Q_TYPE variants (`embedding_bag_q8_0`, ...)
// decode them with shaders/quant.glsl, as GET_ROWS does.
#include <algorithm>
#include <climits>
#include <string>

#include "kernel_api.hpp"

namespace mnemo_vk {
namespace {

// Element counts the shaders index with 32-bit unsigned integers are kept below 2^31, so that
// no driver can take an index for a negative one. Gathered rows are addressed in 64 bits
// (lookup_common.glsl), so tables and banks may be larger.
constexpr uint64_t kMaxElements = uint64_t{1} << 31;
// The latent vector of a HIVE bag lives in shared memory (hive.comp MAX_RANK).
constexpr int64_t kMaxRank = 2048;
// Columns per workgroup block (embedding_bag.comp: 64 lanes x 2 columns, or x 4 columns, a quad,
// for a block-quantized table).
constexpr uint64_t kBlockCols = 128;
constexpr uint64_t kQuantBlockCols = 256;

bool small(const mnemo_tensor& t) { return numel(t) < kMaxElements; }
// A row of `cols` elements of the weight `t` spans fewer than 2^32 bytes (weight_row in
// lookup_common.glsl multiplies in 32 bits); a block-quantized one must fit quant.glsl
// (quant_tensor_ok: an even start, rows below 2^31 bytes).
bool row_bytes_fit(const mnemo_tensor& t, int64_t cols) {
    if (dtype_is_quantized(t.dtype)) return quant_tensor_ok(t);
    return static_cast<uint64_t>(cols) * dtype_bytes(t.dtype) < (uint64_t{1} << 32);
}

// The shader variant for a table: `base` for a float table, `base_q4_k` for a q4_k one.
std::string variant_for(const char* base, const mnemo_tensor& table) {
    std::string v = base;
    if (const char* q = quant_tag(table.dtype)) v += std::string("_") + q;
    return v;
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
    p.blocks = groups_for(p.cols, dtype_is_quantized(table.dtype) ? kQuantBlockCols : kBlockCols);
    p.segments = u32(n.inputs[1].shape[0] * p.groups);
    p.limit = u32(bag_groups(n) * table.shape[0]);
    p.node = b.node_index();
    const uint64_t work = uint64_t{p.segments} * p.blocks;
    if (work == 0) return;  // no bags or no columns: the output is empty
    const Grid g = fold_groups(b.features(), work);
    b.dispatch(variant_for("embedding_bag", table).c_str(), p, g.x, g.y);
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
    b.dispatch(variant_for(b.features().subgroup_arithmetic ? "peer_gate_subgroups" : "peer_gate", n.inputs[0]).c_str(), p, g.x, g.y);
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
    b.dispatch(variant_for("hive", n.inputs[0]).c_str(), p, g.x, g.y);
}

constexpr uint32_t kLocal = 256;  // mem_index.comp local_size_x
// Element indices inside the shaders stay below 2^31: an access chain index is signed.
constexpr uint64_t kMaxIndex = 0x7FFFFFFFull;

// 256-wide groups covering `count` invocations; the shader folds (x, y) back with row_groups.
Grid grid_for(const KernelBuilder& b, uint64_t count) { return fold_groups(b.features(), groups_for(count, kLocal)); }

// ------------------------------------------------------------------ MEM_INDEX

struct MemIndexPush {
    uint64_t v, shuffle, out;
    uint32_t count, shuffle_size, value_num, offset, rows, groups;
    int32_t s_limit;
    uint32_t with_group, node, row_groups;
};

bool mem_index_supported(const DeviceFeatures&, const mnemo_node& n) {
    for (int32_t i = 0; i < n.n_inputs; ++i)
        if (n.inputs[i].dtype != MNEMO_DTYPE_I32) return false;
    return n.output.dtype == MNEMO_DTYPE_I32 && numel(n.inputs[0]) <= kMaxIndex;
}

void build_mem_index(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const bool shuffled = n.n_inputs > 1;
    // The engine's shape rules hold: value_num, A, G >= 1, 0 <= offset < A <= 2^31 - 1, and
    // G * A fits an i32 with groups. Every s is an i32 (< 2^31), so clamping value_num and G to
    // 2^31 changes neither s / value_num, s % value_num nor the test g >= G.
    constexpr int64_t kClamp = int64_t{1} << 31;
    const int64_t value_num = std::min(n.iparams[0], kClamp), groups = std::min(n.iparams[3], kClamp);
    MemIndexPush p{};
    p.v = KernelBuilder::address(n.inputs[0]);
    p.shuffle = shuffled ? KernelBuilder::address(n.inputs[1]) : p.v;
    p.out = KernelBuilder::address(n.output);
    p.count = static_cast<uint32_t>(numel(n.inputs[0]));
    p.shuffle_size = shuffled ? static_cast<uint32_t>(std::min<uint64_t>(numel(n.inputs[1]), kMaxIndex)) : 0;
    p.value_num = static_cast<uint32_t>(value_num);
    p.offset = static_cast<uint32_t>(n.iparams[1]);
    p.rows = static_cast<uint32_t>(n.iparams[2]);
    p.groups = static_cast<uint32_t>(groups);
    p.s_limit = static_cast<int32_t>(std::min<int64_t>(value_num * groups, kClamp - 1));
    p.with_group = n.iparams[4] != 0 ? 1u : 0u;
    p.node = b.node_index();
    if (p.count == 0) return;
    const Grid g = grid_for(b, p.count);
    p.row_groups = g.x;
    b.dispatch(shuffled ? "mem_index_shuffle" : "mem_index", p, g.x, g.y);
}

}  // namespace

void register_lookup_kernels() {
    register_kernel(MNEMO_OP_EMBEDDING_BAG, Kernel{embedding_bag_supports, nullptr, embedding_bag_build, /*reads_quantized=*/true});
    register_kernel(MNEMO_OP_MEM_INDEX, Kernel{mem_index_supported, nullptr, build_mem_index});
    register_kernel(MNEMO_OP_PEER_GATE, Kernel{peer_gate_supports, nullptr, peer_gate_build, /*reads_quantized=*/true});
    register_kernel(MNEMO_OP_HIVE, Kernel{hive_supports, nullptr, hive_build, /*reads_quantized=*/true});
}

}  // namespace mnemo_vk
