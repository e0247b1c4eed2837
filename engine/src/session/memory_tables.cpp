// Finding a model's memory-layer value tables in its graph (memory_tables.hpp).
#include "session/memory_tables.hpp"

#include "mnemo/ops/op_table.hpp"

namespace mnemo::detail {

std::vector<bool> memory_table_params(const std::vector<GraphNode>& nodes, size_t n_params) {
    std::vector<bool> gathered(n_params, false), read_whole(n_params, false);
    for (const GraphNode& g : nodes) {
        if (g.kind != NodeKind::Op) continue;
        const bool table_op = g.op == MNEMO_OP_EMBEDDING_BAG || g.op == MNEMO_OP_PEER_GATE || g.op == MNEMO_OP_HIVE;
        for (size_t k = 0; k < g.inputs.size(); ++k) {
            const GraphNode* in = &behind_views(nodes, g.inputs[k]);
            if (in->kind != NodeKind::Param || in->param_id < 0 || static_cast<size_t>(in->param_id) >= n_params) continue;
            const size_t id = static_cast<size_t>(in->param_id);
            if (table_op && gathering_input(g.op, k) >= 0) gathered[id] = true;
            else read_whole[id] = true;  // also a table another op streams: it stays on the device
        }
    }
    std::vector<bool> tables(n_params, false);
    for (size_t i = 0; i < n_params; ++i) tables[i] = gathered[i] && !read_whole[i];
    return tables;
}

}  // namespace mnemo::detail
