// The explicit-memory layout the engine derives from what a plugin declared
// (engine/src/memory/memory_layout.cpp): explicit-memory layers, blocks, heads and dims from the
// states memory.k.<l> / memory.v.<l> / memory.len, retrieval_dim from the "hidden" output, and the
// errors for declarations that break the contract in plugin_abi.h. A fake host stands in for the
// session: only the declarations matter here.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "memory/memory_layout.hpp"
#include "mnemo/error.hpp"

using namespace mnemo;
using detail::DeclaredState;
using detail::MemoryLayout;

namespace {

TensorShape shape(DType dtype, std::initializer_list<int64_t> dims) {
    TensorShape s{dtype, static_cast<int32_t>(dims.size()), {}};
    std::copy(dims.begin(), dims.end(), s.shape);
    return s;
}

// A model of 3 layers, 2 kv heads of 16 dims, 6 blocks; layers 0 and 2 read memories: prefix of
// 2 ids, 5 references x 4 tokens per head.
class FakeHost : public detail::MemoryHost {
public:
    FakeHost() {
        states["memory.len"] = shape(DType::I32, {6});
        for (int l = 0; l < 3; ++l) {
            const bool mem = l != 1;
            const TensorShape s = shape(DType::F32, {mem ? 6 : 1, 2, mem ? 2 + 5 * 4 : 2, 16});
            states["memory.k." + std::to_string(l)] = s;
            states["memory.v." + std::to_string(l)] = s;
        }
    }
    std::map<std::string, TensorShape> states;
    TensorShape hidden = shape(DType::F32, {1, 64});

