// The naive reference implementation of every op (reference::<op>): the ground truth the
// conformance harness compares each backend with. One function per op, in the file of its family
// (reference_<family>.cpp): plain loops over the semantics in mnemo/abi/mnemo_ops.def, no
// vectorisation, no threading; dot products, norms and softmax sums accumulate in double so that
// its own rounding is far below any backend's. Data-dependent indices are checked with a message naming the row.
#include <array>
#include <string>

#include "mnemo/error.hpp"
#include "mnemo/io/ggml_type.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/quant/ggml_quants.hpp"
#include "ops/reference_detail.hpp"

namespace mnemo {
namespace reference {

void In::row_f32(int64_t r, float* out) const {
    const int64_t len = last();
    if (dtype_is_quantized(dtype)) {
        const char* row = static_cast<const char*>(data) + static_cast<uint64_t>(r) * dtype_bytes(dtype, len);
        dequantize_row(ggml_type_of_dtype(dtype), row, out, len);
        return;
    }
    for (int64_t j = 0; j < len; ++j) out[j] = f(r * len + j);
}

void check_seq_pos(const Ctx& c, const In& seq, const In& pos, int64_t n, int64_t n_seq, int64_t ctx_len) {
    const int64_t s = seq.i32(n), p = pos.i32(n);
    if (s < 0 || s >= n_seq)
        c.fail("row " + std::to_string(n) + ": sequence id " + std::to_string(s) + " is outside 0.." +
               std::to_string(n_seq - 1));
    if (p < 0 || p >= ctx_len)
        c.fail("row " + std::to_string(n) + ": position " + std::to_string(p) + " is outside the cache (0.." +
               std::to_string(ctx_len - 1) + ")");
}

}  // namespace reference

namespace {

using RefFn = void (*)(const reference::Ctx&);
constexpr std::array<RefFn, MNEMO_OP_COUNT_> kReferences = {
    nullptr,
#define MNEMO_OP(id, value, name, family, min_inputs, max_inputs, aliases, category) &reference::name,
#include "mnemo/abi/mnemo_ops.def"
#undef MNEMO_OP
};

const char* bytes_at(const mnemo_tensor& t) { return static_cast<const char*>(t.buffer) + t.offset; }

}  // namespace

void reference_compute(const mnemo_node& node) {
    // The reference takes any output placement: KV_STORE into distinct memory copies the cache first.
    if (const std::string why = node_error(node, InPlace::Optional); !why.empty()) throw Error(why);
    const OpInfo& info = op_info(node.op);
    reference::Ctx c{node, info.name, {}, nullptr, shape_of(node.output).numel()};
    for (int32_t i = 0; i < node.n_inputs; ++i) {
        const TensorShape s = shape_of(node.inputs[i]);
        if (!node.inputs[i].buffer && s.numel() > 0) c.fail("input " + std::to_string(i) + " has no buffer");
        c.in.push_back(reference::In{bytes_at(node.inputs[i]), s.dtype, s});
    }
    if (!node.output.buffer && c.out_numel > 0) c.fail("output has no buffer");
    c.out = reinterpret_cast<float*>(static_cast<char*>(node.output.buffer) + node.output.offset);
    kReferences[static_cast<size_t>(node.op)](c);
}

}  // namespace mnemo
