// The op table, generated from the op list (mnemo/abi/mnemo_ops.def): each op's name, arity,
// family and profile category, its shape rule (engine/src/ops/shape_<family>.cpp) and its naive
// reference implementation (engine/src/ops/reference_<family>.cpp). These are the ground truth
// every backend (the fast CPU module included) is compared with by the conformance harness; they
// favour clarity over speed and accumulate in double where that is cheap.
//
// The table and the shape rules are also compiled into every backend module (the static library
// mnemo_op_rules), which checks each node it is given with node_error() at its C ABI boundary:
// one rule per op, run by the engine and by every backend.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "mnemo/api.hpp"
#include "mnemo/abi/mnemo_abi.h"
#include "mnemo/ops/dtype.hpp"

namespace mnemo {

struct MNEMO_API TensorShape {
    DType dtype = DType::F32;
    int32_t ndim = 0;
    int64_t shape[MNEMO_MAX_DIMS] = {0, 0, 0, 0};

    int64_t numel() const {
        int64_t n = 1;
        for (int32_t i = 0; i < ndim && i < MNEMO_MAX_DIMS; ++i) n *= shape[i];
        return n;
    }
    // Rows of the innermost dimension times that dimension's bytes: block-aware, so a quantized
    // tensor (innermost dimension a whole number of blocks) is sized exactly.
    uint64_t nbytes() const {
        if (ndim < 1) return dtype_bytes(dtype, 1);
        int64_t rows = 1;
        for (int32_t i = 0; i + 1 < ndim && i < MNEMO_MAX_DIMS; ++i) rows *= shape[i];
        return static_cast<uint64_t>(rows) * dtype_bytes(dtype, shape[(ndim <= MNEMO_MAX_DIMS ? ndim : MNEMO_MAX_DIMS) - 1]);
    }
    std::string str() const;  // "f32[4, 8]"
};

struct OpInfo {
    int32_t op;
    const char* name;  // "matmul"
    int32_t min_inputs;
    int32_t max_inputs;
    // Output aliases input 0 (in-place side effect, e.g. KV_STORE).
    bool output_aliases_input0;
    // The group a profile reports the op's time under (one of op_categories()), so that
    // backends can be compared by kind of work rather than op by op.
    const char* category;
    // The family the op's files are named after ("product_keys"; see mnemo_ops.def).
    const char* family;
};

MNEMO_API const OpInfo& op_info(int32_t op);  // throws for unknown ids
MNEMO_API std::optional<int32_t> op_from_name(std::string_view name);
MNEMO_API int32_t op_count();
// Every category an OpInfo names, in display order: matmul, attention, norm, elementwise,
// memory-layer, moe, other.
MNEMO_API std::span<const char* const> op_categories();
// Every family, in the op list's order.
MNEMO_API std::span<const char* const> op_families();

// Check inputs and parameters against the op's rule and return the output shape. Throws
// mnemo::Error "<op>: input 1 (W): expected 2-D f32/f16/bf16, got f32[3]".
MNEMO_API TensorShape infer_output(int32_t op, std::span<const TensorShape> inputs,
                         std::span<const int64_t> iparams, std::span<const float> fparams);

MNEMO_API TensorShape shape_of(const mnemo_tensor& t);

// Whether an op that writes in place (KV_STORE) must have its output on input 0 itself. Backends
// require it; the reference also takes distinct memory (it copies input 0 over first).
enum class InPlace { Required, Optional };

// "" when a node is safe to hand to a kernel, else why not ("<op>: ..."): a known op, an arity
// in range, every tensor of a valid dtype, rank and size, inputs and parameters that pass the
// op's shape rule, an output of exactly the shape and dtype the rule gives, and the output placed
// on input 0 where the op writes in place. Buffers are not looked at (they are the backend's).
MNEMO_API std::string node_error(const mnemo_node& node, InPlace in_place = InPlace::Required);

// Run one node with its naive reference implementation. Every tensor's `buffer` must be a host
// address.
MNEMO_API void reference_compute(const mnemo_node& node);

// Floating-point operations of a node (for GFLOP/s in profiles); 0 when not meaningful.
MNEMO_API double node_flops(const mnemo_node& node);

// The input whose indices select the rows (or experts) an op reads of its input `k`, or -1 when
// the op reads input k whole. Gathering ops read a table only where their index points: memory
// values, latent banks, pre-values, embeddings, experts (what "activated parameters" counts).
MNEMO_API int gathering_input(int32_t op, size_t k);

}  // namespace mnemo
