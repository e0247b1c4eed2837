// ATTENTION: a streaming-softmax workgroup per (token, query head) (shaders/attention.comp).
// When few queries face a long cache (decode), one workgroup per head cannot fill a GPU, so the
// key range is cut into chunks, one workgroup each, and a second dispatch merges the chunks'
// partial results from scratch memory (flash decoding, shaders/attention_combine.comp). pos is
// data the graph never sees, so the cut is planned for the cache capacity C and chunks beyond a
// token's position exit at once.
#include <algorithm>

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
};

Shape shape_of(const mnemo_node& nd) {
    const mnemo_tensor& q = nd.inputs[0];
    const mnemo_tensor& k = nd.inputs[1];
    const mnemo_tensor& v = nd.inputs[2];
    return {static_cast<uint64_t>(q.shape[0]), static_cast<uint64_t>(q.shape[1]), static_cast<uint64_t>(q.shape[2]),
            static_cast<uint64_t>(k.shape[0]), static_cast<uint64_t>(k.shape[1]), static_cast<uint64_t>(k.shape[2]),
            static_cast<uint64_t>(v.shape[3])};
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

// Scratch of the split path: (m, sum) pairs, then the unnormalised rows (16-byte aligned).
uint64_t ml_bytes(const Shape& s, const Split& sp) { return (s.n * s.hq * sp.splits * 8 + 255) / 256 * 256; }
uint64_t acc_bytes(const Shape& s, const Split& sp) { return s.n * s.hq * sp.splits * s.dv * 4; }

bool supports(const DeviceFeatures& f, const mnemo_node& nd) {
    for (int32_t i = 0; i < 3; ++i)
        if (nd.inputs[i].dtype != MNEMO_DTYPE_F32) return false;
    const Shape s = shape_of(nd);
    // 32-bit indexing inside one (sequence, kv head) slab and over q and out.
    if (s.c * std::max(s.d, s.dv) >= (uint64_t{1} << 32) || s.n * s.hq * std::max(s.d, s.dv) >= (uint64_t{1} << 32) ||
        s.s * s.hkv * s.c >= (uint64_t{1} << 32))
        return false;
    if (s.hq > f.max_workgroup_count[0]) return false;
    for (uint32_t vw : {1u, 4u}) {
        const Lanes l = lanes_for(s.dv, vw);
        if (l.acc > kMaxAcc || shared_bytes(s, l) > f.max_shared_memory) return false;
    }
    return kWorkgroup <= f.max_workgroup_invocations;
}

uint64_t scratch_bytes(const DeviceFeatures&, const mnemo_node& nd) {
    const Shape s = shape_of(nd);
    const Split sp = split_for(s);
    return sp.splits > 1 ? ml_bytes(s, sp) + acc_bytes(s, sp) : 0;
}

struct AttentionPush {
    uint64_t q, k, v, seq, pos, out, part_ml, part_acc;
    uint32_t n_base, hq, hkv, ctx, n_seq, chunk, splits, node;
    float scale;
};

struct CombinePush {
    uint64_t seq, pos, out, part_ml, part_acc;
    uint32_t hq, dv, ctx, n_seq, chunk, splits;
};

void build(KernelBuilder& b) {
    const mnemo_node& nd = b.node();
    const Shape s = shape_of(nd);
    if (s.n == 0) return;
    const uint64_t k_addr = KernelBuilder::address(nd.inputs[1]), v_addr = KernelBuilder::address(nd.inputs[2]);
    const bool k_vec4 = s.d % 4 == 0 && k_addr % 16 == 0;
    const Lanes l = lanes_for(s.dv, s.dv % 4 == 0 && v_addr % 16 == 0 ? 4 : 1);
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
    p.splits = static_cast<uint32_t>(sp.splits);
    p.node = b.node_index();
    p.scale = nd.fparams[0];
    // Hq = 0 still runs one workgroup per token, so bad indices are reported as on the CPU.
    const uint32_t gx = static_cast<uint32_t>(std::max<uint64_t>(s.hq, 1));

    if (sp.splits == 1) {
        const uint64_t max_z = b.features().max_workgroup_count[2];
        for (uint64_t n0 = 0; n0 < s.n; n0 += max_z) {
            p.n_base = static_cast<uint32_t>(n0);
            b.dispatch(subgroups ? "attention" : "attention_shmem", p, gx, 1,
                       static_cast<uint32_t>(std::min(max_z, s.n - n0)), spec);
        }
        return;
    }

    const uint64_t mlb = ml_bytes(s, sp), accb = acc_bytes(s, sp);
    p.part_ml = b.scratch(0);
    p.part_acc = b.scratch(mlb);
    Dispatch& d = b.dispatch(subgroups ? "attention_split" : "attention_split_shmem", p, gx,
                             static_cast<uint32_t>(sp.splits), static_cast<uint32_t>(s.n), spec);
    d.writes = {b.scratch_range(0, mlb + accb)};

    CombinePush c{};
    c.seq = p.seq;
    c.pos = p.pos;
    c.out = p.out;
    c.part_ml = p.part_ml;
    c.part_acc = p.part_acc;
    c.hq = p.hq;
    c.dv = static_cast<uint32_t>(s.dv);
    c.ctx = p.ctx;
    c.n_seq = p.n_seq;
    c.chunk = p.chunk;
    c.splits = p.splits;
    Dispatch& m = b.dispatch("attention_combine", c, gx, static_cast<uint32_t>(s.n));
    m.reads = {KernelBuilder::range(nd.inputs[3]), KernelBuilder::range(nd.inputs[4]), b.scratch_range(0, mlb + accb)};
}

}  // namespace

void register_attention_kernels() { register_kernel(MNEMO_OP_ATTENTION, Kernel{supports, scratch_bytes, build}); }

}  // namespace mnemo_vk
