// The memory3 plugin (plugins/memory3) on the tiny Memory3 model and scratch copies of it.
// Checked here: the memory description and the states it declares (the contract in
// plugin_abi.h), the structure of its three graphs (which prefix each layer reads, RoPE offsets,
// the named outputs of ENCODE and ENCODE_QUERY), that with an empty prefix its logits are the
// Llama's on the same weights, that the reference BOS alone gives the reference's logits, and
// the config errors; and the same for a memory3 checkpoint with UltraMemV2 memory layers (which
// graphs run which memory layers, its plain-prompt logits, the mem_* config errors). Writing and
// reading memories end to end against the float64 goldens of tools/reference/memory3.py is
// test_memory3_session.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "modules/model_host.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/io/safetensors.hpp"
#include "model_test_util.hpp"
#include "npy.hpp"

using namespace mnemo;
using namespace mnemo::test;
using detail::GraphBuilder;
using detail::GraphNode;
using detail::NodeKind;

namespace {

// 4 layers, hidden 64, 4 query heads on 2 kv heads of 16 dims, vocab 320, 2048 positions, tied
// embeddings; memory3: layers [0, 1], 4 tokens per head, R = 24, chunks of 16, 5 references,
// reference BOS ids [1, 5, 9] (b = 3), retrieval_layer 1. No tokenizer.
const char* const kModel = "memory3-tiny-f32";

// A scratch copy of the tiny model with config.json fields replaced (JSON text; "" removes one).
// Edited through the JSON parser: the field name "memory3" is also the model_type's value.
class Memory3Copy : public ModelCopy {
public:
    struct Of {
        const char* model;
    };
    explicit Memory3Copy(Of of) : ModelCopy(model_dir(of.model)) {}
    Memory3Copy() : Memory3Copy(Of{kModel}) {}
    explicit Memory3Copy(const std::string& memory3) : Memory3Copy() { set("memory3", memory3); }
    void set(const std::string& key, const std::string& value) const {
        const json::Value cfg = json::parse(read("config.json"), "config.json");
        std::vector<std::pair<std::string, json::Value>> members;
        bool found = false;
        for (const auto& [k, v] : cfg.as_object()) {
            if (k != key) {
                members.emplace_back(k, v);
            } else if (!value.empty()) {
                members.emplace_back(k, json::parse(value, "test value"));
                found = true;
            }
        }
        if (!found && !value.empty()) members.emplace_back(key, json::parse(value, "test value"));
        write("config.json", json::Value::make_object(std::move(members)).dump());
    }
};

std::vector<int64_t> dims(const TensorShape& s) { return std::vector<int64_t>(s.shape, s.shape + s.ndim); }

// The plugin loaded without a session: its model info, declarations and graphs.
class Loaded {
public:
    explicit Loaded(const std::string& dir, int32_t n_seq = 1) {
        config_ = json::parse_file(dir + "/config.json");
        checkpoint_ = Checkpoint::open(dir);
        plugin_ = &plugins().for_model_type("memory3");
        host_ = std::make_unique<detail::ModelHost>(config_, "config.json", checkpoint_, plugin_->name, dir);
        const mnemo_context_params cp{64, n_seq, MNEMO_DTYPE_F32};
        mnemo_error err{};
        if (plugin_->api->create(host_->api(), &cp, &info_, &model_, &err) != MNEMO_OK) throw Error(err.message);
    }
    ~Loaded() {
        if (model_) plugin_->api->destroy(model_);
    }
    Loaded(const Loaded&) = delete;
    Loaded& operator=(const Loaded&) = delete;

    const mnemo_model_info& info() const { return info_; }
    const mnemo_memory_spec& spec() const { return info_.memory; }
    const detail::ParamDecl* param(const std::string& name) const {
        for (const detail::ParamDecl& p : host_->params())
            if (p.name == name) return &p;
        return nullptr;
    }
    std::vector<int64_t> state_dims(const std::string& name) const {
        const detail::ParamDecl* p = param(name);
        if (!p || p->kind != detail::ParamKind::State) return {};
        return dims(p->shape);
    }

