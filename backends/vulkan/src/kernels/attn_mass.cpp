// ATTN_MASS (Memory3 token selection) in two dispatches of shaders/attn_mass/attn_mass.comp: in softmax
// mode, a (max, sum) normaliser per (query token, head) into scratch; then one workgroup per
// (key token, kv group) sums the normalised weights it receives. The shader's header says why
// the sum is owned by key tokens (one writer per output element, no float atomics).
#include <algorithm>
#include <climits>

#include "kernel_api.hpp"

namespace mnemo_vk {
namespace {

constexpr uint32_t kWorkgroup = 128;  // attn_mass.comp local_size_x

struct MassPush {
    uint64_t q, k, seq, pos, out, norm;
    uint32_t n, hq, hkv;
    int32_t first;
    uint32_t flags;  // 1: exp mode, 2: nothing counted
    float scale;
};
static_assert(sizeof(MassPush) == 72);

bool softmax_mode(const mnemo_node& nd) { return nd.iparams[0] == 0; }

uint64_t norm_bytes(const mnemo_node& nd) {
    return static_cast<uint64_t>(nd.inputs[0].shape[0]) * static_cast<uint64_t>(nd.inputs[0].shape[1]) * 8;
}

bool supports(const DeviceFeatures& f, const mnemo_node& nd) {
    for (int32_t i = 0; i < 2; ++i)
        if (nd.inputs[i].dtype != MNEMO_DTYPE_F32) return false;
    const uint64_t n = static_cast<uint64_t>(nd.inputs[0].shape[0]), hq = static_cast<uint64_t>(nd.inputs[0].shape[1]);
    const uint64_t d = static_cast<uint64_t>(nd.inputs[0].shape[2]), hkv = static_cast<uint64_t>(nd.inputs[1].shape[1]);
    // 32-bit element indices over q, k and the normalisers; the grid is (heads, tokens).
    if (n * hq * std::max<uint64_t>(d, 2) >= (uint64_t{1} << 32) || n * hq >= (uint64_t{1} << 31)) return false;
    if (n > f.max_workgroup_count[1] || hq > f.max_workgroup_count[0] || hkv > f.max_workgroup_count[0]) return false;
    return 4 * (d + 1 + 2 * kWorkgroup) <= f.max_shared_memory && kWorkgroup <= f.max_workgroup_invocations;
}

uint64_t scratch_bytes(const DeviceFeatures&, const mnemo_node& nd) { return softmax_mode(nd) ? norm_bytes(nd) : 0; }

void build(KernelBuilder& b) {
    const mnemo_node& nd = b.node();
    const uint32_t n = static_cast<uint32_t>(nd.inputs[0].shape[0]);
    if (n == 0) return;
    MassPush p{};
    p.q = KernelBuilder::address(nd.inputs[0]);
    p.k = KernelBuilder::address(nd.inputs[1]);
    p.seq = KernelBuilder::address(nd.inputs[2]);
    p.pos = KernelBuilder::address(nd.inputs[3]);
    p.out = KernelBuilder::address(nd.output);
    p.n = n;
    p.hq = static_cast<uint32_t>(nd.inputs[0].shape[1]);
    p.hkv = static_cast<uint32_t>(nd.inputs[1].shape[1]);
    // Positions are i32: a first position below their range counts them all, one above counts none.
    const int64_t first = nd.iparams[1];
    p.first = static_cast<int32_t>(std::clamp<int64_t>(first, INT32_MIN, INT32_MAX));
    p.flags = (softmax_mode(nd) ? 0u : 1u) | (first > INT32_MAX ? 2u : 0u);
    p.scale = nd.fparams[0];
    const std::vector<uint32_t> spec = {static_cast<uint32_t>(nd.inputs[0].shape[2])};

    const bool norm = softmax_mode(nd) && p.hq > 0;
    if (norm) {
        p.norm = b.scratch(0);
        Dispatch& d = b.dispatch("attn_mass_norm", p, p.hq, n, 1, spec);
        d.writes = {b.scratch_range(0, norm_bytes(nd))};
    }
    Dispatch& d = b.dispatch("attn_mass_sum", p, p.hkv, n, 1, spec);
    if (norm) d.reads.push_back(b.scratch_range(0, norm_bytes(nd)));
}

}  // namespace

void register_attn_mass_kernels() { register_kernel(MNEMO_OP_ATTN_MASS, Kernel{supports, scratch_bytes, build}); }

}  // namespace mnemo_vk
