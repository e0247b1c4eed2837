// A prepared graph: each node turned into launches on the context's stream. The first plain run
// captures them into a CUDA graph; later runs replay it with one launch. Profiled runs launch
// node by node between CUDA events.
#pragma once
#include <string>

#include "context.hpp"
#include "backend_common.hpp"
#include "mnemo/abi/mnemo_abi.h"

namespace mnemo_cuda {

bool node_supported(const Context& ctx, const mnemo_node& node);
mnemo_status graph_prepare(Context& ctx, const mnemo_node* nodes, int32_t n_nodes, void** out, mnemo_error* err);
mnemo_status graph_run(Context& ctx, void* graph, uint64_t* timings_ns, mnemo_error* err);
void graph_release(Context& ctx, void* graph);
using mnemo_backend::set_error;

}  // namespace mnemo_cuda
