// A prepared graph: the nodes turned into dispatches and recorded once into a command buffer,
// which every run resubmits (shapes and buffers never change after prepare).
#pragma once
#include "context.hpp"
#include "context_adapter.hpp"

namespace mnemo_vk {

MNEMO_BACKEND_GRAPH_FUNCTIONS(Context)

using mnemo_backend::set_error;

}  // namespace mnemo_vk
