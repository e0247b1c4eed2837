// The pkm plugin (plugins/pkm): every bad config.json or checkpoint gives a load-time error that
// names the field or tensor and what was expected, and a second sequence decodes independently
// of the first. Logits against the torch reference are in test_memory_models.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fixtures/golden_logits.hpp"
#include "fixtures/load_errors.hpp"
#include "mnemo/io/safetensors.hpp"
#include "mnemo/ops/dtype.hpp"
#include "model_test_util.hpp"

using namespace mnemo;
using namespace mnemo::test;

namespace {

const char* kModel = "pkm-tiny-f32";  // D 32, 3 layers, memories "0:after" and "1:in", query BN

// A config edit of the tiny model the plugin refuses; every message must also say which plugin
// refused.
Refusal refused(const std::string& key, const std::string& value, const std::string& mention) {
    return Refusal{kModel, key, value, {"pkm plugin", mention}};
}

}  // namespace

TEST(PkmPlugin, TheTinyModelLoads) { EXPECT_EQ(open_error(model_dir(kModel)), ""); }

// Config edits refused at load time by name: PkmPlugin/PkmBadConfig.IsRefused/<case>.
class PkmBadConfig : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(PkmBadConfig, IsRefused) { expect_refused(GetParam()); }

const RefusalCase kBadConfigs[] = {
    {"KnnLargerThanTheSubKeys", {refused("mem_knn", "9", "mem_knn (9) must be in 1..mem_n_keys (8)")}},
    {"OddKeyDimension", {refused("mem_k_dim", "15", "mem_k_dim must be even")}},
    // 3 heads need a [48, 32] query projection; the checkpoint holds [32, 32] (2 heads of 16).
    {"MemoryHeadsDisagreeWithTheTensors",
     {refused("mem_heads", "3",
              "'memories.0_after.query_proj.query_mlps.0.weight' has shape [32, 32], expected [48, 32]")}},
    {"NumberOfKeysDisagreesWithTheTensors",
     {refused("mem_n_keys", "7", "'memories.0_after.keys' has shape [2, 2, 8, 8], expected [2, 2, 7, 8]")}},
    {"MemoryLayerOutOfRange",
     {refused("mem_positions", "[\"0:after\", \"3:in\"]",
              "mem_positions[1] = '3:in': layer 3 is out of range (n_layers = 3, layers 0..2)")}},
    {"UnknownMemoryPosition",
     {refused("mem_positions", "[\"1:inside\"]", "position 'inside' must be 'in'"),
      refused("mem_positions", "[\"one:in\"]", "'one' is not a layer number"),
      refused("mem_positions", "[\"1\"]", "expected \"<layer>:in\" or \"<layer>:after\"")}},
    {"MemoryPositionListedTwice",
     {refused("mem_positions", "[\"1:in\", \"0:after\", \"1:in\"]", "mem_positions lists '1_in' twice")}},
    {"MemoryPositionsMustBeAnArray",
     {refused("mem_positions", "\"1:in\"", "'mem_positions' must be a non-empty array of strings"),
      refused("mem_positions", "[]", "'mem_positions' must be a non-empty array of strings")}},
    {"ValueDimensionOtherThanTheModelDimension",
     {refused("mem_v_dim", "16", "mem_v_dim (16) must equal emb_dim (32) or be -1")}},
    {"ReluFfnIsRefused",
     {refused("gelu_activation", "false", "gelu_activation = false (a ReLU FFN) is not supported")}},
    {"HeadsMustDivideTheModelDimension", {refused("n_heads", "5", "emb_dim (32) must be a multiple of n_heads (5)")}},
    {"LanguageEmbeddingNeedsALanguage",
     {refused("n_langs", "2", "field 'lang_id' (the language of the text, 0..1) is missing")}},
    // "1:in" replaces layer 1's FFN, so the checkpoint has no ffns.1.*; "1:after" keeps the FFN.
    {"MovingAnInMemoryAfterTheBlockNeedsThatBlocksFfn",
     {refused("mem_positions", "[\"0:after\", \"1:after\"]", "'ffns.1.lin1.weight' is missing")}},
    {"UntiedModelNeedsItsPredictionWeight",
     {refused("share_inout_emb", "false", "'pred_layer.proj.weight' is missing")}},
};

INSTANTIATE_TEST_SUITE_P(PkmPlugin, PkmBadConfig, ::testing::ValuesIn(kBadConfigs), refusal_case_name);

TEST(PkmPlugin, ContextLongerThanTheLearnedPositions) {
    const std::string e = open_error(model_dir(kModel), 65);
    EXPECT_MENTIONS(e, "the context holds 65 positions but the model learned only 64 (max_position_embeddings)");
}

TEST(PkmPlugin, MissingBatchNormStatistics) {
    ModelCopy m(model_dir(kModel));
    m.drop_tensor("memories.1_in.query_proj.query_mlps.1.running_var");
    EXPECT_MENTIONS(open_error(m.dir()), "'memories.1_in.query_proj.query_mlps.1.running_var' is missing");
    // Without batch norm the same checkpoint loads: the statistics are not read then.
    m.set_config("mem_query_batchnorm", "false");
    EXPECT_EQ(open_error(m.dir()), "");
}

TEST(PkmPlugin, NegativeRunningVariance) {
    const auto negative = [](TensorToWrite&, std::vector<uint8_t>& bytes) {
        const float bad = -1.0f;
        std::memcpy(bytes.data() + 3 * sizeof(float), &bad, sizeof bad);
    };
    const std::string e =
        error_with_tensor_edit(kModel, "memories.0_after.query_proj.query_mlps.1.running_var", negative);
    EXPECT_MENTIONS(e, "'memories.0_after.query_proj.query_mlps.1.running_var' [3]");
    EXPECT_MENTIONS(e, "running_var + mem_bn_eps must be a positive number");
}

TEST(PkmPlugin, BiasesMustBeF32) {
    // The ADD op adds f32 tensors: a bf16 bias is refused when the model loads, naming it.
    const auto to_bf16 = [](TensorToWrite& t, std::vector<uint8_t>& bytes) {
        std::vector<uint8_t> half(bytes.size() / 2);
        for (size_t i = 0; i < bytes.size() / 4; ++i) {
            float f;
            std::memcpy(&f, bytes.data() + 4 * i, 4);
            const uint16_t b = f32_to_bf16(f);
            std::memcpy(half.data() + 2 * i, &b, 2);
        }
        bytes = half;
        t.dtype = DType::BF16;
    };
    EXPECT_MENTIONS(error_with_tensor_edit(kModel, "attentions.2.v_lin.bias", to_bf16),
                    "tensor 'attentions.2.v_lin.bias' is bf16, expected f32");
}

TEST(PkmPlugin, SecondSequenceDecodesIndependently) {
    // Sequence 1 sees the golden prompt after sequence 0 read another one: its logits must still
    // be the golden ones (each sequence has its own cache rows; memories keep no state).
    const std::string dir = model_dir(kModel);
    const Golden golden = load_golden(dir);
    auto s = open_model(dir, 64, /*n_seq=*/2);
    s->append(0, {5, 9, 2, 77, 3}, false);
    const std::vector<float> logits = s->append(1, golden.ids, true);
    EXPECT_LT(max_rel_error(logits, golden.logits.as_f32()), 1e-4);
}
