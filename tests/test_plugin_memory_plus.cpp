// The memory_plus plugin (Meta Memory+ on lingua checkpoints): every bad config.json or checkpoint
// must fail at load time with an error that names the field or tensor and what was expected, and
// the config switches that change the forward pass must really be read. The logits themselves are
// checked against the torch reference by test_memory_models.cpp (tests/data/models/memory_plus*).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures/golden_logits.hpp"
#include "fixtures/load_errors.hpp"
#include "model_test_util.hpp"

using namespace mnemo;
using namespace mnemo::test;

namespace {

const char* kModel = "memory_plus-tiny-f32";

}  // namespace

TEST(MemoryPlusPlugin, LoadsAndDescribesTheMemory) {
    auto s = open_model(model_dir(kModel));
    const std::string arch = s->summary().architecture;
    EXPECT_MENTIONS(arch, "memory at layers 0 2");
    EXPECT_MENTIONS(arch, "16² shared values x 32");
    EXPECT_MENTIONS(arch, "RoPE interleaved");
}

// Config edits refused at load time with a message naming the field or tensor and what was
// expected: MemoryPlusPlugin/MemoryPlusBadConfig.IsRefused/<case>.
class MemoryPlusBadConfig : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(MemoryPlusBadConfig, IsRefused) { expect_refused(GetParam()); }

const RefusalCase kBadConfigs[] = {
    {"MemLayersMustBeDistinctLayersOfTheModel",
     {{kModel, "mem_layers", "[0, 3]", {"mem_layers holds layer 3, but the model has layers 0..2"}},
      {kModel, "mem_layers", "[-1]", {"mem_layers holds layer -1"}},
      {kModel, "mem_layers", "[2, 0, 2]", {"mem_layers lists layer 2 twice"}},
      // lingua writes "4,12,20"; config.json wants a list.
      {kModel, "mem_layers", "\"0,2\"", {"mem_layers", "non-empty list of integers"}},
      {kModel, "mem_layers", "[]", {"non-empty list of integers"}},
      {kModel, "mem_layers", "[0, 1.5]", {"mem_layers.1"}}}},
    {"HeadsBelowTwoAreRefused", {{kModel, "mem_heads", "1", {"mem_heads must be >= 2"}}}},
    {"KnnMustNotExceedTheSubKeys",
     {{kModel, "mem_knn", "17", {"mem_knn must be in 1..mem_n_keys (16", "got 17"}},
      {kModel, "mem_knn", "0", {"mem_knn must be in 1..mem_n_keys"}}}},
    {"KeyDimensionMustSplitInHalves", {{kModel, "mem_k_dim", "15", {"mem_k_dim must be even"}}}},
    {"NKeysBeyondInt32IndicesAreRefused", {{kModel, "mem_n_keys", "50000", {"mem_n_keys must be in 1..46340"}}}},
    {"NKeysMustMatchTheKeys",
     {{kModel, "mem_n_keys", "8", {"'layers.0.feed_forward.keys' has shape [128, 8], expected [64, 8]"}}}},
    {"ValueDimensionMismatchNamesTheTable",
     {{kModel, "mem_v_dim", "24", {"'layers.0.feed_forward.values.weight' has shape [256, 32], expected [256, 24]"}},
      {kModel, "mem_v_dim", "0", {"mem_v_dim must be -1 (the hidden size) or > 0, got 0"}}}},
    {"PeerNeedsTheHiddenSizeAsValueDimension",
     {{"memory_plus_peer-tiny-f32", "mem_v_dim", "24", {"peer_variant needs mem_v_dim = -1"}}}},
    // The product-key model has no values_u / values_v.
    {"PeerTablesAreRequired",
     {{kModel, "peer_variant", "true", {"'layers.0.feed_forward.values_u.weight' is missing"}}}},
    {"PerLayerTablesMustAllBePresent",
     {{kModel, "mem_share_values", "false", {"'layers.2.feed_forward.values.weight' is missing"}}}},
    {"OptionalPartsAreDeclaredWhenConfigured",
     {{kModel, "mem_gated", "true", {"'layers.0.feed_forward.gating.weight' is missing"}},
      // The gated model has value_proj but no swilu_projection.
      {"memory_plus_gated-tiny-f32", "swilu_projection", "true",
       {"'layers.0.feed_forward.swilu_projection.weight' is missing"}},
      {kModel, "mem_query_bias", "\"yes\"", {"mem_query_bias", "expected true or false"}},
      {kModel, "mem_query_batchnorm", "true", {"mem_query_batchnorm is not supported"}}}},
};

INSTANTIATE_TEST_SUITE_P(MemoryPlusPlugin, MemoryPlusBadConfig, ::testing::ValuesIn(kBadConfigs), refusal_case_name);

TEST(MemoryPlusPlugin, MissingMemoryFieldIsNamed) {
    ModelCopy m(model_dir(kModel));
    std::string cfg = m.read("config.json");
    const size_t at = cfg.find("  \"mem_knn\": 4,\n");
    ASSERT_NE(at, std::string::npos);
    cfg.erase(at, std::string("  \"mem_knn\": 4,\n").size());
    m.write("config.json", cfg);
    const std::string e = open_error(m.dir());
    EXPECT_MENTIONS(e, "'mem_knn' is missing");
}

TEST(MemoryPlusPlugin, SharedTableLivesUnderTheFirstMemoryLayerOnly) {
    ModelCopy m(model_dir(kModel));
    m.copy_tensor("layers.0.feed_forward.values.weight", "layers.2.feed_forward.values.weight");
    const std::string e = open_error(m.dir());
    EXPECT_MENTIONS(e, "'layers.2.feed_forward.values.weight' is present, but mem_share_values is true");
    EXPECT_MENTIONS(e, "read from layer 0");
}

// Switches that only change arithmetic (no tensor appears or disappears) must still be read: with
// them flipped the logits leave the golden.
TEST(MemoryPlusPlugin, RopeLayoutAndQueryBiasChangeTheLogits) {
    const std::string dir = model_dir(kModel);
    const Golden golden = load_golden(dir);
    for (const char* flipped : {"rope_interleaved", "mem_query_bias"}) {
        ModelCopy m(dir);
        m.set_config(flipped, "false");
        EXPECT_GT(max_rel_error(prompt_logits(m.dir(), golden.ids), golden.logits.as_f32()), 1e-3) << flipped;
    }
    EXPECT_LT(max_rel_error(prompt_logits(dir, golden.ids), golden.logits.as_f32()), 1e-4);
}
