// ATTENTION: a streaming-softmax workgroup per (token, query head) (shaders/attention/attention.comp).
// When few queries face a long cache (decode), one workgroup per head cannot fill a GPU, so the
// key range is cut into chunks, one workgroup each, and a second dispatch merges the chunks'
// partial results from scratch memory (flash decoding, shaders/attention/attention_combine.comp). pos is
// data the graph never sees, so the cut is planned for the cache capacity C and chunks beyond a
// token's position exit at once. An optional prefix (explicit memories: inputs 5..8) is read
// by the same workgroups before the cache, into the same running softmax; under the split it
// belongs to chunk 0. The caches (and the prefix) are f32, f16 (the *_f16 shaders, which index
// an f16 tensor by 32-bit element numbers) or q8_0 (the *_q8_0 shaders: rows of 34-byte blocks,
// read as quads of values under their block's scale).
#include <algorithm>

#include <string>

#include "kernel_api.hpp"

namespace mnemo_vk {
namespace {

constexpr uint32_t kWorkgroup = 128;     // keys per tile; a power of two
constexpr uint32_t kMaxAcc = 8;          // output units per lane the shader keeps in registers
constexpr uint64_t kTargetGroups = 1024;  // workgroups that keep a large GPU busy
constexpr uint64_t kMinChunk = 2 * kWorkgroup;
constexpr uint64_t kMaxSplits = 128;     // attention_combine.comp's shared array

struct Shape {
    uint64_t n, hq, d, s, hkv, c, dv;
    uint64_t blocks = 0, slots = 0;  // prefix B and M (0 without a prefix)
};

bool has_prefix(const mnemo_node& nd) { return nd.n_inputs >= 8; }

Shape shape_of(const mnemo_node& nd) {
    const mnemo_tensor& q = nd.inputs[0];
    const mnemo_tensor& k = nd.inputs[1];
    const mnemo_tensor& v = nd.inputs[2];
    Shape s{static_cast<uint64_t>(q.shape[0]), static_cast<uint64_t>(q.shape[1]), static_cast<uint64_t>(q.shape[2]),
            static_cast<uint64_t>(k.shape[0]), static_cast<uint64_t>(k.shape[1]), static_cast<uint64_t>(k.shape[2]),
            static_cast<uint64_t>(v.shape[3])};
    if (has_prefix(nd)) {
        s.blocks = static_cast<uint64_t>(nd.inputs[5].shape[0]);
        s.slots = static_cast<uint64_t>(nd.inputs[5].shape[2]);
    }
    return s;
}

// How the value columns spread over the workgroup: `vw` floats per load, `lanes` threads per key
// group (the rest of the workgroup splits the tile's keys), `acc` units per lane.
struct Lanes {
    uint32_t vw, lanes, acc;
};

Lanes lanes_for(uint64_t dv, uint32_t vw) {
    const uint64_t cols = std::max<uint64_t>(dv / vw, 1);
    uint32_t lanes = 1;
    while (lanes < kWorkgroup && lanes < cols) lanes *= 2;
    return {vw, lanes, static_cast<uint32_t>((cols + lanes - 1) / lanes)};
}

uint64_t shared_bytes(const Shape& s, const Lanes& l) {
    return 4 * ((s.d + 1) + 2 * kWorkgroup + uint64_t{kWorkgroup} * l.acc * l.vw + kWorkgroup / l.lanes);
}

// Chunks per (token, head): 1 unless there are too few heads to fill the device and the cache
// spans several chunks.
struct Split {
    uint64_t splits, chunk;
};

Split split_for(const Shape& s) {
    const uint64_t tasks = s.n * s.hq;
    if (tasks == 0 || tasks >= kTargetGroups || s.c < 2 * kMinChunk) return {1, s.c};
    const uint64_t want = (kTargetGroups + tasks - 1) / tasks;
    uint64_t chunk = std::max(kMinChunk, (s.c + want - 1) / want);
    chunk = std::max(chunk, (s.c + kMaxSplits - 1) / kMaxSplits);
    chunk = (chunk + kWorkgroup - 1) / kWorkgroup * kWorkgroup;
    const uint64_t splits = (s.c + chunk - 1) / chunk;
    return splits > 1 ? Split{splits, chunk} : Split{1, s.c};
}

// Scratch of the split path: one record per (token, head, chunk) of (m, sum, unnormalised row).
uint64_t part_floats(const Shape& s, const Split& sp) { return s.n * s.hq * sp.splits * (s.dv + 2); }

bool f16_cache(const mnemo_node& nd) { return nd.inputs[1].dtype == MNEMO_DTYPE_F16; }
bool q8_cache(const mnemo_node& nd) { return nd.inputs[1].dtype == MNEMO_DTYPE_Q8_0; }

// The attention shader of the cache's dtype, reduction and pass.
std::string shader_name(const mnemo_node& nd, bool subgroups, bool split) {
    std::string name = "attention";
    if (f16_cache(nd)) name += "_f16";
    if (q8_cache(nd)) name += "_q8_0";
    if (split) name += "_split";
    if (!subgroups) name += "_shmem";
    return name;
}

bool supports(const DeviceFeatures& f, const mnemo_node& nd) {
    if (nd.inputs[0].dtype != MNEMO_DTYPE_F32) return false;
    // The shape rule made k, v (and pk, pv) one dtype.
    const int32_t cache = nd.inputs[1].dtype;
    if (cache != MNEMO_DTYPE_F32 && cache != MNEMO_DTYPE_F16 && cache != MNEMO_DTYPE_Q8_0) return false;
    const Shape s = shape_of(nd);
    if (cache == MNEMO_DTYPE_Q8_0) {
        // Whole blocks per row (the op rule's too), and blocks on even bytes.
        if (s.d % 32 != 0 || s.dv % 32 != 0) return false;
        for (int32_t i : {1, 2, 5, 6})
            if ((i < 5 || has_prefix(nd)) && nd.inputs[i].offset % 2 != 0) return false;
    }
    if (cache == MNEMO_DTYPE_F16) {
        // Tensors start on a word; their elements are numbered in 32 bits.
        constexpr uint64_t k4G = uint64_t{1} << 32;
        for (int32_t i : {1, 2, 5, 6})
            if ((i < 5 || has_prefix(nd)) && (nd.inputs[i].offset % 4 != 0 || numel(nd.inputs[i]) >= k4G)) return false;
    }
    constexpr uint64_t k4G = uint64_t{1} << 32;
    // 32-bit indexing inside one (sequence or prefix block, kv head) slab, over q and out, and
    // over the split records.
    if (s.c * std::max(s.d, s.dv) >= k4G || s.n * s.hq * std::max(s.d, s.dv) >= k4G || s.s * s.hkv * s.c >= k4G ||
        s.slots * std::max(s.d, s.dv) >= k4G || s.blocks * s.hkv * s.slots >= k4G || s.slots >= (k4G >> 1) ||
        s.blocks >= (k4G >> 1) || part_floats(s, split_for(s)) >= k4G)
        return false;
    if (s.hq > f.max_workgroup_count[0]) return false;
    for (uint32_t vw : {1u, 2u, 4u}) {
        const Lanes l = lanes_for(s.dv, vw);
        if (l.acc > kMaxAcc || shared_bytes(s, l) > f.max_shared_memory) return false;
    }
    return kWorkgroup <= f.max_workgroup_invocations;
}

uint64_t scratch_bytes(const DeviceFeatures&, const mnemo_node& nd) {
    const Shape s = shape_of(nd);
    const Split sp = split_for(s);
    return sp.splits > 1 ? part_floats(s, sp) * 4 : 0;
}

// attention.comp's push block: exactly 128 bytes (the chunk count comes from the grid).
struct AttentionPush {
    uint64_t q, k, v, seq, pos, out, part, pk, pv, plen, pblock;
    uint32_t n_base, hq, hkv, ctx, n_seq, chunk, node;
    float scale;
    uint32_t n_blocks, slots;
};
static_assert(sizeof(AttentionPush) == 128);

struct CombinePush {
    uint64_t seq, pos, out, part, plen, pblock;
    uint32_t hq, dv, ctx, n_seq, chunk, splits, n_blocks, slots;
};

void build(KernelBuilder& b) {
    const mnemo_node& nd = b.node();
    const Shape s = shape_of(nd);
    if (s.n == 0) return;
    const bool prefix = has_prefix(nd);
    const uint64_t k_addr = KernelBuilder::address(nd.inputs[1]), v_addr = KernelBuilder::address(nd.inputs[2]);
    const uint64_t pk_addr = prefix ? KernelBuilder::address(nd.inputs[5]) : 0;
    const uint64_t pv_addr = prefix ? KernelBuilder::address(nd.inputs[6]) : 0;
    // Prefix rows are read by the same loads as cache rows, so vector loads need both aligned.
    // q8_0 values are read as quads (DV is a multiple of 32).
    const bool f16 = f16_cache(nd), q8 = q8_cache(nd);
    const bool k_vec4 = !f16 && !q8 && s.d % 4 == 0 && k_addr % 16 == 0 && pk_addr % 16 == 0;
    const uint32_t vw = q8 ? 4 : f16 ? (s.dv % 2 == 0 ? 2 : 1) : s.dv % 4 == 0 && v_addr % 16 == 0 && pv_addr % 16 == 0 ? 4 : 1;
    const Lanes l = lanes_for(s.dv, vw);
    const Split sp = split_for(s);
    const bool subgroups = b.features().subgroup_arithmetic;
    const std::vector<uint32_t> spec = {kWorkgroup, static_cast<uint32_t>(s.d), static_cast<uint32_t>(s.dv), l.lanes,
                                        l.acc, k_vec4 ? 1u : 0u, l.vw};

    AttentionPush p{};
    p.q = KernelBuilder::address(nd.inputs[0]);
    p.k = k_addr;
    p.v = v_addr;
    p.seq = KernelBuilder::address(nd.inputs[3]);
    p.pos = KernelBuilder::address(nd.inputs[4]);
    p.out = KernelBuilder::address(nd.output);
    p.hq = static_cast<uint32_t>(s.hq);
    p.hkv = static_cast<uint32_t>(s.hkv);
    p.ctx = static_cast<uint32_t>(s.c);
    p.n_seq = static_cast<uint32_t>(s.s);
    p.chunk = static_cast<uint32_t>(sp.chunk);
    p.node = b.node_index();
    p.scale = nd.fparams[0];
    if (prefix) {
        p.pk = pk_addr;
        p.pv = pv_addr;
        p.plen = KernelBuilder::address(nd.inputs[7]);
        p.pblock = nd.n_inputs >= 9 ? KernelBuilder::address(nd.inputs[8]) : 0;
        p.n_blocks = static_cast<uint32_t>(s.blocks);
        p.slots = static_cast<uint32_t>(s.slots);
    }
    // Hq = 0 still runs one workgroup per token, so bad indices are reported as on the CPU.
    const uint32_t gx = static_cast<uint32_t>(std::max<uint64_t>(s.hq, 1));

    if (sp.splits == 1) {
        const uint64_t max_z = b.features().max_workgroup_count[2];
        for (uint64_t n0 = 0; n0 < s.n; n0 += max_z) {
            p.n_base = static_cast<uint32_t>(n0);
            b.dispatch(shader_name(nd, subgroups, false).c_str(), p, gx, 1,
                       static_cast<uint32_t>(std::min(max_z, s.n - n0)), spec);
        }
        return;
    }

    const uint64_t part_bytes = part_floats(s, sp) * 4;
    p.part = b.scratch(0);
    Dispatch& d = b.dispatch(shader_name(nd, subgroups, true).c_str(), p, gx,
                             static_cast<uint32_t>(sp.splits), static_cast<uint32_t>(s.n), spec);
    d.writes = {b.scratch_range(0, part_bytes)};

    CombinePush c{};
    c.seq = p.seq;
    c.pos = p.pos;
    c.out = p.out;
    c.part = p.part;
    c.plen = p.plen;
    c.pblock = p.pblock;
    c.hq = p.hq;
    c.dv = static_cast<uint32_t>(s.dv);
    c.ctx = p.ctx;
    c.n_seq = p.n_seq;
    c.chunk = p.chunk;
    c.splits = static_cast<uint32_t>(sp.splits);
    c.n_blocks = p.n_blocks;
    c.slots = p.slots;
    Dispatch& m = b.dispatch("attention_combine", c, gx, static_cast<uint32_t>(s.n));
    m.reads = {KernelBuilder::range(nd.inputs[3]), KernelBuilder::range(nd.inputs[4]), b.scratch_range(0, part_bytes)};
    if (prefix) {  // the combine re-checks each query's prefix block and length
        m.reads.push_back(KernelBuilder::range(nd.inputs[7]));
        if (nd.n_inputs >= 9) m.reads.push_back(KernelBuilder::range(nd.inputs[8]));
    }
}

}  // namespace

void register_attention_kernels() {
    register_kernel(MNEMO_OP_ATTENTION, Kernel{supports, scratch_bytes, build, /*reads_quantized=*/true});
}

}  // namespace mnemo_vk
