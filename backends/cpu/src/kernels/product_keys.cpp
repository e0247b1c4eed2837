// PK_SCORE, PK_TOPK, PK_PAIR_SCORES: not written yet (placeholder so the module links while the kernels are written).
#include "../node_check.hpp"
#include "kernel_api.hpp"

namespace mnemo_cpu {

KernelFn select_product_keys(PreparedNode&, Isa) { return nullptr; }
bool check_product_key_indices(const PreparedNode&, char* message, size_t cap) {
    std::snprintf(message, cap, "not implemented");
    return false;
}
bool check_product_key_node(const mnemo_node&, Checker& c) { return c.fail("not implemented on the CPU backend yet"); }

}  // namespace mnemo_cpu
