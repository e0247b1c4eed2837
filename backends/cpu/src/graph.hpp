// graph_prepare / graph_run: nodes are checked against the op rules, resolved to host addresses
// inside the buffers they live in, and given a kernel once; running is then a loop of pool
// dispatches.
#pragma once

#include "context.hpp"
#include "context_adapter.hpp"

namespace mnemo_cpu {

MNEMO_BACKEND_GRAPH_FUNCTIONS(Context)

}  // namespace mnemo_cpu
