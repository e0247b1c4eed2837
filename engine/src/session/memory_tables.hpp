// Which weights are memory-layer value tables: the tensors EMBEDDING_BAG, PEER_GATE and HIVE
// gather the selected rows of, and nothing reads whole. They are the largest tensors of a
// memory-layer model and a step reads only top-k rows of them, so SessionOptions::MemoryTables::Host
// leaves them in host memory for the device to read in place (Session::Impl::bind_params).
#pragma once

#include <vector>

#include "graph/graph.hpp"

namespace mnemo::detail {

// One flag per declared parameter (n_params of them): true for the tables of `nodes` (a graph of
// the model: every graph of a model reads the same weights in the same roles).
std::vector<bool> memory_table_params(const std::vector<GraphNode>& nodes, size_t n_params);

}  // namespace mnemo::detail
