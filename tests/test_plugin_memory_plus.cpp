// The memory_plus plugin (Meta Memory+ on lingua checkpoints): every bad config.json or checkpoint
// must fail at load time with an error that names the field or tensor and what was expected, and
// the config switches that change the forward pass must really be read. The logits themselves are
// checked against the torch reference by test_memory_models.cpp (tests/data/models/memory_plus*).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "mnemo/error.hpp"
#include "mnemo/io/safetensors.hpp"
#include "mnemo/session/session.hpp"
#include "model_test_util.hpp"
#include "npy.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using namespace mnemo::test;

namespace {

// A scratch copy of a model folder that a test may corrupt; removed afterwards.
// The shared scratch copy, with this file's names for its config edits.
class ScratchModel : public ModelCopy {
public:
    using ModelCopy::ModelCopy;
    void set(const std::string& key, const std::string& value) const { set_config(key, value); }
    void add(const std::string& key, const std::string& value) const { set_config(key, value); }
};

std::string open_error(const std::string& dir) {
    try {
        open_model(dir);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// The error of the default tiny model with one config field changed.
std::string error_with(const std::string& model, const std::string& key, const std::string& value) {
    ScratchModel m(model_dir(model));
    m.set(key, value);
    return open_error(m.dir());
}

// Copy a tensor of the checkpoint under a second name (a stray copy of a shared table).
void add_tensor_copy(const ScratchModel& m, const std::string& from, const std::string& to) {
    std::vector<std::vector<uint8_t>> storage;
    std::vector<TensorToWrite> out;
    {
        Checkpoint ck = Checkpoint::open(m.dir());
        for (const TensorView& t : ck.tensors()) {
            const auto* p = static_cast<const uint8_t*>(t.data);
            storage.emplace_back(p, p + t.nbytes);
            out.push_back(TensorToWrite{t.name, t.dtype, t.shape, nullptr});
            if (t.name == from) {
                storage.emplace_back(p, p + t.nbytes);
                out.push_back(TensorToWrite{to, t.dtype, t.shape, nullptr});
            }
        }
    }
    for (size_t i = 0; i < out.size(); ++i) out[i].data = storage[i].data();
    write_safetensors(m.dir() + "/model.safetensors", out);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const char* kModel = "memory_plus-tiny-f32";

}  // namespace

TEST(MemoryPlusPlugin, LoadsAndDescribesTheMemory) {
    auto s = open_model(model_dir(kModel));
    const std::string arch = s->summary().architecture;
    EXPECT_TRUE(contains(arch, "memory at layers 0 2")) << arch;
    EXPECT_TRUE(contains(arch, "16² shared values x 32")) << arch;
    EXPECT_TRUE(contains(arch, "RoPE interleaved")) << arch;
}

TEST(MemoryPlusPlugin, MemLayersMustBeDistinctLayersOfTheModel) {
    std::string e = error_with(kModel, "mem_layers", "[0, 3]");
    EXPECT_TRUE(contains(e, "mem_layers holds layer 3, but the model has layers 0..2")) << e;
    e = error_with(kModel, "mem_layers", "[-1]");
    EXPECT_TRUE(contains(e, "mem_layers holds layer -1")) << e;
    e = error_with(kModel, "mem_layers", "[2, 0, 2]");
    EXPECT_TRUE(contains(e, "mem_layers lists layer 2 twice")) << e;
    // lingua writes "4,12,20"; config.json wants a list.
    e = error_with(kModel, "mem_layers", "\"0,2\"");
    EXPECT_TRUE(contains(e, "mem_layers")) << e;
    EXPECT_TRUE(contains(e, "non-empty list of integers")) << e;
    e = error_with(kModel, "mem_layers", "[]");
    EXPECT_TRUE(contains(e, "non-empty list of integers")) << e;
    e = error_with(kModel, "mem_layers", "[0, 1.5]");
    EXPECT_TRUE(contains(e, "mem_layers.1")) << e;
}

TEST(MemoryPlusPlugin, MissingMemoryFieldIsNamed) {
    ScratchModel m(model_dir(kModel));
    std::string cfg = m.read("config.json");
    const size_t at = cfg.find("  \"mem_knn\": 4,\n");
    ASSERT_NE(at, std::string::npos);
    cfg.erase(at, std::string("  \"mem_knn\": 4,\n").size());
    m.write("config.json", cfg);
    const std::string e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "'mem_knn' is missing")) << e;
}

TEST(MemoryPlusPlugin, HeadsBelowTwoAreRefused) {
    const std::string e = error_with(kModel, "mem_heads", "1");
    EXPECT_TRUE(contains(e, "mem_heads must be >= 2")) << e;
}

TEST(MemoryPlusPlugin, KnnMustNotExceedTheSubKeys) {
    std::string e = error_with(kModel, "mem_knn", "17");
    EXPECT_TRUE(contains(e, "mem_knn must be in 1..mem_n_keys (16")) << e;
    EXPECT_TRUE(contains(e, "got 17")) << e;
    e = error_with(kModel, "mem_knn", "0");
    EXPECT_TRUE(contains(e, "mem_knn must be in 1..mem_n_keys")) << e;
}

TEST(MemoryPlusPlugin, KeyDimensionMustSplitInHalves) {
    const std::string e = error_with(kModel, "mem_k_dim", "15");
    EXPECT_TRUE(contains(e, "mem_k_dim must be even")) << e;
}

TEST(MemoryPlusPlugin, NKeysBeyondInt32IndicesAreRefused) {
    const std::string e = error_with(kModel, "mem_n_keys", "50000");
    EXPECT_TRUE(contains(e, "mem_n_keys must be in 1..46340")) << e;
}

TEST(MemoryPlusPlugin, NKeysMustMatchTheKeys) {
    const std::string e = error_with(kModel, "mem_n_keys", "8");
    EXPECT_TRUE(contains(e, "'layers.0.feed_forward.keys' has shape [128, 8], expected [64, 8]")) << e;
}

TEST(MemoryPlusPlugin, ValueDimensionMismatchNamesTheTable) {
    std::string e = error_with(kModel, "mem_v_dim", "24");
    EXPECT_TRUE(contains(e, "'layers.0.feed_forward.values.weight' has shape [256, 32], expected [256, 24]")) << e;
    e = error_with(kModel, "mem_v_dim", "0");
    EXPECT_TRUE(contains(e, "mem_v_dim must be -1 (the hidden size) or > 0, got 0")) << e;
}

TEST(MemoryPlusPlugin, PeerNeedsTheHiddenSizeAsValueDimension) {
    const std::string e = error_with("memory_plus_peer-tiny-f32", "mem_v_dim", "24");
    EXPECT_TRUE(contains(e, "peer_variant needs mem_v_dim = -1")) << e;
}

TEST(MemoryPlusPlugin, PeerTablesAreRequired) {
    // The product-key model has no values_u / values_v.
    const std::string e = error_with(kModel, "peer_variant", "true");
    EXPECT_TRUE(contains(e, "'layers.0.feed_forward.values_u.weight' is missing")) << e;
}

TEST(MemoryPlusPlugin, SharedTableLivesUnderTheFirstMemoryLayerOnly) {
    ScratchModel m(model_dir(kModel));
    add_tensor_copy(m, "layers.0.feed_forward.values.weight", "layers.2.feed_forward.values.weight");
    const std::string e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "'layers.2.feed_forward.values.weight' is present, but mem_share_values is true")) << e;
    EXPECT_TRUE(contains(e, "read from layer 0")) << e;
}

