// MEM_INDEX, PEER_GATE, HIVE: not written yet (placeholder so the module links while the kernels are written).
#include "../node_check.hpp"
#include "kernel_api.hpp"

namespace mnemo_cpu {

KernelFn select_lookup(PreparedNode&, Isa) { return nullptr; }
bool check_lookup_indices(const PreparedNode&, char* message, size_t cap) {
    std::snprintf(message, cap, "not implemented");
    return false;
}
bool check_lookup_node(const mnemo_node&, Checker& c) { return c.fail("not implemented on the CPU backend yet"); }

}  // namespace mnemo_cpu
