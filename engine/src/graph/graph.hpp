// The engine's graph: what a plugin builds through mnemo_builder_api, and the arena plan that
// places every intermediate tensor in one arena buffer so a graph can run again and again without
// allocating.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mnemo/abi/plugin_abi.h"
#include "mnemo/ops/op_table.hpp"

namespace mnemo::detail {

enum class NodeKind { Input, Param, Op, View };

// Graph input kinds (mnemo_input_kind) the engine knows how to fill.
constexpr int kInputKinds = MNEMO_INPUT_MEMORY_BLOCK + 1;

struct GraphNode {
    NodeKind kind = NodeKind::Op;
    TensorShape shape;
    int32_t input_kind = -1;  // Input: mnemo_input_kind
    int32_t param_id = -1;    // Param: host declaration id
    int32_t op = MNEMO_OP_NONE;
    std::vector<int32_t> inputs;  // Op: node ids; View: {source}
    int64_t iparams[MNEMO_MAX_PARAMS] = {};
    float fparams[MNEMO_MAX_PARAMS] = {};
};

// The node behind node `id` once views (reshapes) are followed to their source: a weight reaches an
// op as a parameter, possibly regrouped.
inline const GraphNode& behind_views(const std::vector<GraphNode>& nodes, int32_t id) {
    const GraphNode* n = &nodes[static_cast<size_t>(id)];
    while (n->kind == NodeKind::View) n = &nodes[static_cast<size_t>(n->inputs[0])];
    return *n;
}

// Collects the nodes a plugin's build() creates, checking every op with the op table's shape
// rule as it is added (so a plugin bug is reported at the op that caused it).
class GraphBuilder {
public:
    using ParamShape = std::function<const TensorShape*(int32_t param_id)>;
    GraphBuilder(int64_t n_tokens, int64_t n_outputs, ParamShape param_shape, int32_t purpose = MNEMO_GRAPH_LOGITS);

    const mnemo_builder_api* api() const { return &api_; }
    const std::vector<GraphNode>& nodes() const { return nodes_; }
    int32_t output() const { return output_; }
    // Tensors marked with mark_output (ENCODE graphs), by name.
    const std::vector<std::pair<std::string, int32_t>>& named_outputs() const { return named_; }
    const std::string& error() const { return error_; }

private:
    static mnemo_tid api_input(void* self, int32_t kind);
    static mnemo_tid api_param(void* self, mnemo_tid id);
    static mnemo_tid api_op(void* self, int32_t op, int32_t n_inputs, const mnemo_tid* inputs, int32_t n_ip,
                            const int64_t* ip, int32_t n_fp, const float* fp);
    static mnemo_tid api_reshape(void* self, mnemo_tid t, int32_t ndim, const int64_t* shape);
    static mnemo_status api_set_output(void* self, mnemo_tid t);
    static const char* api_last_error(void* self);
    static mnemo_status api_mark_output(void* self, const char* name, mnemo_tid t);

    mnemo_tid fail(const std::string& message);
    bool valid(mnemo_tid t) const { return t >= 0 && static_cast<size_t>(t) < nodes_.size(); }

    int64_t n_tokens_, n_outputs_;
    ParamShape param_shape_;
    std::vector<GraphNode> nodes_;
    int32_t input_nodes_[kInputKinds] = {-1, -1, -1, -1, -1};
    std::vector<int32_t> param_nodes_;  // param id -> node (deduplicated)
    int32_t output_ = -1;
    std::vector<std::pair<std::string, int32_t>> named_;
    std::string error_;
    mnemo_builder_api api_{};
};

// Where a node's data lives: in the arena, or in a parameter's own buffer (weights, constants,
// state), at a byte offset.
struct Location {
    bool in_arena = true;
    int32_t param_id = -1;
    uint64_t offset = 0;
};

struct ArenaPlan {
    std::vector<Location> where;  // per node
    uint64_t arena_bytes = 0;
};

// Greedy best-fit placement over the nodes' lifetimes (an intermediate is freed right after its
// last reader). Inputs live from the start; the outputs live to the end.
ArenaPlan plan_arena(const std::vector<GraphNode>& nodes, const std::vector<int32_t>& outputs, uint64_t alignment);

}  // namespace mnemo::detail