    std::string plugin_name() const override { return "fake"; }
    DeclaredState state(const std::string& name) const override {
        auto it = states.find(name);
        if (it == states.end()) return {};
        return {static_cast<int32_t>(std::distance(states.begin(), it)), it->second};
    }
    TensorShape output_shape(int32_t purpose, int64_t rows, const std::string& name) override {
        EXPECT_EQ(purpose, MNEMO_GRAPH_ENCODE_QUERY);
        EXPECT_EQ(rows, 1);
        EXPECT_EQ(name, "hidden");
        return hidden;
    }
    // Nothing below is reached while a layout is derived.
    void* state_buffer(int32_t) const override { throw Error("not here"); }
    std::map<std::string, std::vector<float>> run_outputs(int32_t, const std::vector<BatchToken>&,
                                                          const std::vector<std::string>&) override {
        throw Error("not here");
    }
    void* alloc(uint64_t, const std::string&) override { throw Error("not here"); }
    void release(void*) override {}
    void write(void*, uint64_t, const void*, uint64_t, const std::string&) override { throw Error("not here"); }
    bool supports(const mnemo_node&) const override { return false; }
    void* prepare_nodes(const std::vector<mnemo_node>&, const std::string&) override { throw Error("not here"); }
    void run_nodes(void*, const std::string&) override { throw Error("not here"); }
    void release_nodes(void*) override {}
    std::string device_name() const override { return "none"; }
};

mnemo_memory_spec schedule() {
    mnemo_memory_spec d{};
    d.enabled = 1;
    d.tokens_per_head = 4;
    d.reference_length = 24;
    d.chunk_length = 16;
    d.references_per_chunk = 5;
    d.encode_sequences = 4;
    d.retrieval_layer = 1;
    d.n_prefix = 2;
    d.prefix_ids[0] = 1;
    d.prefix_ids[1] = 7;
    return d;
}

std::string error_of(const mnemo_memory_spec& d, FakeHost& host) {
    try {
        detail::derive_memory_layout(d, 3, host);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

}  // namespace

TEST(Memory3Layout, SizesComeFromTheStatesAndTheHiddenOutput) {
    FakeHost host;
    const MemoryLayout m = detail::derive_memory_layout(schedule(), 3, host);
    EXPECT_EQ(m.spec.memory_layers, (std::vector<int32_t>{0, 2}));
    EXPECT_EQ(m.spec.blocks, 6);
    EXPECT_EQ(m.spec.kv_heads, 2);
    EXPECT_EQ(m.spec.head_dim, 16);
    EXPECT_EQ(m.spec.value_dim, 16);
    EXPECT_EQ(m.spec.retrieval_dim, 64);
    EXPECT_EQ(m.spec.prefix_ids, (std::vector<int32_t>{1, 7}));
    EXPECT_EQ(m.spec.chunk_length, 16);
    ASSERT_EQ(m.layers.size(), 3u);
    EXPECT_EQ(m.layers[0].memory_index, 0);
    EXPECT_EQ(m.layers[1].memory_index, -1);
    EXPECT_EQ(m.layers[2].memory_index, 1);
    EXPECT_EQ(m.layers[1].blocks, 1);
    EXPECT_EQ(m.layers[2].slots, 2 + 5 * 4);
    EXPECT_EQ(m.len_state, host.state("memory.len").id);
    EXPECT_EQ(m.layers[2].v, host.state("memory.v.2").id);
}

TEST(Memory3Layout, ValuesMayHaveTheirOwnWidth) {
    FakeHost host;
    for (int l = 0; l < 3; ++l) host.states["memory.v." + std::to_string(l)].shape[3] = 8;
    EXPECT_EQ(detail::derive_memory_layout(schedule(), 3, host).spec.value_dim, 8);
}

TEST(Memory3Layout, MissingStatesAreNamed) {
    FakeHost host;
    host.states.erase("memory.len");
    EXPECT_HAS(error_of(schedule(), host), "the fake plugin reads explicit memories, but it declared no state 'memory.len'");
    FakeHost no_v;
    no_v.states.erase("memory.v.1");
    EXPECT_HAS(error_of(schedule(), no_v), "declared no state 'memory.v.1'");
}

TEST(Memory3Layout, StatesThatBreakTheContractAreRefused) {
    {
        FakeHost host;
        host.states["memory.len"] = shape(DType::F32, {6});
        EXPECT_HAS(error_of(schedule(), host), "state 'memory.len' is f32[6]; the contract needs i32 [blocks]");
    }
    {
        FakeHost host;  // layer 1 with 4 heads where layer 0 has 2
        host.states["memory.k.1"] = shape(DType::F32, {1, 4, 2, 16});
        const std::string e = error_of(schedule(), host);
        EXPECT_HAS(e, "state 'memory.k.1' is f32[1, 4, 2, 16]; the contract needs f32[6, 2, 22, 16] for an explicit-memory layer or "
                      "f32[1, 2, 2, 16] for another");
    }
    {
        FakeHost host;  // an explicit-memory layer with room for 4 references where the schedule reads 5
        host.states["memory.k.2"] = shape(DType::F32, {6, 2, 2 + 4 * 4, 16});
        EXPECT_HAS(error_of(schedule(), host), "state 'memory.k.2' is f32[6, 2, 18, 16]");
    }
    {
        FakeHost host;  // values of an explicit-memory layer in fewer blocks than its keys
        host.states["memory.v.0"] = shape(DType::F32, {5, 2, 22, 16});
        EXPECT_HAS(error_of(schedule(), host), "state 'memory.v.0' is f32[5, 2, 22, 16]");
    }
    {
        FakeHost host;
        host.states["memory.k.0"] = shape(DType::F32, {6, 2, 22});
        EXPECT_HAS(error_of(schedule(), host),
                   "state 'memory.k.0' is f32[6, 2, 22]; the contract needs f32/f16/q8_0 [blocks, kv_heads, slots, dim]");
    }
    {
        FakeHost host;  // the memories are one cache type (layer 0's keys say which)
        host.states["memory.v.0"] = shape(DType::F16, {6, 2, 22, 16});
        EXPECT_HAS(error_of(schedule(), host), "state 'memory.v.0' is f16[6, 2, 22, 16]; the contract needs f32[6, 2, 22, 16]");
    }
}

TEST(Memory3Layout, AModelWithoutMemoryLayersIsRefused) {
    FakeHost host;
    for (int l : {0, 2})
        for (const char* kv : {"memory.k.", "memory.v."}) host.states[kv + std::to_string(l)] = shape(DType::F32, {1, 2, 2, 16});
    EXPECT_HAS(error_of(schedule(), host), "none of its layers has slots for memories");
}

TEST(Memory3Layout, TheHiddenOutputGivesTheRetrievalWidth) {
    FakeHost host;
    host.hidden = shape(DType::F32, {1, 64, 1});
    EXPECT_HAS(error_of(schedule(), host), "output 'hidden' is f32[1, 64, 1] for one token; the contract needs f32 [1, retrieval_dim]");
}

TEST(Memory3Layout, AnInvalidScheduleIsRefused) {
    FakeHost host;
    mnemo_memory_spec d = schedule();
    d.tokens_per_head = 30;  // more than reference_length
    EXPECT_HAS(error_of(d, host), "its schedule is invalid: tokens_per_head 30, reference_length 24");
    d = schedule();
    d.references_per_chunk = 0;
    EXPECT_HAS(error_of(d, host), "references_per_chunk 0");
    d = schedule();
    d.retrieval_layer = 4;
    EXPECT_HAS(error_of(d, host), "its retrieval_layer 4 is not in 0..3");
    d = schedule();
    d.n_prefix = MNEMO_MAX_PREFIX_IDS + 1;
    EXPECT_HAS(error_of(d, host), "its prefix has 33 ids");
}