TEST(MemoryPlusPlugin, PerLayerTablesMustAllBePresent) {
    const std::string e = error_with(kModel, "mem_share_values", "false");
    EXPECT_TRUE(contains(e, "'layers.2.feed_forward.values.weight' is missing")) << e;
}

TEST(MemoryPlusPlugin, OptionalPartsAreDeclaredWhenConfigured) {
    std::string e = error_with(kModel, "mem_gated", "true");
    EXPECT_TRUE(contains(e, "'layers.0.feed_forward.gating.weight' is missing")) << e;
    // The gated model has value_proj but no swilu_projection.
    e = error_with("memory_plus_gated-tiny-f32", "swilu_projection", "true");
    EXPECT_TRUE(contains(e, "'layers.0.feed_forward.swilu_projection.weight' is missing")) << e;
    e = error_with(kModel, "mem_query_bias", "\"yes\"");
    EXPECT_TRUE(contains(e, "mem_query_bias")) << e;
    EXPECT_TRUE(contains(e, "expected true or false")) << e;
    ScratchModel m(model_dir(kModel));
    m.add("mem_query_batchnorm", "true");
    e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "mem_query_batchnorm is not supported")) << e;
}

// Switches that only change arithmetic (no tensor appears or disappears) must still be read: with
// them flipped the logits leave the golden.
TEST(MemoryPlusPlugin, RopeLayoutAndQueryBiasChangeTheLogits) {
    const std::string dir = model_dir(kModel);
    const std::vector<int32_t> ids = read_ids(dir + "/golden_ids.txt");
    const std::vector<float> golden = test::load_npy(dir + "/golden_logits.npy").as_f32();
    {
        ScratchModel m(dir);
        m.set("rope_interleaved", "false");
        EXPECT_GT(max_rel_error(open_model(m.dir())->append(0, ids, true), golden), 1e-3);
    }
    {
        ScratchModel m(dir);
        m.set("mem_query_bias", "false");
        EXPECT_GT(max_rel_error(open_model(m.dir())->append(0, ids, true), golden), 1e-3);
    }
    EXPECT_LT(max_rel_error(open_model(dir)->append(0, ids, true), golden), 1e-4);
}
