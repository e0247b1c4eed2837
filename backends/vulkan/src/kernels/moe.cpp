// MOE_FFN: the routed experts of a mixture-of-experts FFN,
//   out[n] = sum_j w[n,j] * down[e] (silu(gate[e] x[n]) * (up[e] x[n])),  e = idx[n,j].
//
// Two paths, both with the hidden rows h = w * silu(gate x) * (up x) of every (token, choice)
// slot in scratch between the passes:
//  - decode (few slots): mat-vec passes over only the chosen experts (shaders/moe/moe_mv.comp):
//    UP per (slot, block of hidden rows), then DOWN per (token, block of output rows) summing the
//    choices in a fixed order. Every chosen expert's weights stream once per slot, which is what
//    a decode step has to read anyway.
//  - prefill (more slots, E <= 1024): the slots are grouped by expert (moe_group.comp, a counting
//    sort in scratch), then per expert GEMMs stream each expert's gate/up and down weights once
//    per chunk of tokens (moe_gemm.comp), writing y = down h per slot; moe_combine.comp sums the
//    token's slots in choice order. No float atomics anywhere, so results are deterministic.
// Tokens are processed in chunks (at most 64 MiB of slot rows; 16384 slots on the grouped path)
// so that scratch stays bounded; barriers between chunks come from the scratch ranges each
// dispatch declares.
//
// Expert weights may be block-quantized (the op's rule, as MATMUL's W): the passes' Q_TYPE
// variants decode them with shaders/quant.glsl ("moe_mv_up_q4_k_sg", "moe_gemm_down_q6_k"). An UP
// pass reads gate and up with one variant, so those two must share their dtype when either is
// quantized; down has its own (a K-quant mix often keeps down one type higher).
#include <algorithm>
#include <string>
#include <vector>

#include "kernel_api.hpp"
#include "mnemo/ops/dtype.hpp"

