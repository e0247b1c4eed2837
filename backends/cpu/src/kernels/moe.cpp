// MOE_FFN: not written yet (placeholder so the module links while the kernels are written).
#include "../node_check.hpp"
#include "kernel_api.hpp"

namespace mnemo_cpu {

KernelFn select_moe(PreparedNode&, Isa) { return nullptr; }
bool check_moe_indices(const PreparedNode&, char* message, size_t cap) {
    std::snprintf(message, cap, "not implemented");
    return false;
}
bool check_moe_node(const mnemo_node&, Checker& c) { return c.fail("not implemented on the CPU backend yet"); }

}  // namespace mnemo_cpu
