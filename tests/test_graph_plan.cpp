// The arena planner: tensors alive at the same time never share bytes, dead ones are reused,
// views and in-place state writes share their source's storage.
#include <gtest/gtest.h>

#include <random>

#include "graph/graph.hpp"

using namespace mnemo;
using namespace mnemo::detail;

namespace {

GraphNode input(int64_t n) {
    GraphNode g;
    g.kind = NodeKind::Input;
    g.input_kind = MNEMO_INPUT_TOKENS;
    g.shape.dtype = DType::I32;
    g.shape.ndim = 1;
    g.shape.shape[0] = n;
    return g;
}

GraphNode op(std::vector<int32_t> in, int64_t elems) {
    GraphNode g;
    g.kind = NodeKind::Op;
    g.op = MNEMO_OP_SILU;
    g.inputs = std::move(in);
    g.shape.ndim = 1;
    g.shape.shape[0] = elems;
    return g;
}

// Checks that any two arena tensors whose lifetimes overlap occupy disjoint bytes.
void expect_no_live_overlap(const std::vector<GraphNode>& nodes, int32_t output, const ArenaPlan& plan) {
    const size_t n = nodes.size();
    std::vector<int64_t> first(n), last(n);
    for (size_t i = 0; i < n; ++i) {
        first[i] = nodes[i].kind == NodeKind::Input ? -1 : static_cast<int64_t>(i);
        last[i] = static_cast<int64_t>(i);
    }
    for (size_t i = 0; i < n; ++i)
        for (int32_t in : nodes[i].inputs) last[in] = std::max<int64_t>(last[in], static_cast<int64_t>(i));
    last[output] = static_cast<int64_t>(n);
    for (size_t a = 0; a < n; ++a)
        for (size_t b = a + 1; b < n; ++b) {
            if (!plan.where[a].in_arena || !plan.where[b].in_arena) continue;
            if (nodes[a].kind == NodeKind::View || nodes[b].kind == NodeKind::View) continue;
            const bool live_together = first[a] <= last[b] && first[b] <= last[a];
            if (!live_together) continue;
            const uint64_t a0 = plan.where[a].offset, a1 = a0 + nodes[a].shape.nbytes();
            const uint64_t b0 = plan.where[b].offset, b1 = b0 + nodes[b].shape.nbytes();
            EXPECT_TRUE(a1 <= b0 || b1 <= a0) << "nodes " << a << " and " << b << " overlap";
            EXPECT_LE(std::max(a1, b1), plan.arena_bytes);
        }
}

}  // namespace

TEST(ArenaPlan, ChainReusesDeadBuffers) {
    // in -> a -> b -> c -> d: at most two intermediates are alive at once.
    std::vector<GraphNode> nodes = {input(4), op({0}, 1000), op({1}, 1000), op({2}, 1000), op({3}, 1000)};
    const ArenaPlan plan = plan_arena(nodes, {4}, 256);
    expect_no_live_overlap(nodes, 4, plan);
    // Without reuse the arena would hold the input and four 4000-byte blocks; with it, at most
    // the input and two blocks (freed bytes of a come back for c, of b for d).
    EXPECT_LE(plan.arena_bytes, 256u + 2u * 4096u);
    EXPECT_NE(plan.where[1].offset, plan.where[2].offset);
}

TEST(ArenaPlan, OutputSurvivesToTheEnd) {
    std::vector<GraphNode> nodes = {input(4), op({0}, 64), op({1}, 64), op({2}, 64)};
    const ArenaPlan plan = plan_arena(nodes, {1}, 64);  // node 1 is the output, read early
    expect_no_live_overlap(nodes, 1, plan);
    EXPECT_NE(plan.where[1].offset, plan.where[3].offset);
}

TEST(ArenaPlan, ViewsAndInPlaceWritesShareStorage) {
    GraphNode state;
    state.kind = NodeKind::Param;
    state.param_id = 7;
    state.shape.ndim = 4;
    state.shape.shape[0] = 1; state.shape.shape[1] = 2; state.shape.shape[2] = 8; state.shape.shape[3] = 4;
    GraphNode view;
    view.kind = NodeKind::View;
    view.inputs = {1};
    view.shape.ndim = 2; view.shape.shape[0] = 2; view.shape.shape[1] = 4;
    GraphNode store;
    store.kind = NodeKind::Op;
    store.op = MNEMO_OP_KV_STORE;
    store.inputs = {2, 1, 0, 0};
    store.shape = state.shape;
    std::vector<GraphNode> nodes = {input(2), op({0}, 8), state, store};
    nodes.insert(nodes.begin() + 2, view);  // index 2 is the view of node 1
    nodes[4].inputs = {3, 2, 0, 0};         // kv_store(state, view, ...)
    const ArenaPlan plan = plan_arena(nodes, {1}, 64);
    EXPECT_EQ(plan.where[2].offset, plan.where[1].offset);  // view shares the op's bytes
    EXPECT_FALSE(plan.where[4].in_arena);                   // kv_store writes the state
    EXPECT_EQ(plan.where[4].param_id, 7);
}

TEST(ArenaPlan, RandomGraphsNeverOverlapLiveTensors) {
    std::mt19937 rng(1234);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<GraphNode> nodes = {input(1 + rng() % 64), input(1 + rng() % 64)};
        const int count = 3 + static_cast<int>(rng() % 40);
        for (int i = 0; i < count; ++i) {
            std::vector<int32_t> in;
            const int k = 1 + static_cast<int>(rng() % 3);
            for (int j = 0; j < k; ++j) in.push_back(static_cast<int32_t>(rng() % nodes.size()));
            nodes.push_back(op(in, 1 + static_cast<int64_t>(rng() % 5000)));
        }
        const int32_t out = static_cast<int32_t>(nodes.size() - 1 - rng() % 3);
        const ArenaPlan plan = plan_arena(nodes, {out}, 256);
        expect_no_live_overlap(nodes, out, plan);
        for (const Location& l : plan.where) EXPECT_EQ(l.offset % 256, 0u);
    }
}