namespace mnemo_vk {
namespace {

constexpr uint64_t kScratchBudget = uint64_t{64} << 20;  // bytes of slot rows per chunk
constexpr uint64_t kDecodeSlots = 16;                   // up to this many slots: mat-vec path
constexpr uint64_t kMaxGroupSlots = 16384;              // slots per chunk: moe_group.comp is one workgroup
constexpr uint64_t kMaxGroupedExperts = 1024;           // moe_group.comp's shared counters
constexpr uint32_t kRowsPerGroup = 4;                   // moe_mv.comp's R
constexpr uint64_t kMaxElements = uint64_t{1} << 32;    // the shaders index with 32-bit integers
constexpr uint64_t kMaxGrid = 65535;                    // workgroups per dimension every device allows

// moe_gemm.comp's tile: TY invocations along slots (TS = 4 TY slots), RP weight rows per
// invocation (TF = 256 / TY * RP rows), KB-wide reduction slices; shared memory stays under the
// 16 KiB every device has.
struct GemmTile {
    uint32_t ty, rp, kb;
    uint32_t slots() const { return 4 * ty; }
    uint32_t rows() const { return 256 / ty * rp; }
};

// The smallest tile that still holds the slots an expert gets when routing is balanced.
GemmTile gemm_tile(uint64_t slots, uint64_t experts) {
    const uint64_t per_expert = (slots + experts - 1) / std::max<uint64_t>(experts, 1);
    if (per_expert <= 16) return {4, 2, 8};
    if (per_expert <= 32) return {8, 4, 8};
    return {16, 4, 16};
}

uint64_t align16(uint64_t v) { return (v + 15) & ~uint64_t{15}; }

struct Plan {
    uint64_t n_tok, k, dim, hidden, experts;
    bool grouped;
    uint64_t chunk_tokens;
    // Scratch offsets (bytes): grouped: start [E+1] i32, list [slots] i32, h, y; mat-vec: h only.
    uint64_t start_at, list_at, h_at, y_at, bytes;
};

Plan plan_for(const mnemo_node& n) {
    Plan p{};
    p.n_tok = static_cast<uint64_t>(n.inputs[0].shape[0]);
    p.dim = static_cast<uint64_t>(n.inputs[0].shape[1]);
    p.k = static_cast<uint64_t>(n.inputs[1].shape[1]);
    p.experts = static_cast<uint64_t>(n.inputs[3].shape[0]);
    p.hidden = static_cast<uint64_t>(n.inputs[3].shape[1]);
    p.grouped = p.experts <= kMaxGroupedExperts && p.n_tok * p.k > kDecodeSlots;
    const uint64_t per_token = std::max<uint64_t>(1, p.k * (p.hidden + (p.grouped ? p.dim + 1 : 0)) * 4);
    p.chunk_tokens = std::clamp<uint64_t>(kScratchBudget / per_token, 1, std::max<uint64_t>(p.n_tok, 1));
    // Grid limits: mat-vec UP has a workgroup row per slot, DOWN one per token. The grouping
    // pass runs in one workgroup, so its chunks are kept to a size it sorts in a few microseconds.
    p.chunk_tokens = std::min(p.chunk_tokens, (p.grouped ? kMaxGroupSlots : kMaxGrid) / std::max<uint64_t>(p.k, 1));
    p.chunk_tokens = std::max<uint64_t>(p.chunk_tokens, 1);
    const uint64_t slots = p.chunk_tokens * p.k;
    if (p.grouped) {
        p.start_at = 0;
        p.list_at = align16((p.experts + 1) * 4);
        p.h_at = align16(p.list_at + slots * 4);
        p.y_at = align16(p.h_at + slots * p.hidden * 4);
        p.bytes = align16(p.y_at + slots * p.dim * 4);
    } else {
        p.h_at = 0;
        p.bytes = align16(slots * p.hidden * 4);
    }
    p.bytes = std::max<uint64_t>(p.bytes, 16);  // F = 0 or k = 0 still get a (never written) h range
    return p;
}

// The refusal a user can act on (requantize with gate and up alike, or run on the CPU/CUDA).
std::string refusal(const DeviceFeatures&, const mnemo_node& n) {
    const int32_t gate_dt = n.inputs[3].dtype, up_dt = n.inputs[4].dtype;
    if (n.n_inputs == 6 && gate_dt != up_dt && (dtype_is_quantized(gate_dt) || dtype_is_quantized(up_dt)))
        return std::string("moe_ffn: gate (") + std::string(mnemo::dtype_name(static_cast<mnemo::DType>(gate_dt))) + ") and up (" +
               std::string(mnemo::dtype_name(static_cast<mnemo::DType>(up_dt))) +
               ") weights of different types, one block-quantized: the Vulkan up pass decodes both with one shader "
               "variant (quantize them to the same type, or run on the CPU or CUDA backend)";
    return "";
}

bool supports(const DeviceFeatures& f, const mnemo_node& n) {
    if (n.n_inputs != 6 || n.inputs[0].dtype != MNEMO_DTYPE_F32 || n.inputs[1].dtype != MNEMO_DTYPE_I32 ||
        n.inputs[2].dtype != MNEMO_DTYPE_F32 || n.output.dtype != MNEMO_DTYPE_F32)
        return false;
    for (int i = 3; i < 6; ++i) {
        const mnemo_tensor& t = n.inputs[i];
        if (dtype_is_quantized(t.dtype) ? !quant_tensor_ok(t) : !is_weight_dtype(t.dtype)) return false;
        if (numel(t) >= kMaxElements) return false;
    }
    const int32_t gate_dt = n.inputs[3].dtype, up_dt = n.inputs[4].dtype;
    if (gate_dt != up_dt && (dtype_is_quantized(gate_dt) || dtype_is_quantized(up_dt))) return false;
    if (numel(n.inputs[0]) >= kMaxElements || numel(n.inputs[1]) >= kMaxElements) return false;
    // Slot rows of a chunk (h and y) are indexed in 32 bits too.
    const Plan p = plan_for(n);
    const uint64_t slots = p.chunk_tokens * p.k;
    if (slots * std::max(p.hidden, p.dim) >= kMaxElements) return false;
    // Grids: mat-vec x = rows / R, y = slots or tokens; GEMM x = rows / TF (TF >= 64).
    const uint64_t gx = std::min<uint64_t>(f.max_workgroup_count[0], kMaxGrid), gy = std::min<uint64_t>(f.max_workgroup_count[1], kMaxGrid);
    if (!p.grouped) return (std::max(p.hidden, p.dim) + kRowsPerGroup - 1) / kRowsPerGroup <= gx && slots <= gy;
    return (std::max(p.hidden, p.dim) + 63) / 64 <= gx && p.experts <= gy;
}

uint64_t scratch_bytes(const DeviceFeatures&, const mnemo_node& n) { return plan_for(n).bytes; }

struct MvPush {
    WeightArg w0, w1;
    uint64_t src, idx, wts, dst;
    uint32_t k, experts, dim, hidden;
    uint32_t n0, node;
};
static_assert(sizeof(MvPush) == 88);

struct GroupPush {
    uint64_t idx, start, list;
    uint32_t slot0, slots, experts, node;
};

struct GemmPush {
    WeightArg w0, w1;
    uint64_t src, wts, start, list, dst;
    uint32_t k, rows, len, slot0;
};
static_assert(sizeof(GemmPush) == 88);

struct CombinePush {
    uint64_t y, idx, out;
    uint32_t k, experts, dim, n0, count, row_groups;
};

// Rows of 16-bit weights of even length starting on a word can be read in pairs.
bool pairs_ok(const mnemo_tensor& t, uint64_t row_len) {
    return (t.dtype == MNEMO_DTYPE_F16 || t.dtype == MNEMO_DTYPE_BF16) && row_len % 2 == 0 && KernelBuilder::weight(t).first == 0;
}

// The variant of a pass over the weight `t`: "moe_mv_up" + "_q4_k" + "_sg".
std::string variant(const char* base, const mnemo_tensor& t, bool sg = false) {
    std::string v = base;
    if (const char* q = quant_tag(t.dtype)) v += std::string("_") + q;
    if (sg) v += "_sg";
    return v;
}

void build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const Plan p = plan_for(n);
    if (p.n_tok == 0 || p.dim == 0) return;
    const mnemo_tensor &x = n.inputs[0], &idx = n.inputs[1], &w = n.inputs[2];
    const mnemo_tensor &gate = n.inputs[3], &up = n.inputs[4], &down = n.inputs[5];
    const bool sg = b.features().subgroup_arithmetic;
    const uint64_t slots_max = p.chunk_tokens * p.k;
    const Range h_range = b.scratch_range(p.h_at, std::max<uint64_t>(slots_max * p.hidden * 4, 4));