    std::unique_ptr<GraphBuilder> build(int32_t purpose, int64_t n_tokens) const {
        auto b = std::make_unique<GraphBuilder>(
            n_tokens, 1, [this](int32_t id) { return host_->param_shape(id); }, purpose);
        mnemo_error err{};
        if (plugin_->api->build(model_, b->api(), &err) != MNEMO_OK)
            throw Error(b->error().empty() ? err.message : b->error());
        return b;
    }
    // The declaration behind node `id` of a graph (through reshapes and in-place writes of a
    // state: a KV_STORE's output is its cache); "" when it is not a parameter.
    std::string param_name(const GraphBuilder& b, int32_t id) const {
        const GraphNode* n = &b.nodes()[static_cast<size_t>(id)];
        while (n->kind == NodeKind::View || (n->kind == NodeKind::Op && n->op == MNEMO_OP_KV_STORE))
            n = &b.nodes()[static_cast<size_t>(n->inputs[0])];
        return n->kind == NodeKind::Param ? host_->params()[static_cast<size_t>(n->param_id)].name : "";
    }

private:
    json::Value config_;
    Checkpoint checkpoint_;
    const PluginModule* plugin_ = nullptr;
    std::unique_ptr<detail::ModelHost> host_;
    mnemo_model_info info_{};
    void* model_ = nullptr;
};

// Ids of the nodes of op `op`, in build order (the order of the layers).
std::vector<int32_t> ops_of(const GraphBuilder& b, int32_t op) {
    std::vector<int32_t> out;
    for (size_t i = 0; i < b.nodes().size(); ++i)
        if (b.nodes()[i].kind == NodeKind::Op && b.nodes()[i].op == op) out.push_back(static_cast<int32_t>(i));
    return out;
}
const GraphNode& node(const GraphBuilder& b, int32_t id) { return b.nodes()[static_cast<size_t>(id)]; }

// The op that produced node id, looking through reshapes.
int32_t producer(const GraphBuilder& b, int32_t id) {
    const GraphNode* n = &node(b, id);
    while (n->kind == NodeKind::View) n = &node(b, n->inputs[0]);
    return n->kind == NodeKind::Op ? n->op : -1;
}

std::map<std::string, std::vector<int64_t>> named_shapes(const GraphBuilder& b) {
    std::map<std::string, std::vector<int64_t>> out;
    for (const auto& [name, id] : b.named_outputs()) out[name] = dims(node(b, id).shape);
    return out;
}

int32_t named_id(const GraphBuilder& b, const std::string& name) {
    for (const auto& [n, id] : b.named_outputs())
        if (n == name) return id;
    throw Error("the graph has no output '" + name + "'");
}

std::string load_error(const std::string& dir) {
    try {
        open_model(dir);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// The load error for a memory3 object; every message must say which plugin refused and name
// config.json.
std::string config_error(const std::string& memory3) {
    Memory3Copy m(memory3);
    const std::string e = load_error(m.dir());
    EXPECT_NE(e.find("memory3 plugin"), std::string::npos) << e;
    EXPECT_NE(e.find("config.json"), std::string::npos) << e;
    return e;
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

const float kScale = 0.25f;  // 1 / sqrt(head_dim 16)

}  // namespace

// ------------------------------------------------------------------------ what it declares

TEST(Memory3Plugin, DescribesItsMemories) {
    Loaded m(model_dir(kModel));
    const mnemo_memory_spec& s = m.spec();
    EXPECT_EQ(s.enabled, 1);
    EXPECT_EQ(s.tokens_per_head, 4);
    EXPECT_EQ(s.reference_length, 24);
    EXPECT_EQ(s.chunk_length, 16);
    EXPECT_EQ(s.references_per_chunk, 5);
    EXPECT_EQ(s.encode_sequences, 4);
    EXPECT_EQ(s.retrieval_layer, 1);
    ASSERT_EQ(s.n_prefix, 3);
    EXPECT_EQ(std::vector<int32_t>(s.prefix_ids, s.prefix_ids + 3), (std::vector<int32_t>{1, 5, 9}));
    EXPECT_STREQ(m.info().architecture, "memory3 (llama GQA 4/2, memory layers 0-1, 4 tokens/head, chunk 16)");
    EXPECT_EQ(m.info().n_ctx_train, 2048 - 24);  // the context starts at position R
    EXPECT_EQ(m.info().n_layers, 4);
    EXPECT_EQ(m.info().hidden_size, 64);
    // The blocks are memory.len's: a 256-token ubatch spans up to 17 chunks, + 1.
    EXPECT_EQ(m.state_dims("memory.len"), (std::vector<int64_t>{256 / 16 + 2}));
}

// The sizes the description leaves out are read by the engine from the states and the "hidden"
// output, and the schedule is the plugin's.
TEST(Memory3Plugin, TheSessionReadsTheSizesFromTheDeclarations) {
    auto session = open_model(model_dir(kModel), 64);
    const MemorySpec& s = session->memory_spec();
    EXPECT_EQ(s.memory_layers, (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(s.kv_heads, 2);
    EXPECT_EQ(s.head_dim, 16);
    EXPECT_EQ(s.value_dim, 16);
    EXPECT_EQ(s.blocks, 256 / 16 + 2);
    EXPECT_EQ(s.retrieval_dim, 64);
    EXPECT_EQ(s.chunk_length, 16);
    EXPECT_EQ(s.prefix_ids, (std::vector<int32_t>{1, 5, 9}));
}

TEST(Memory3Plugin, BlocksCoverEverySequence) {
    Loaded m(model_dir(kModel), /*n_seq=*/30);
    EXPECT_EQ(m.state_dims("memory.len"), (std::vector<int64_t>{30}));
    EXPECT_EQ(m.state_dims("memory.k.0"), (std::vector<int64_t>{30, 2, 3 + 5 * 4, 16}));
}

TEST(Memory3Plugin, DefaultsFollowThePaper) {
    // Only the reference BOS ids given (no tokenizer here): the first half of the layers
    // (§3.3), 8 tokens per head, R 128, chunks of 64, 5 references, retrieval after L/4 layers.
    Memory3Copy copy(R"({"reference_bos_ids": [1]})");
    Loaded m(copy.dir());
    const mnemo_memory_spec& s = m.spec();
    EXPECT_EQ(m.state_dims("memory.k.1"), (std::vector<int64_t>{256 / 64 + 2, 2, 1 + 5 * 8, 16}));  // a memory layer
    EXPECT_EQ(m.state_dims("memory.k.2"), (std::vector<int64_t>{1, 2, 1, 16}));                     // not one
    EXPECT_EQ(s.tokens_per_head, 8);
    EXPECT_EQ(s.reference_length, 128);
    EXPECT_EQ(s.chunk_length, 64);
    EXPECT_EQ(s.references_per_chunk, 5);
    EXPECT_EQ(m.state_dims("memory.len"), (std::vector<int64_t>{256 / 64 + 2}));
    EXPECT_EQ(s.retrieval_layer, 1);
    EXPECT_STREQ(m.info().architecture, "memory3 (llama GQA 4/2, memory layers 0-1, 8 tokens/head, chunk 64)");
    const auto g = m.build(MNEMO_GRAPH_ENCODE, 4);
    for (int32_t a : ops_of(*g, MNEMO_OP_ATTN_MASS)) EXPECT_EQ(node(*g, a).iparams[0], 0);  // softmax
}

TEST(Memory3Plugin, ScatteredMemoryLayersAreListed) {
    Memory3Copy copy(R"({"memory_layers": [1, 3], "reference_bos_ids": [1]})");
    Loaded m(copy.dir());
    EXPECT_STREQ(m.info().architecture, "memory3 (llama GQA 4/2, memory layers 1,3, 8 tokens/head, chunk 64)");
    EXPECT_EQ(m.state_dims("memory.k.0"), (std::vector<int64_t>{1, 2, 1, 16}));
    EXPECT_EQ(m.state_dims("memory.k.3"), (std::vector<int64_t>{6, 2, 1 + 5 * 8, 16}));
    EXPECT_EQ(open_model(copy.dir())->memory_spec().memory_layers, (std::vector<int32_t>{1, 3}));  // read from the states
}

TEST(Memory3Plugin, StatesFollowTheContract) {
    Loaded m(model_dir(kModel));
    // Memory layers: a block per chunk in flight, b BOS slots + 5 memories x 4 tokens.
    for (const char* l : {"0", "1"}) {
        EXPECT_EQ(m.state_dims(std::string("memory.k.") + l), (std::vector<int64_t>{18, 2, 3 + 5 * 4, 16}));
        EXPECT_EQ(m.state_dims(std::string("memory.v.") + l), (std::vector<int64_t>{18, 2, 3 + 5 * 4, 16}));
    }
    // Other layers: the reference BOS only, one block.
    for (const char* l : {"2", "3"}) {
        EXPECT_EQ(m.state_dims(std::string("memory.k.") + l), (std::vector<int64_t>{1, 2, 3, 16}));
        EXPECT_EQ(m.state_dims(std::string("memory.v.") + l), (std::vector<int64_t>{1, 2, 3, 16}));
    }
    const detail::ParamDecl* len = m.param("memory.len");
    ASSERT_NE(len, nullptr);
    EXPECT_EQ(len->shape.dtype, DType::I32);
    EXPECT_EQ(dims(len->shape), (std::vector<int64_t>{18}));
    // Encode caches: 4 references of b + R slots, for the layers whose attention ENCODE runs:
    // all but the last, which only projects its keys and values.
    for (const char* l : {"0", "1", "2"}) {
        EXPECT_EQ(m.state_dims(std::string("encode.k.") + l), (std::vector<int64_t>{4, 2, 3 + 24, 16}));
        EXPECT_EQ(m.state_dims(std::string("encode.v.") + l), (std::vector<int64_t>{4, 2, 3 + 24, 16}));
    }
    EXPECT_EQ(m.param("encode.k.3"), nullptr);
}

// ------------------------------------------------------------------------------ the graphs

TEST(Memory3Plugin, LogitsGraphReadsBosEverywhereAndMemoriesInMemoryLayers) {
    Loaded m(model_dir(kModel));
    const auto g = m.build(MNEMO_GRAPH_LOGITS, 5);
    EXPECT_GE(g->output(), 0);
    const auto att = ops_of(*g, MNEMO_OP_ATTENTION);
    ASSERT_EQ(att.size(), 4u);
    for (int l = 0; l < 4; ++l) {
        const GraphNode& a = node(*g, att[static_cast<size_t>(l)]);
        const std::string s = std::to_string(l);
        EXPECT_EQ(m.param_name(*g, a.inputs[1]), "model.layers." + s + ".k_cache");
        EXPECT_FLOAT_EQ(a.fparams[0], kScale);
        if (l < 2) {
            // Memory layer: a block per query, chosen by the MEMORY_BLOCK input.
            ASSERT_EQ(a.inputs.size(), 9u);
            EXPECT_EQ(m.param_name(*g, a.inputs[5]), "memory.k." + s);
            EXPECT_EQ(m.param_name(*g, a.inputs[6]), "memory.v." + s);
            EXPECT_EQ(m.param_name(*g, a.inputs[7]), "memory.len");
            EXPECT_EQ(node(*g, a.inputs[8]).kind, NodeKind::Input);
            EXPECT_EQ(node(*g, a.inputs[8]).input_kind, MNEMO_INPUT_MEMORY_BLOCK);
        } else {
            // The shared reference-BOS block, all b slots.
            ASSERT_EQ(a.inputs.size(), 8u);
            EXPECT_EQ(m.param_name(*g, a.inputs[5]), "memory.k." + s);
            EXPECT_EQ(m.param_name(*g, a.inputs[6]), "memory.v." + s);
            const detail::ParamDecl* bos_len = m.param(m.param_name(*g, a.inputs[7]));
            ASSERT_NE(bos_len, nullptr);
            ASSERT_EQ(bos_len->kind, detail::ParamKind::Constant);
            ASSERT_EQ(bos_len->owned.size(), 4u);
            EXPECT_EQ(*reinterpret_cast<const int32_t*>(bos_len->owned.data()), 3);
        }
    }
    // The context sits after the memories' positions 0..R-1.
    const auto ropes = ops_of(*g, MNEMO_OP_ROPE);
    ASSERT_EQ(ropes.size(), 8u);
    for (int32_t r : ropes) EXPECT_EQ(node(*g, r).iparams[2], 24);
    EXPECT_TRUE(ops_of(*g, MNEMO_OP_ATTN_MASS).empty());
    EXPECT_TRUE(g->named_outputs().empty());
}

TEST(Memory3Plugin, EncodeGraphHandsOutKeysValuesWeightsAndHidden) {
    Loaded m(model_dir(kModel));
    const int64_t n = 10;
    const auto g = m.build(MNEMO_GRAPH_ENCODE, n);
    EXPECT_LT(g->output(), 0);  // no logits
    std::map<std::string, std::vector<int64_t>> want = {{"mass.0", {n, 2}}, {"mass.1", {n, 2}}, {"hidden", {n, 64}}};
    for (int l = 0; l < 4; ++l) {
        want["k." + std::to_string(l)] = {n, 2, 16};
        want["v." + std::to_string(l)] = {n, 2, 16};
    }
    EXPECT_EQ(named_shapes(*g), want);
    // Keys after RoPE at slot - b (BOS at -b..-1, reference token j at j), values unrotated.
    for (int l = 0; l < 4; ++l) {
        EXPECT_EQ(producer(*g, named_id(*g, "k." + std::to_string(l))), MNEMO_OP_ROPE);
        EXPECT_EQ(producer(*g, named_id(*g, "v." + std::to_string(l))), MNEMO_OP_MATMUL);
    }
    for (int32_t r : ops_of(*g, MNEMO_OP_ROPE)) EXPECT_EQ(node(*g, r).iparams[2], -3);
    // §3.3's weights: pre-RoPE q and k, BOS slots (< b) not counted, softmax.
    const auto mass = ops_of(*g, MNEMO_OP_ATTN_MASS);
    ASSERT_EQ(mass.size(), 2u);
    for (int32_t id : mass) {
        const GraphNode& a = node(*g, id);
        EXPECT_EQ(producer(*g, a.inputs[0]), MNEMO_OP_MATMUL);
        EXPECT_EQ(producer(*g, a.inputs[1]), MNEMO_OP_MATMUL);
        EXPECT_EQ(a.iparams[0], 0);
        EXPECT_EQ(a.iparams[1], 3);
        EXPECT_FLOAT_EQ(a.fparams[0], kScale);
    }
    EXPECT_EQ(named_id(*g, "mass.0"), mass[0]);
    EXPECT_EQ(named_id(*g, "mass.1"), mass[1]);
    // Plain causal attention in the encode caches for layers 0..2 (nothing reads layer 3's).
    const auto att = ops_of(*g, MNEMO_OP_ATTENTION);
    ASSERT_EQ(att.size(), 3u);
    for (int l = 0; l < 3; ++l) {
        const GraphNode& a = node(*g, att[static_cast<size_t>(l)]);
        EXPECT_EQ(a.inputs.size(), 5u);
        EXPECT_EQ(m.param_name(*g, a.inputs[1]), "encode.k." + std::to_string(l));
        EXPECT_EQ(m.param_name(*g, a.inputs[2]), "encode.v." + std::to_string(l));
    }
    // "hidden" after retrieval_layer = 1 layer: the residual sum closing layer 0, made after
    // layer 0's MLP and before layer 1's attention.
    const int32_t hidden = named_id(*g, "hidden");
    EXPECT_EQ(node(*g, hidden).op, MNEMO_OP_ADD);
    EXPECT_GT(hidden, ops_of(*g, MNEMO_OP_SWIGLU)[0]);
    EXPECT_LT(hidden, att[1]);
    EXPECT_EQ(ops_of(*g, MNEMO_OP_SWIGLU).size(), 3u);
}

TEST(Memory3Plugin, ExpSumSelectionIsModeOne) {
    Memory3Copy copy(R"({"memory_layers": [0, 1, 2], "reference_length": 24, "reference_bos_ids": [1],
                         "selection": "exp_sum"})");
    Loaded m(copy.dir());
    const auto g = m.build(MNEMO_GRAPH_ENCODE, 4);
    const auto mass = ops_of(*g, MNEMO_OP_ATTN_MASS);
    ASSERT_EQ(mass.size(), 3u);
    for (int32_t id : mass) {
        EXPECT_EQ(node(*g, id).iparams[0], 1);
        EXPECT_EQ(node(*g, id).iparams[1], 1);
    }
    EXPECT_EQ(named_shapes(*g).count("mass.2"), 1u);
    EXPECT_EQ(named_shapes(*g).count("mass.3"), 0u);
}

TEST(Memory3Plugin, RetrievalLayerDecidesWhereHiddenIsRead) {
    {  // after 0 layers: the embeddings; ENCODE_QUERY then runs no layer at all
        Memory3Copy copy(R"({"reference_length": 24, "reference_bos_ids": [1], "retrieval_layer": 0})");
        Loaded m(copy.dir());
        const auto q = m.build(MNEMO_GRAPH_ENCODE_QUERY, 6);
        EXPECT_EQ(named_shapes(*q), (std::map<std::string, std::vector<int64_t>>{{"hidden", {6, 64}}}));
        EXPECT_EQ(node(*q, named_id(*q, "hidden")).op, MNEMO_OP_GET_ROWS);
        EXPECT_TRUE(ops_of(*q, MNEMO_OP_ATTENTION).empty());
        const auto e = m.build(MNEMO_GRAPH_ENCODE, 6);
        EXPECT_EQ(node(*e, named_id(*e, "hidden")).op, MNEMO_OP_GET_ROWS);
    }
    {  // after every layer: ENCODE runs every layer's attention, with an encode cache for each
        Memory3Copy copy(R"({"reference_length": 24, "reference_bos_ids": [1], "retrieval_layer": 4})");
        Loaded m(copy.dir());
        EXPECT_EQ(m.state_dims("encode.k.3"), (std::vector<int64_t>{4, 2, 1 + 24, 16}));
        const auto e = m.build(MNEMO_GRAPH_ENCODE, 6);
        EXPECT_EQ(ops_of(*e, MNEMO_OP_ATTENTION).size(), 4u);
        EXPECT_EQ(ops_of(*e, MNEMO_OP_SWIGLU).size(), 4u);
        EXPECT_GT(named_id(*e, "hidden"), ops_of(*e, MNEMO_OP_SWIGLU)[3]);
        const auto q = m.build(MNEMO_GRAPH_ENCODE_QUERY, 6);
        EXPECT_EQ(named_shapes(*q).size(), 1u);
        EXPECT_EQ(ops_of(*q, MNEMO_OP_ATTENTION).size(), 4u);
        EXPECT_TRUE(ops_of(*q, MNEMO_OP_ATTN_MASS).empty());
    }
}

TEST(Memory3Plugin, EncodeQueryStopsAtTheRetrievalLayer) {
    Loaded m(model_dir(kModel));  // retrieval_layer 1
    const auto q = m.build(MNEMO_GRAPH_ENCODE_QUERY, 7);
    EXPECT_LT(q->output(), 0);
    EXPECT_EQ(named_shapes(*q), (std::map<std::string, std::vector<int64_t>>{{"hidden", {7, 64}}}));
    EXPECT_EQ(ops_of(*q, MNEMO_OP_ATTENTION).size(), 1u);
    EXPECT_TRUE(ops_of(*q, MNEMO_OP_ATTN_MASS).empty());
    for (int32_t r : ops_of(*q, MNEMO_OP_ROPE)) EXPECT_EQ(node(*q, r).iparams[2], -3);
}

TEST(Memory3Plugin, EmptyReferenceBosReadsNoPrefixOutsideMemoryLayers) {
    Memory3Copy copy(R"({"memory_layers": [0, 1], "tokens_per_head": 4, "reference_length": 24,
                         "chunk_length": 16, "reference_bos_ids": []})");
    Loaded m(copy.dir());
    EXPECT_EQ(m.spec().n_prefix, 0);
    EXPECT_EQ(m.state_dims("memory.k.0"), (std::vector<int64_t>{18, 2, 5 * 4, 16}));
    EXPECT_EQ(m.state_dims("memory.k.2"), (std::vector<int64_t>{1, 2, 0, 16}));  // declared, empty
    const auto g = m.build(MNEMO_GRAPH_LOGITS, 3);
    const auto att = ops_of(*g, MNEMO_OP_ATTENTION);
    ASSERT_EQ(att.size(), 4u);
    EXPECT_EQ(node(*g, att[1]).inputs.size(), 9u);
    EXPECT_EQ(node(*g, att[2]).inputs.size(), 5u);
    EXPECT_EQ(node(*g, att[3]).inputs.size(), 5u);
    const auto e = m.build(MNEMO_GRAPH_ENCODE, 3);
    for (int32_t r : ops_of(*e, MNEMO_OP_ROPE)) EXPECT_EQ(node(*e, r).iparams[2], 0);
    for (int32_t a : ops_of(*e, MNEMO_OP_ATTN_MASS)) EXPECT_EQ(node(*e, a).iparams[1], 0);
}

// ------------------------------------------------------------------------------ numbers

// With no reference BOS and no memory in any block, every attention reads only the context, at
// positions shifted by R: RoPE scores depend on position differences only, so the logits are the
// Llama's on the same weights, for every row of a prompt that crosses chunks and ubatches, for
// two interleaved sequences and for decoded tokens.
TEST(Memory3Plugin, WithoutPrefixTheLogitsAreTheLlamas) {
    Memory3Copy m3_dir(R"({"memory_layers": [0, 1], "tokens_per_head": 4, "reference_length": 24,
                           "chunk_length": 16, "reference_bos_ids": []})");
    Memory3Copy llama_dir;
    llama_dir.set("memory3", "");
    llama_dir.set("model_type", "\"llama\"");
    std::vector<int32_t> prompt = {1};
    for (int32_t i = 1; i < 40; ++i) prompt.push_back((i * 37 + 11) % 320);
    const std::vector<int32_t> other = {1, 300, 5, 77, 9, 12, 250, 3, 44, 61, 19};
    auto m3 = open_model(m3_dir.dir(), 64, /*n_seq=*/2, /*ubatch=*/8);
    auto llama = open_model(llama_dir.dir(), 64, 2, 8);
    ASSERT_EQ(m3->summary().plugin, "memory3");
    ASSERT_EQ(llama->summary().plugin, "llama");

    EXPECT_LT(max_rel_error(m3->append(1, other, true), llama->append(1, other, true)), 1e-5);
    const std::vector<float> a = m3->append(0, prompt, true);
    const std::vector<float> b = llama->append(0, prompt, true);
    ASSERT_EQ(a.size(), prompt.size() * 320u);
    EXPECT_LT(max_rel_error(a, b), 1e-5);
    for (int32_t t : {7, 200, 31}) {
        EXPECT_LT(max_rel_error(m3->append(0, {t}), llama->append(0, {t})), 1e-5);
        EXPECT_LT(max_rel_error(m3->append(1, {t}), llama->append(1, {t})), 1e-5);
    }
}

// The reference BOS alone (no memory source): every layer reads its b keys at positions -b..-1
// before the context at R + t. The float64 reference's logits
// (tools/test_models/make_memory3_checkpoint.py).
TEST(Memory3Plugin, ReferenceBosAloneGivesTheReferenceLogits) {
    const std::string dir = model_dir(kModel);
    const std::vector<float> want = test::load_npy(dir + "/golden_logits.npy").as_f32();
    auto s = open_model(dir, 64);
    EXPECT_LT(max_rel_error(s->append(0, read_ids(dir + "/golden_ids.txt"), true), want), 1e-5);
}

// ------------------------------------------------------------------------------ config errors

TEST(Memory3Plugin, TheTinyModelLoads) { EXPECT_EQ(load_error(model_dir(kModel)), ""); }

// Each bad "memory3" object of config.json and a part of the error it must give.
struct ConfigCase {
    const char* memory3;
    const char* error;
};

void expect_config_errors(std::initializer_list<ConfigCase> cases) {
    for (const ConfigCase& c : cases) EXPECT_HAS(config_error(c.memory3), c.error);
}

TEST(Memory3Plugin, TokensPerHeadAboveTheReferenceLength) {
    expect_config_errors({
        {R"({"tokens_per_head": 30, "reference_length": 24, "reference_bos_ids": [1]})",
         "memory3.tokens_per_head (30) must be in 1..reference_length (24)"},
        {R"({"tokens_per_head": 0, "reference_bos_ids": [1]})", "memory3.tokens_per_head (0) must be in 1..reference_length (128)"},
    });
}

TEST(Memory3Plugin, BadMemoryLayers) {
    expect_config_errors({
        {R"({"memory_layers": [0, 4], "reference_bos_ids": [1]})",
         "memory3.memory_layers[1] = 4 is out of range (num_hidden_layers = 4, layers 0..3)"},
        {R"({"memory_layers": [-1], "reference_bos_ids": [1]})", "memory3.memory_layers[0] = -1 is out of range"},
        {R"({"memory_layers": [1, 0], "reference_bos_ids": [1]})",
         "memory3.memory_layers must be strictly increasing (no repeats), got 1 before 0"},
        {R"({"memory_layers": [0, 0], "reference_bos_ids": [1]})", "memory3.memory_layers must be strictly increasing"},
        {R"({"memory_layers": [], "reference_bos_ids": [1]})", "field 'memory3.memory_layers' must be a non-empty list of integers"},
        {R"({"memory_layers": 0, "reference_bos_ids": [1]})", "field 'memory3.memory_layers' must be a non-empty list of integers"},
        {R"({"memory_layers": [0, "1"], "reference_bos_ids": [1]})", "field 'memory3.memory_layers.1': expected an integer, found string"},
    });
}

TEST(Memory3Plugin, BadSizes) {
    expect_config_errors({
        {R"({"chunk_length": 0, "reference_bos_ids": [1]})", "memory3.chunk_length must be in 1..2^20, got 0"},
        {R"({"references_per_chunk": 0, "reference_bos_ids": [1]})", "memory3.references_per_chunk must be in 1..1024, got 0"},
        {R"({"reference_length": 0, "reference_bos_ids": [1]})", "memory3.reference_length must be in 1..2^20, got 0"},
        {R"({"reference_length": 2048, "reference_bos_ids": [1]})",
         "memory3.reference_length (2048) leaves no context positions: max_position_embeddings is 2048"},
        {R"({"tokens_per_head": 2.5, "reference_bos_ids": [1]})", "field 'memory3.tokens_per_head': expected an integer, found 2.5"},
    });
}

TEST(Memory3Plugin, BadSelectionAndRetrievalLayer) {
    expect_config_errors({
        {R"({"selection": "max", "reference_bos_ids": [1]})",
         "memory3.selection 'max' is not 'softmax' (the weights of §3.3) or 'exp_sum'"},
        {R"({"retrieval_layer": 5, "reference_bos_ids": [1]})", "memory3.retrieval_layer (5) must be in 0..num_hidden_layers (4)"},
        {R"({"retrieval_layer": -1, "reference_bos_ids": [1]})", "memory3.retrieval_layer (-1) must be in 0..num_hidden_layers (4)"},
    });
}

TEST(Memory3Plugin, BadReferenceBos) {
    EXPECT_HAS(config_error(R"({"reference_bos_ids": [1, 320]})"),
               "memory3.reference_bos_ids[1] = 320 is not a token id (vocab_size = 320)");
    EXPECT_HAS(config_error(R"({"reference_bos_ids": 1})"), "memory3.reference_bos_ids must be a list of token ids");
    std::string many = "[1";
    for (int i = 0; i < 32; ++i) many += ", 2";
    EXPECT_HAS(config_error(R"({"reference_bos_ids": )" + many + "]}"),
               "the reference BOS has 33 tokens; at most 32 are supported");
    // No ids and no tokenizer in the folder: neither way gives the reference BOS.
    const std::string e = config_error(R"({"memory_layers": [0]})");
    EXPECT_HAS(e, "memory3.reference_bos_ids is not given and memory3.reference_bos \"<s>Reference:\" cannot be "
                  "tokenized");
    EXPECT_HAS(e, "give the ids of the reference BOS in memory3.reference_bos_ids");
    // Nothing to tokenize: an empty reference BOS is no prefix at all.
    Memory3Copy none(R"({"reference_bos": ""})");
    Loaded m(none.dir());
    EXPECT_EQ(m.spec().n_prefix, 0);
}

TEST(Memory3Plugin, Memory3MustBeAnObject) {
    expect_config_errors({
        {"5", "field 'memory3' must be an object"},
        {"[1]", "field 'memory3' must be an object"},
        {"\"memory\"", "field 'memory3' must be an object"},
    });
}

TEST(Memory3Plugin, UnknownSettingsAreRefused) {
    // A typo would otherwise be its default, silently.
    expect_config_errors({
        {"{\"tokens_per_heads\": 8}", "memory3.tokens_per_heads is not a Memory3 setting"},
        {"{\"chunk_length\": 64, \"retrival_layer\": 1}", "memory3.retrival_layer is not a Memory3 setting"},
    });
}

// -------------------------------------------------- UltraMemV2 memory layers in a memory3 model

namespace {

// memory3-ultramem-tiny-f32: 4 layers, hidden 32, 2 query heads on 1 kv head of 16 dims, vocab
// 256; memory3 as memory3-tiny-f32 (layers [0, 1], R = 24, chunks of 16) but retrieval_layer 3;
// UltraMemV2 layers "0:1/3:3" (memory 0 reads block 0 and adds after block 1, memory 1 reads and
// adds at block 3), knum 4, kdim 8, vdim 8, knn 4, one head, Ek 2, share ratio 0.75, pre-values 8.
const char* const kUltraMemModel = "memory3-ultramem-tiny-f32";

// The load error of the UltraMem model with config.json fields replaced ("" removes one); every
// message must say which plugin refused and name config.json.
std::string ultramem_config_error(std::initializer_list<std::pair<const char*, const char*>> fields) {
    Memory3Copy m(Memory3Copy::Of{kUltraMemModel});
    for (const auto& [k, v] : fields) m.set(k, v);
    const std::string e = load_error(m.dir());
    EXPECT_NE(e.find("memory3 plugin"), std::string::npos) << e;
    EXPECT_NE(e.find("config.json"), std::string::npos) << e;
    return e;
}

// The memory layers a graph runs: one PK_SCORE (TDQKR sub-key scores) per memory layer.
size_t memory_layers_in(const GraphBuilder& b) { return ops_of(b, MNEMO_OP_PK_SCORE).size(); }

}  // namespace

TEST(Memory3UltraMem, DescribesBothKindsOfMemory) {
    Loaded m(model_dir(kUltraMemModel));
    EXPECT_STREQ(m.info().architecture,
                 "memory3 (llama GQA 2/1, memory layers 0-1, 4 tokens/head, chunk 16); UltraMemV2 memory 0:1/3:3 "
                 "(2 layers): TDQKR H=1 R=2 C=2 Nk=8 kdim=8 knn=4, shared table 32x8 (windows of 16), Ek=2 summed, "
                 "pre-value gate linear");
    EXPECT_EQ(m.info().hidden_size, 32);
}

// LOGITS runs both memory layers; ENCODE every block but the last's MLP, so memory 1 (added after
// block 3) is left out; ENCODE_QUERY stops at retrieval_layer 3, likewise.
TEST(Memory3UltraMem, EveryGraphRunsTheMemoryLayersItsBlocksReach) {
    Loaded m(model_dir(kUltraMemModel));
    EXPECT_EQ(memory_layers_in(*m.build(MNEMO_GRAPH_LOGITS, 5)), 2u);
    EXPECT_EQ(memory_layers_in(*m.build(MNEMO_GRAPH_ENCODE, 5)), 1u);
    EXPECT_EQ(memory_layers_in(*m.build(MNEMO_GRAPH_ENCODE_QUERY, 5)), 1u);
    // The plain memory3 model has none.
    Loaded plain(model_dir(kModel));
    EXPECT_EQ(memory_layers_in(*plain.build(MNEMO_GRAPH_LOGITS, 5)), 0u);
}

// The reference BOS alone, memory layers included: the float64 reference's logits
// (tools/test_models/make_memory3_checkpoint.py --memory-layers).
TEST(Memory3UltraMem, ReferenceBosAloneGivesTheReferenceLogits) {
    const std::string dir = model_dir(kUltraMemModel);
    const std::vector<float> want = test::load_npy(dir + "/golden_logits.npy").as_f32();
    auto s = open_model(dir, 64);
    EXPECT_LT(max_rel_error(s->append(0, read_ids(dir + "/golden_ids.txt"), true), want), 1e-5);
}

TEST(Memory3UltraMem, BadInsertWay) {
    EXPECT_HAS(ultramem_config_error({{"mem_insert_way", R"("0-1")"}}),
               "mem_insert_way \"0-1\": \"0-1\" is not a pair \"a:b\"");
    EXPECT_HAS(ultramem_config_error({{"mem_insert_way", R"("0:4")"}}),
               "mem_insert_way pair 0:4 needs a <= b < num_hidden_layers (4)");
    EXPECT_HAS(ultramem_config_error({{"mem_insert_way", R"("0:2/1:3")"}}), "mem_insert_way pairs 0:2 and 1:3 overlap");
}

// Without mem_insert_way the mem_* fields would be ignored: refused.
TEST(Memory3UltraMem, FieldsWithoutInsertWay) {
    EXPECT_HAS(ultramem_config_error({{"mem_insert_way", ""}}), "mem_knum is set but mem_insert_way is not");
}

// Only UltraMemV2's semantics: a V1 config (no V2 fields) or V2 settings the official code
// cannot run are refused, naming the field.
TEST(Memory3UltraMem, V1FieldsAreRefused) {
    EXPECT_HAS(ultramem_config_error({{"mem_share_ratio", ""}}),
               "mem_share_ratio is missing: a memory3 model's memory layers are UltraMemV2's");
    EXPECT_HAS(ultramem_config_error({{"mem_q_for_each_tucker_rank", ""}}), "mem_q_for_each_tucker_rank is missing");
    EXPECT_HAS(ultramem_config_error({{"mem_value_expand_time", "4"}, {"mem_key_expand_time", "1"}}),
               "mem_value_expand_time = 4 must be 1");
    EXPECT_HAS(ultramem_config_error({{"mem_q_for_each_tucker_rank", "false"}}), "mem_q_for_each_tucker_rank is false");
    EXPECT_HAS(ultramem_config_error({{"mem_knn", "9"}}), "mem_knn = 9 must be in 1..8");
}
