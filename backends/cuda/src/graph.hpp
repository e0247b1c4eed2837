// A prepared graph: every node turned into launches on the context's stream once; the first plain
// run captures them into a CUDA graph that every later run replays with one launch.
#pragma once
#include "context.hpp"
#include "context_adapter.hpp"

namespace mnemo_cuda {

MNEMO_BACKEND_GRAPH_FUNCTIONS(Context)

using mnemo_backend::set_error;

}  // namespace mnemo_cuda
