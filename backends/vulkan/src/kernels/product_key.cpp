// PK_SCORE: sub-key scores of product-key memories, one tiled GEMM per bank (shaders/pk_score.comp).
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

#include "kernel_api.hpp"

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

}  // namespace

void register_product_key_kernels() { register_kernel(MNEMO_OP_PK_SCORE, Kernel{supports, nullptr, build}); }

}  // namespace mnemo_vk
