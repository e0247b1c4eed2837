// VQ_DECODE: FAISS "OPQ,Residual<Mc>x<bc>,PQ<Mp>x<bp>" codes back to vectors (mnemo_abi.h).
// Two passes, one invocation per element each (shaders/vq/vq_decode.comp, vq_rotate.comp):
// the rotated-space vectors y (straight into the output without a rotation, else into scratch),
// then x = A^T y with the CPU's summation order and no fused multiply-add. The decode pass checks
// every coarse list number and reports a corrupt code through the status word.
//
// A pass per element keeps every shape on one path: Do is any size (no shared-memory tile to
// outgrow), and the rotation's reads of A are coalesced across the output columns. Memory3
// decodes a few thousand vectors of 64..128 dimensions per retrieval, where the cost is the
// A^T y products: Do multiply-adds per output, the same work a fused kernel would do.
#include <cstdint>

#include "kernel_api.hpp"

namespace mnemo_vk {
namespace {

constexpr uint32_t kLocal = 256;
// Element indices inside the shaders stay below 2^31: an access chain index is signed.
constexpr uint64_t kMaxIndex = 0x7FFFFFFFull;

struct DecodePush {
    uint64_t codes, coarse, pq, dst;
    uint32_t total, d_out, words, dsub_c, dsub_p, bc, bp, coarse_bytes, list_bits, node, row_groups;
};
static_assert(sizeof(DecodePush) <= Context::kPushConstantBytes);

struct RotatePush {
    uint64_t y, a, out;
    uint32_t total, d_out, d_in, row_groups;
};

struct Dims {
    uint64_t rows, d_out, d_in;
    bool rotated;
};

Dims dims_of(const mnemo_node& n) {
    Dims d;
    d.rows = static_cast<uint64_t>(n.inputs[0].shape[0]);
    d.d_out = static_cast<uint64_t>(n.inputs[1].shape[0] * n.inputs[1].shape[2]);
    d.rotated = n.n_inputs > 3;
    d.d_in = d.rotated ? static_cast<uint64_t>(n.inputs[3].shape[1]) : d.d_out;
    return d;
}

// The engine's shape rules hold (engine/src/ops/shape_vq.cpp); what is left are the 2^31 index limits.
bool supports(const DeviceFeatures&, const mnemo_node& n) {
    if (n.inputs[0].dtype != MNEMO_DTYPE_I32 || n.output.dtype != MNEMO_DTYPE_F32) return false;
    for (int32_t i = 1; i < n.n_inputs; ++i)
        if (n.inputs[i].dtype != MNEMO_DTYPE_F32 || numel(n.inputs[i]) > kMaxIndex) return false;
    const Dims d = dims_of(n);
    return numel(n.inputs[0]) <= kMaxIndex && d.rows * d.d_out <= kMaxIndex && d.rows * d.d_in <= kMaxIndex;
}

uint64_t scratch_bytes(const DeviceFeatures&, const mnemo_node& n) {
    const Dims d = dims_of(n);
    return d.rotated ? d.rows * d.d_out * 4 : 0;
}

void build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const Dims d = dims_of(n);
    if (d.rows == 0 || d.d_in == 0) return;
    const mnemo_tensor& out = n.output;

    if (d.d_out == 0) {
        // An empty sum: every output is 0. (Not reachable through FAISS, but a valid node.)
        RotatePush p{};
        p.y = p.a = KernelBuilder::address(out);
        p.out = KernelBuilder::address(out);
        p.total = static_cast<uint32_t>(d.rows * d.d_in);
        p.d_in = static_cast<uint32_t>(d.d_in);
        const Grid g = fold_groups(b.features(), groups_for(p.total, kLocal));
        p.row_groups = g.x;
        b.dispatch("vq_rotate", p, g.x, g.y);
        return;
    }

    DecodePush p{};
    p.codes = KernelBuilder::address(n.inputs[0]);
    p.coarse = KernelBuilder::address(n.inputs[1]);
    p.pq = KernelBuilder::address(n.inputs[2]);
    p.dst = d.rotated ? b.scratch(0) : KernelBuilder::address(out);
    p.total = static_cast<uint32_t>(d.rows * d.d_out);
    p.d_out = static_cast<uint32_t>(d.d_out);
    p.words = static_cast<uint32_t>(n.inputs[0].shape[1]);
    p.dsub_c = static_cast<uint32_t>(n.inputs[1].shape[2]);
    p.dsub_p = static_cast<uint32_t>(n.inputs[2].shape[2]);
    p.bc = static_cast<uint32_t>(n.iparams[0]);
    p.bp = static_cast<uint32_t>(n.iparams[1]);
    p.list_bits = static_cast<uint32_t>(n.inputs[1].shape[0]) * p.bc;
    p.coarse_bytes = (p.list_bits + 7) / 8;
    p.node = b.node_index();
    const Grid g = fold_groups(b.features(), groups_for(p.total, kLocal));
    p.row_groups = g.x;
    Dispatch& decode = b.dispatch("vq_decode", p, g.x, g.y);
    if (!d.rotated) return;

    const Range y = b.scratch_range(0, d.rows * d.d_out * 4);
    decode.reads = {KernelBuilder::range(n.inputs[0]), KernelBuilder::range(n.inputs[1]), KernelBuilder::range(n.inputs[2])};
    decode.writes = {y};
    RotatePush r{};
    r.y = b.scratch(0);
    r.a = KernelBuilder::address(n.inputs[3]);
    r.out = KernelBuilder::address(out);
    r.total = static_cast<uint32_t>(d.rows * d.d_in);
    r.d_out = static_cast<uint32_t>(d.d_out);
    r.d_in = static_cast<uint32_t>(d.d_in);
    const Grid gr = fold_groups(b.features(), groups_for(r.total, kLocal));
    r.row_groups = gr.x;
    Dispatch& rotate = b.dispatch("vq_rotate", r, gr.x, gr.y);
    rotate.reads = {KernelBuilder::range(n.inputs[3]), y};
}

}  // namespace

void register_vq_kernels() { register_kernel(MNEMO_OP_VQ_DECODE, Kernel{supports, scratch_bytes, build}); }

}  // namespace mnemo_vk
