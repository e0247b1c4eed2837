// The checks every shape rule shares, the table of rules (one per op, from the op list), and the
// two entry points: infer_output (the graph builder, the reference implementation) and
// node_error (every backend module at its C ABI boundary, and the reference implementation).
#include "ops/shape_rule.hpp"

#include <array>
#include <sstream>

namespace mnemo {
namespace shape {

void Rule::fail(const std::string& what) const { throw Error(std::string(mnemo_op_name(op_)) + ": " + what); }

void Rule::fail_input(size_t i, const std::string& expected) const {
    fail("input " + std::to_string(i) + ": expected " + expected + ", got " + in_[i].str());
}

namespace {
bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
}  // namespace

const TensorShape& Rule::f32(size_t i, int32_t ndim_min, int32_t ndim_max, const char* what) const {
    const TensorShape& t = in_[i];
    if (t.dtype != DType::F32 || t.ndim < ndim_min || t.ndim > ndim_max)
        fail_input(i, dims_text(ndim_min, ndim_max) + " f32 " + what);
    return t;
}

const TensorShape& Rule::weight(size_t i, int32_t ndim, const char* what) const {
    const TensorShape& t = in_[i];
    if (!is_float_type(t.dtype) || t.ndim != ndim) fail_input(i, std::to_string(ndim) + "-D f32/f16/bf16 " + what);
    return t;
}

const TensorShape& Rule::packed_weight(size_t i, int32_t ndim, const char* what) const {
    const TensorShape& t = in_[i];
    if (!dtype_is_quantized(t.dtype)) return weight(i, ndim, what);
    if (t.ndim != ndim) fail_input(i, std::to_string(ndim) + "-D f32/f16/bf16 or block-quantized " + what);
    const int64_t block = dtype_block(t.dtype).elems;
    if (t.shape[ndim - 1] % block != 0)
        fail("input " + std::to_string(i) + ": " + t.str() + " has rows of " + std::to_string(t.shape[ndim - 1]) +
             " weights, not a whole number of " + std::string(dtype_name(t.dtype)) + " blocks of " + std::to_string(block));
    return t;
}

const TensorShape& Rule::of_dtype(size_t i, DType dt, const char* what) const {
    const TensorShape& t = in_[i];
    if (t.dtype != dt) fail_input(i, std::string(dtype_name(dt)) + " " + what);
    return t;
}

const TensorShape& Rule::i32_vec(size_t i, int64_t n, const char* what) const {
    const TensorShape& t = in_[i];
    if (t.dtype != DType::I32 || t.ndim != 1 || (n >= 0 && t.shape[0] != n))
        fail_input(i, "i32[" + (n >= 0 ? std::to_string(n) : std::string("N")) + "] " + what);
    return t;
}

std::string dims_text(int32_t lo, int32_t hi) {
    return lo == hi ? std::to_string(lo) + "-D" : std::to_string(lo) + "..." + std::to_string(hi) + "-D";
}

bool suffix_broadcastable(const TensorShape& a, const TensorShape& b) {
    if (b.ndim > a.ndim) return false;
    for (int32_t i = 0; i < b.ndim; ++i)
        if (b.shape[b.ndim - 1 - i] != a.shape[a.ndim - 1 - i]) return false;
    return true;
}

bool same_shape(const TensorShape& a, const TensorShape& b) {
    if (a.ndim != b.ndim) return false;
    for (int32_t i = 0; i < a.ndim; ++i)
        if (a.shape[i] != b.shape[i]) return false;
    return true;
}

namespace {

constexpr std::array<ShapeFn, MNEMO_OP_COUNT_> kRules = {
    nullptr,
#define MNEMO_OP(id, value, name, family, min_inputs, max_inputs, aliases, category) &shape_##name,
#include "mnemo/abi/mnemo_ops.def"
#undef MNEMO_OP
};

}  // namespace
}  // namespace shape

std::string TensorShape::str() const {
    std::ostringstream s;
    s << dtype_name(dtype) << "[";
    // A rank outside 1..4 is what error messages report, so never index past the array.
    for (int32_t i = 0; i < ndim && i < MNEMO_MAX_DIMS; ++i) s << (i ? ", " : "") << shape[i];
    if (ndim > MNEMO_MAX_DIMS) s << ", ... (" << ndim << " dims)";
    s << "]";
    return s.str();
}

TensorShape shape_of(const mnemo_tensor& t) {
    TensorShape s;
    s.dtype = static_cast<DType>(t.dtype);
    s.ndim = t.ndim;
    for (int32_t i = 0; i < t.ndim && i < MNEMO_MAX_DIMS; ++i) s.shape[i] = t.shape[i];
    return s;
}

namespace {

// "" when an op of `info` may have n inputs, else "takes 2..3 inputs, got 4".
std::string arity_error(const OpInfo& info, size_t n) {
    if (static_cast<int64_t>(n) >= info.min_inputs && static_cast<int64_t>(n) <= info.max_inputs) return "";
    std::ostringstream s;
    s << "takes " << info.min_inputs;
    if (info.min_inputs != info.max_inputs) s << ".." << info.max_inputs;
    s << " inputs, got " << n;
    return s.str();
}

}  // namespace

TensorShape infer_output(int32_t op, std::span<const TensorShape> in, std::span<const int64_t> ip, std::span<const float> fp) {
    const shape::Rule r(op, in, ip, fp);
    if (std::string why = arity_error(op_info(op), in.size()); !why.empty()) r.fail(why);
    for (size_t i = 0; i < in.size(); ++i) {
        if (in[i].ndim < 1 || in[i].ndim > MNEMO_MAX_DIMS) r.fail_input(i, "1..4 dimensions");
        for (int32_t d = 0; d < in[i].ndim; ++d)
            if (in[i].shape[d] < 0) r.fail_input(i, "non-negative dimensions");
    }
    return shape::kRules[static_cast<size_t>(op)](r);
}

namespace {

// "" for a tensor a kernel may index: a known dtype, rank 1..4, dimensions >= 0, a quantized
// tensor's innermost dimension a whole number of its blocks, and a byte size that fits 64 bits.
std::string malformed(const mnemo_tensor& t) {
    static const std::string invalid = "has an invalid dtype, rank or size";
    if (!dtype_valid(t.dtype) || t.ndim < 1 || t.ndim > MNEMO_MAX_DIMS) return invalid;
    const DType dt = static_cast<DType>(t.dtype);
    const DTypeBlock b = dtype_block(dt);
    const int64_t inner = t.shape[t.ndim - 1];
    if (inner < 0) return invalid;
    if (inner % b.elems != 0)
        return "is " + shape_of(t).str() + ": a " + std::string(dtype_name(dt)) + " row is a whole number of " +
               std::to_string(b.elems) + "-element blocks";
    uint64_t bytes = static_cast<uint64_t>(b.bytes);
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(inner / b.elems), &bytes)) return invalid;
    for (int32_t i = 0; i + 1 < t.ndim; ++i)
        if (t.shape[i] < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(t.shape[i]), &bytes)) return invalid;
    return "";
}

}  // namespace

