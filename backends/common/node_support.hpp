// Whether a node runs on a backend context, checked the same way by every module: the op's rules
// (mnemo::node_error, from the op list the engine uses too), a kernel for the op, tensors in the
// context's own buffers, and the kernel's own limits. Host code only (C++20).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "backend_common.hpp"
#include "mnemo/ops/op_table.hpp"

namespace mnemo_backend {

// The modules' block table (backend_common.hpp, C++17 for nvcc) is the engine's.
constexpr bool dtype_blocks_agree() {
    for (int32_t d = 0; d < MNEMO_DTYPE_QUANT_END_; ++d) {
        if (!mnemo::dtype_valid(d)) continue;
        const mnemo::DTypeBlock e = mnemo::dtype_block(static_cast<mnemo::DType>(d));
        const DTypeBlock m = dtype_block(d);
        if (m.elems != static_cast<uint64_t>(e.elems) || m.bytes != static_cast<uint64_t>(e.bytes) ||
            dtype_is_quantized(d) != mnemo::dtype_is_quantized(static_cast<mnemo::DType>(d)))
            return false;
    }
    return true;
}
static_assert(dtype_blocks_agree(), "backend_common.hpp's dtype_block differs from mnemo::dtype_block");

// Why a kernel that reads no block-quantized input refuses a node that has one: "MATMUL: weight
// dtype q4_k is not supported by the Vulkan backend yet" ("" when no input is quantized).
inline std::string quantized_refusal(const mnemo_node& node, const char* backend_title) {
    for (int32_t i = 0; i < node.n_inputs; ++i) {
        const int32_t dt = node.inputs[i].dtype;
        if (!dtype_is_quantized(dt)) continue;
        std::string op = mnemo_op_name(node.op);
        for (char& c : op) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
        const bool table = node.op == MNEMO_OP_GET_ROWS || node.op == MNEMO_OP_EMBEDDING_BAG || node.op == MNEMO_OP_PEER_GATE ||
                           node.op == MNEMO_OP_HIVE;
        const bool cache = node.op == MNEMO_OP_KV_STORE || node.op == MNEMO_OP_ATTENTION;
        const char* role = table ? "table" : cache ? "KV cache" : "weight";
        return op + ": " + role + " dtype " + std::string(mnemo::dtype_name(static_cast<mnemo::DType>(dt))) +
               " is not supported by the " + backend_title + " backend yet" + (cache ? " (use cache type f16 or f32)" : "");
    }
    return "";
}

// A node runs on a context when it passes the op's rules (mnemo::node_error: the module is a C ABI
// boundary, so nothing unchecked reaches a kernel), its op has a kernel, every tensor lives in
// that context's buffers, and the kernel accepts its dtypes and shapes. "" when it runs, else why
// not.
template <class Context, class Kernel, class Props>
std::string node_refusal(const Context& ctx, const Kernel* k, const Props& props, const mnemo_node& node) {
    if (std::string why = mnemo::node_error(node); !why.empty()) return why;
    if (!k) return std::string(mnemo_op_name(node.op)) + ": no kernel on this backend";
    for (int32_t i = 0; i < node.n_inputs; ++i)
        if (!ctx.owns(node.inputs[i].buffer)) return "input " + std::to_string(i) + " is not in a buffer of this context";
    if (!ctx.owns(node.output.buffer)) return "the output is not in a buffer of this context";
    // Block-quantized inputs reach only kernels that say they read them (a GPU kernel table's
    // reads_quantized; the CPU module's kernels read every dtype the op's rule takes).
    if constexpr (requires { k->reads_quantized; Context::kTitle; })
        if (!k->reads_quantized)
            if (std::string why = quantized_refusal(node, Context::kTitle); !why.empty()) return why;
    if constexpr (requires { k->supports; })
        if (k->supports && !k->supports(props, node)) {
            if constexpr (requires { k->refusal; })
                if (k->refusal)
                    if (std::string why = k->refusal(props, node); !why.empty()) return why;
            return "not supported on this device";
        }
    return "";
}

template <class Context, class Kernel, class Props>
bool node_supported(const Context& ctx, const Kernel* k, const Props& props, const mnemo_node& node) {
    return node_refusal(ctx, k, props, node).empty();
}

// The first check of graph_prepare: every node runs here (else `refused` names the first that
// does not, and why), and the most scratch one node needs (nodes run in order, so one region
// serves them all).
template <class Context, class Props, class KernelFor>
uint64_t plan_scratch(const Context& ctx, const Props& props, const mnemo_node* nodes, int32_t n_nodes, KernelFor kernel_for,
                      std::string& refused) {
    uint64_t bytes = 0;
    refused.clear();
    for (int32_t i = 0; i < n_nodes; ++i) {
        const auto* k = kernel_for(nodes[i].op);
        if (std::string why = node_refusal(ctx, k, props, nodes[i]); !why.empty()) {
            refused = node_label(nodes[i].op, static_cast<size_t>(i)) + ": " + why;
            return 0;
        }
        if (k->scratch_bytes) bytes = std::max(bytes, k->scratch_bytes(props, nodes[i]));
    }
    return bytes;
}

// What graph_prepare does the same way in every GPU module: check every node and size one scratch
// region for all of them (plan_scratch), let the module make it (make_scratch(bytes, why)), then
// turn each node into the module's work: build_node(i, kernel, why) runs the kernel's build() and
// keeps what it produced (false: a device failure, in why). A KernelError thrown by a build is the
// kernel refusing the node. MNEMO_OK, or the status with why naming the node.
template <class KernelError, class Context, class Props, class KernelFor, class MakeScratch, class BuildNode>
mnemo_status prepare_nodes(const Context& ctx, const Props& props, const mnemo_node* nodes, int32_t n_nodes, KernelFor kernel_for,
                           MakeScratch make_scratch, BuildNode build_node, std::string& why) {
    const uint64_t scratch_bytes = plan_scratch(ctx, props, nodes, n_nodes, kernel_for, why);
    if (!why.empty()) return MNEMO_ERR_UNSUPPORTED;
    if (scratch_bytes > 0 && !make_scratch(scratch_bytes, why)) {
        why = "scratch memory: " + why;
        return MNEMO_ERR_NO_MEMORY;
    }
    for (int32_t i = 0; i < n_nodes; ++i) {
        const std::string label = node_label(nodes[i].op, static_cast<size_t>(i)) + ": ";
        try {
            if (!build_node(i, *kernel_for(nodes[i].op), why)) {
                why = label + why;
                return MNEMO_ERR_DEVICE;
            }
        } catch (const KernelError& e) {
            why = label + e.what();
            return MNEMO_ERR_UNSUPPORTED;
        }
    }
    return MNEMO_OK;
}

}  // namespace mnemo_backend