    for (uint64_t n0 = 0; n0 < p.n_tok; n0 += p.chunk_tokens) {
        const uint64_t tokens = std::min(p.chunk_tokens, p.n_tok - n0);
        const uint64_t slots = tokens * p.k;
        if (!p.grouped) {
            MvPush u{};
            u.w0 = KernelBuilder::weight(gate);
            u.w1 = KernelBuilder::weight(up);
            u.src = KernelBuilder::address(x);
            u.idx = KernelBuilder::address(idx);
            u.wts = KernelBuilder::address(w);
            u.dst = b.scratch(p.h_at);
            u.k = static_cast<uint32_t>(p.k);
            u.experts = static_cast<uint32_t>(p.experts);
            u.dim = static_cast<uint32_t>(p.dim);
            u.hidden = static_cast<uint32_t>(p.hidden);
            u.n0 = static_cast<uint32_t>(n0);
            u.node = b.node_index();
            if (slots > 0 && p.hidden > 0) {
                const uint32_t pairs = pairs_ok(gate, p.dim) && pairs_ok(up, p.dim) ? 1 : 0;
                Dispatch& d = b.dispatch(variant("moe_mv_up", gate, sg).c_str(), u, groups_for(p.hidden, kRowsPerGroup),
                                         static_cast<uint32_t>(slots), 1, {pairs});
                d.reads = {KernelBuilder::range(x), KernelBuilder::range(idx), KernelBuilder::range(w),
                           KernelBuilder::range(gate), KernelBuilder::range(up)};
                d.writes = {h_range};
            }
            MvPush dn = u;
            dn.w0 = dn.w1 = KernelBuilder::weight(down);
            dn.src = b.scratch(p.h_at);
            dn.dst = KernelBuilder::address(n.output);
            const uint32_t pairs = pairs_ok(down, p.hidden) ? 1 : 0;
            Dispatch& d = b.dispatch(variant("moe_mv_down", down, sg).c_str(), dn, groups_for(p.dim, kRowsPerGroup),
                                     static_cast<uint32_t>(tokens), 1, {pairs});
            d.reads = {KernelBuilder::range(idx), KernelBuilder::range(down), h_range};
            continue;
        }

        const Range groups_range = b.scratch_range(p.start_at, p.h_at - p.start_at);
        const Range y_range = b.scratch_range(p.y_at, std::max<uint64_t>(slots_max * p.dim * 4, 4));
        GroupPush g{};
        g.idx = KernelBuilder::address(idx);
        g.start = b.scratch(p.start_at);
        g.list = b.scratch(p.list_at);
        g.slot0 = static_cast<uint32_t>(n0 * p.k);
        g.slots = static_cast<uint32_t>(slots);
        g.experts = static_cast<uint32_t>(p.experts);
        g.node = b.node_index();
        Dispatch& dg = b.dispatch("moe_group", g, 1);
        dg.reads = {KernelBuilder::range(idx)};
        dg.writes = {groups_range};

        // Workgroups per expert along z share its slot tiles: about one tile each when routing
        // is balanced; a busier expert's workgroups take several tiles in turn.
        const GemmTile tile = gemm_tile(slots, p.experts);
        const std::vector<uint32_t> spec = {tile.ty, tile.rp, tile.kb};
        const uint64_t tiles = (slots + tile.slots() - 1) / tile.slots();
        const uint32_t z = static_cast<uint32_t>(std::clamp<uint64_t>((tiles + p.experts - 1) / p.experts, 1, 64));
        GemmPush gu{};
        gu.w0 = KernelBuilder::weight(gate);
        gu.w1 = KernelBuilder::weight(up);
        gu.src = KernelBuilder::address(x);
        gu.wts = KernelBuilder::address(w);
        gu.start = g.start;
        gu.list = g.list;
        gu.dst = b.scratch(p.h_at);
        gu.k = static_cast<uint32_t>(p.k);
        gu.rows = static_cast<uint32_t>(p.hidden);
        gu.len = static_cast<uint32_t>(p.dim);
        gu.slot0 = g.slot0;
        if (p.hidden > 0) {
            Dispatch& d = b.dispatch(variant("moe_gemm_up", gate).c_str(), gu, groups_for(p.hidden, tile.rows()), static_cast<uint32_t>(p.experts), z, spec);
            d.reads = {KernelBuilder::range(x), KernelBuilder::range(w), KernelBuilder::range(gate),
                       KernelBuilder::range(up), groups_range};
            d.writes = {h_range};
        }
        GemmPush gd = gu;
        gd.w0 = gd.w1 = KernelBuilder::weight(down);
        gd.src = b.scratch(p.h_at);
        gd.dst = b.scratch(p.y_at);
        gd.rows = static_cast<uint32_t>(p.dim);
        gd.len = static_cast<uint32_t>(p.hidden);
        Dispatch& dd = b.dispatch(variant("moe_gemm_down", down).c_str(), gd, groups_for(p.dim, tile.rows()), static_cast<uint32_t>(p.experts), z, spec);
        dd.reads = {KernelBuilder::range(down), groups_range, h_range};
        dd.writes = {y_range};

        CombinePush c{};
        c.y = b.scratch(p.y_at);
        c.idx = KernelBuilder::address(idx);
        c.out = KernelBuilder::address(n.output);
        c.k = static_cast<uint32_t>(p.k);
        c.experts = static_cast<uint32_t>(p.experts);
        c.dim = static_cast<uint32_t>(p.dim);
        c.n0 = static_cast<uint32_t>(n0);
        c.count = static_cast<uint32_t>(tokens * p.dim);
        const uint32_t all = groups_for(c.count, 256);
        const Grid cg = fold_groups(b.features(), all);
        c.row_groups = cg.x;
        Dispatch& dc = b.dispatch("moe_combine", c, cg.x, cg.y);
        dc.reads = {KernelBuilder::range(idx), y_range};
    }
}

}  // namespace

void register_moe_kernels() {
    register_kernel(MNEMO_OP_MOE_FFN, Kernel{supports, scratch_bytes, build, /*reads_quantized=*/true, refusal});
}

}  // namespace mnemo_vk