std::string node_error(const mnemo_node& node, InPlace in_place) {
    if (node.op <= MNEMO_OP_NONE || node.op >= MNEMO_OP_COUNT_) return "unknown op id " + std::to_string(node.op);
    const std::string name = mnemo_op_name(node.op);
    if (node.n_inputs < 0) return name + ": " + std::to_string(node.n_inputs) + " inputs";
    // Before the tensors: slots past the op's arity may hold anything.
    if (std::string why = arity_error(op_info(node.op), static_cast<size_t>(node.n_inputs)); !why.empty()) return name + ": " + why;
    std::array<TensorShape, MNEMO_MAX_INPUTS> shapes;
    for (int32_t i = 0; i < node.n_inputs; ++i) {
        if (std::string why = malformed(node.inputs[i]); !why.empty()) return name + ": input " + std::to_string(i) + " " + why;
        shapes[static_cast<size_t>(i)] = shape_of(node.inputs[i]);
    }
    if (std::string why = malformed(node.output); !why.empty()) return name + ": output " + why;
    TensorShape want;
    try {
        want = infer_output(node.op, std::span(shapes.data(), static_cast<size_t>(node.n_inputs)), node.iparams, node.fparams);
    } catch (const Error& e) {
        return e.what();
    }
    const TensorShape got = shape_of(node.output);
    if (got.dtype != want.dtype || !shape::same_shape(got, want))
        return name + ": output is " + got.str() + ", the op produces " + want.str();
    if (in_place == InPlace::Required && op_info(node.op).output_aliases_input0 &&
        (node.output.buffer != node.inputs[0].buffer || node.output.offset != node.inputs[0].offset))
        return name + ": the output must be input 0 itself (the op writes it in place)";
    return "";
}

}  // namespace mnemo
