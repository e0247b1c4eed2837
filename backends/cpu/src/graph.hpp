// graph_prepare / graph_run: nodes are resolved to host addresses, validated against the
// buffers they live in, and given a kernel once; running is then a loop of pool dispatches.
#pragma once

#include "context.hpp"
#include "mnemo/abi/backend_abi.h"

namespace mnemo_cpu {

int32_t supports_node(const mnemo_node& node);
mnemo_status graph_prepare(CpuContext& ctx, const mnemo_node* nodes, int32_t n_nodes, void** out_graph,
                           mnemo_error* err);
mnemo_status graph_run(CpuContext& ctx, void* graph, uint64_t* timings_ns, mnemo_error* err);
void graph_release(void* graph);

}  // namespace mnemo_cpu
