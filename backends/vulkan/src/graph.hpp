// A prepared graph: the nodes turned into dispatches and recorded once into a command buffer,
// which every run resubmits (shapes and buffers never change after prepare).
#pragma once
#include <cstdint>
#include <string>

#include "context.hpp"
#include "backend_common.hpp"
#include "mnemo/abi/mnemo_abi.h"

namespace mnemo_vk {

// 1 when every op of the node has a Vulkan kernel that accepts its dtypes and shapes.
bool node_supported(const Context& ctx, const mnemo_node& node);

mnemo_status graph_prepare(Context& ctx, const mnemo_node* nodes, int32_t n_nodes, void** out, mnemo_error* err);
mnemo_status graph_run(Context& ctx, void* graph, uint64_t* timings_ns, mnemo_error* err);
void graph_release(Context& ctx, void* graph);

using mnemo_backend::set_error;

}  // namespace mnemo_vk
