// The product-key family: PK_SCORE and PK_PAIR_SCORES here, PK_TOPK in product_keys_topk.cpp.
//
// PK_SCORE: sub-key scores of product-key memories, one tiled GEMM per bank
// (shaders/product_keys/pk_score.comp).
//
// The tile shape (specialization constants) follows the token count. At decode (up to 8 tokens)
// the op streams every key once and does a few multiply-adds per key element, so workgroups of
// 64 invocations own 64 columns and every token (one column each), which spreads the keys over
// many workgroups; from 9 tokens on, 256 invocations hold 2 x 4 or 4 x 4 register tiles (32 or
// 64 tokens x 64 columns), so each staged key element is reused 32 or 64 times.
// With the key-norm gain the shader takes each key's RMS from the key values it stages anyway,
// so the keys are read once; a pre-pass writing the norms to scratch would read them twice,
// which costs most at decode, where the kernel is bound by reading the keys.
#include <algorithm>

#include <climits>

#include "product_keys.hpp"
#include "topk_select.hpp"

namespace mnemo_vk {
namespace {

struct PkScorePush {
    WeightArg keys, gain;
    uint64_t q, out;
    uint32_t n_tok, n_q, kdim, rank;
    uint32_t nk, share, ncols, banks;
    float eps;
    uint32_t norm;
};
static_assert(sizeof(PkScorePush) == 88);

struct Tile {
    uint32_t wg, tt, tp, cp, kb;
    uint32_t tokens() const { return tt * tp; }
    uint32_t columns() const { return wg / tt * cp; }
};

// Workgroup size, threads along tokens, tokens and columns per thread, d per staged chunk.
// Shared memory: (KB x (TC + 1) + TN x (KB + 1)) floats, under 10 KiB for both shapes.
Tile tile_for(uint64_t n_tok) {
    if (n_tok <= 8) {
        uint32_t tp = 1;
        while (tp < n_tok) tp *= 2;
        return {64, 1, tp, 1, 32};
    }
    return {256, 16, n_tok <= 32 ? 2u : 4u, 4, 16};
}

constexpr uint64_t kMaxElements = uint64_t{1} << 32;  // the shaders index with 32-bit integers

bool supports(const DeviceFeatures& f, const mnemo_node& n) {
    if (n.n_inputs < 2 || n.n_inputs > 3) return false;
    if (n.inputs[0].dtype != MNEMO_DTYPE_F32 || n.output.dtype != MNEMO_DTYPE_F32) return false;
    if (!is_weight_dtype(n.inputs[1].dtype) || (n.n_inputs == 3 && !is_weight_dtype(n.inputs[2].dtype))) return false;
    if (n.iparams[1] < 1) return false;
    if (numel(n.inputs[0]) >= kMaxElements || numel(n.inputs[1]) >= kMaxElements || numel(n.output) >= kMaxElements)
        return false;
    // Grid: column tiles x token tiles x banks.
    const uint64_t n_tok = static_cast<uint64_t>(n.inputs[0].shape[0]);
    const uint64_t ncols = static_cast<uint64_t>(n.inputs[1].shape[1] * n.inputs[1].shape[3]);
    const Tile t = tile_for(n_tok);
    return (ncols + t.columns() - 1) / t.columns() <= f.max_workgroup_count[0] &&
           (n_tok + t.tokens() - 1) / t.tokens() <= f.max_workgroup_count[1] &&
           static_cast<uint64_t>(n.inputs[1].shape[0]) <= f.max_workgroup_count[2];
}

void build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& q = n.inputs[0];
    const mnemo_tensor& keys = n.inputs[1];
    const bool norm = n.n_inputs == 3;
    PkScorePush p{};
    p.keys = KernelBuilder::weight(keys);
    p.gain = norm ? KernelBuilder::weight(n.inputs[2]) : p.keys;
    p.q = KernelBuilder::address(q);
    p.out = KernelBuilder::address(n.output);
    p.n_tok = static_cast<uint32_t>(q.shape[0]);
    p.n_q = static_cast<uint32_t>(q.shape[1]);
    p.kdim = static_cast<uint32_t>(q.shape[3]);
    p.rank = static_cast<uint32_t>(keys.shape[3]);
    p.nk = static_cast<uint32_t>(keys.shape[1]);
    p.share = static_cast<uint32_t>(n.iparams[1]);
    p.ncols = p.nk * p.rank;
    p.banks = static_cast<uint32_t>(2 * n.iparams[0]);
    p.eps = n.fparams[0];
    p.norm = norm ? 1 : 0;
    if (numel(n.output) == 0) return;
    const Tile t = tile_for(p.n_tok);
    b.dispatch("pk_score", p, groups_for(p.ncols, t.columns()), groups_for(p.n_tok, t.tokens()), p.banks,
               {t.wg, t.tt, t.tp, t.cp, t.kb});
}

// ------------------------------------------------------------------ PK_PAIR_SCORES

// Tucker cores a PK_PAIR_SCORES push block has room for (pk_pair_scores.comp MAX_CORES).
constexpr int kPairMaxCores = 5;
// Element counts pk_pair_scores.comp indexes with 32-bit unsigned integers stay below 2^31, so
// that no driver can take an index for a negative one.
bool small(const mnemo_tensor& t) { return numel(t) < (uint64_t{1} << 31); }
uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

struct PairScoresPush {
    uint64_t s, idx, out, core[kPairMaxCores];
    uint32_t core_dtypes, heads, nk, rk, k, cores, total, limit, node, pad;
};
static_assert(sizeof(PairScoresPush) == 104);

bool pair_scores_supports(const DeviceFeatures&, const mnemo_node& n) {
    return n.n_inputs - 2 <= kPairMaxCores && small(n.inputs[0]) && small(n.output);
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

void register_product_keys_kernels() {
    register_kernel(MNEMO_OP_PK_SCORE, Kernel{supports, nullptr, build});
    register_kernel(MNEMO_OP_PK_TOPK, Kernel{pk_topk_supports, pk_topk_scratch, pk_topk_build});
    register_kernel(MNEMO_OP_PK_PAIR_SCORES, Kernel{pair_scores_supports, nullptr, pair_scores_build});
}

}  // namespace mnemo_vk
