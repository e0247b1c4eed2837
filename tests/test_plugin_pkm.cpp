// The pkm plugin (plugins/pkm): every bad config.json or checkpoint gives a load-time error that
// names the field or tensor and what was expected, and a second sequence decodes independently
// of the first. Logits against the torch reference are in test_memory_models.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "mnemo/ops/dtype.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/safetensors.hpp"
#include "model_test_util.hpp"
#include "npy.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using namespace mnemo::test;

namespace {

const char* kModel = "pkm-tiny-f32";  // D 32, 3 layers, memories "0:after" and "1:in", query BN

// A scratch copy of the tiny pkm folder that a test may corrupt; removed afterwards.
// A scratch copy of the tiny PKM model (tests/model_test_util.hpp ModelCopy).
class Scratch : public ModelCopy {
public:
    Scratch() : ModelCopy(model_dir(kModel)) {}
    void set(const std::string& key, const std::string& value) const { set_config(key, value); }
    void edit_tensors(const std::function<bool(TensorToWrite&, std::vector<uint8_t>&)>& edit) const {
        rewrite_tensors(edit);
    }
};

std::string open_error(const std::string& dir, int32_t n_ctx = 64) {
    try {
        open_model(dir, n_ctx);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// The load error for a config edit; every message must also say which plugin refused.
std::string config_error(const std::string& key, const std::string& value) {
    Scratch m;
    m.set(key, value);
    const std::string e = open_error(m.dir());
    EXPECT_NE(e.find("pkm plugin"), std::string::npos) << e;
    return e;
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

}  // namespace

TEST(PkmPlugin, TheTinyModelLoads) { EXPECT_EQ(open_error(model_dir(kModel)), ""); }

TEST(PkmPlugin, KnnLargerThanTheSubKeys) {
    const std::string e = config_error("mem_knn", "9");
    EXPECT_HAS(e, "mem_knn (9) must be in 1..mem_n_keys (8)");
}

TEST(PkmPlugin, OddKeyDimension) {
    const std::string e = config_error("mem_k_dim", "15");
    EXPECT_HAS(e, "mem_k_dim must be even");
}

TEST(PkmPlugin, MemoryHeadsDisagreeWithTheTensors) {
    // 3 heads need a [48, 32] query projection; the checkpoint holds [32, 32] (2 heads of 16).
    const std::string e = config_error("mem_heads", "3");
    EXPECT_HAS(e, "'memories.0_after.query_proj.query_mlps.0.weight' has shape [32, 32], expected [48, 32]");
}

TEST(PkmPlugin, NumberOfKeysDisagreesWithTheTensors) {
    const std::string e = config_error("mem_n_keys", "7");
    EXPECT_HAS(e, "'memories.0_after.keys' has shape [2, 2, 8, 8], expected [2, 2, 7, 8]");
}

TEST(PkmPlugin, MemoryLayerOutOfRange) {
    const std::string e = config_error("mem_positions", "[\"0:after\", \"3:in\"]");
    EXPECT_HAS(e, "mem_positions[1] = '3:in': layer 3 is out of range (n_layers = 3, layers 0..2)");
}

TEST(PkmPlugin, UnknownMemoryPosition) {
    EXPECT_HAS(config_error("mem_positions", "[\"1:inside\"]"), "position 'inside' must be 'in'");
    EXPECT_HAS(config_error("mem_positions", "[\"one:in\"]"), "'one' is not a layer number");
    EXPECT_HAS(config_error("mem_positions", "[\"1\"]"), "expected \"<layer>:in\" or \"<layer>:after\"");
}

TEST(PkmPlugin, MemoryPositionListedTwice) {
    EXPECT_HAS(config_error("mem_positions", "[\"1:in\", \"0:after\", \"1:in\"]"), "mem_positions lists '1_in' twice");
}

TEST(PkmPlugin, MemoryPositionsMustBeAnArray) {
    EXPECT_HAS(config_error("mem_positions", "\"1:in\""), "'mem_positions' must be a non-empty array of strings");
    EXPECT_HAS(config_error("mem_positions", "[]"), "'mem_positions' must be a non-empty array of strings");
}

TEST(PkmPlugin, ValueDimensionOtherThanTheModelDimension) {
    EXPECT_HAS(config_error("mem_v_dim", "16"), "mem_v_dim (16) must equal emb_dim (32) or be -1");
}

TEST(PkmPlugin, ReluFfnIsRefused) {
    EXPECT_HAS(config_error("gelu_activation", "false"), "gelu_activation = false (a ReLU FFN) is not supported");
}

TEST(PkmPlugin, HeadsMustDivideTheModelDimension) {
    EXPECT_HAS(config_error("n_heads", "5"), "emb_dim (32) must be a multiple of n_heads (5)");
}

TEST(PkmPlugin, LanguageEmbeddingNeedsALanguage) {
    EXPECT_HAS(config_error("n_langs", "2"), "field 'lang_id' (the language of the text, 0..1) is missing");
}

TEST(PkmPlugin, ContextLongerThanTheLearnedPositions) {
    const std::string e = open_error(model_dir(kModel), 65);
    EXPECT_HAS(e, "the context holds 65 positions but the model learned only 64 (max_position_embeddings)");
}

TEST(PkmPlugin, MovingAnInMemoryAfterTheBlockNeedsThatBlocksFfn) {
    // "1:in" replaces layer 1's FFN, so the checkpoint has no ffns.1.*; "1:after" keeps the FFN.
    const std::string e = config_error("mem_positions", "[\"0:after\", \"1:after\"]");
    EXPECT_HAS(e, "'ffns.1.lin1.weight' is missing");
}

TEST(PkmPlugin, UntiedModelNeedsItsPredictionWeight) {
    EXPECT_HAS(config_error("share_inout_emb", "false"), "'pred_layer.proj.weight' is missing");
}

TEST(PkmPlugin, MissingBatchNormStatistics) {
    Scratch m;
    m.edit_tensors([](TensorToWrite& t, std::vector<uint8_t>&) {
        return t.name != "memories.1_in.query_proj.query_mlps.1.running_var";
    });
    EXPECT_HAS(open_error(m.dir()), "'memories.1_in.query_proj.query_mlps.1.running_var' is missing");
    // Without batch norm the same checkpoint loads: the statistics are not read then.
    m.set("mem_query_batchnorm", "false");
    EXPECT_EQ(open_error(m.dir()), "");
}

TEST(PkmPlugin, NegativeRunningVariance) {
    Scratch m;
    m.edit_tensors([](TensorToWrite& t, std::vector<uint8_t>& bytes) {
        if (t.name == "memories.0_after.query_proj.query_mlps.1.running_var") {
            const float bad = -1.0f;
            std::memcpy(bytes.data() + 3 * sizeof(float), &bad, sizeof bad);
        }
        return true;
    });
    const std::string e = open_error(m.dir());
    EXPECT_HAS(e, "'memories.0_after.query_proj.query_mlps.1.running_var' [3]");
    EXPECT_HAS(e, "running_var + mem_bn_eps must be a positive number");
}

TEST(PkmPlugin, BiasesMustBeF32) {
    // The ADD op adds f32 tensors: a bf16 bias is refused when the model loads, naming it.
    Scratch m;
    m.edit_tensors([](TensorToWrite& t, std::vector<uint8_t>& bytes) {
        if (t.name == "attentions.2.v_lin.bias") {
            std::vector<uint8_t> half(bytes.size() / 2);
            for (size_t i = 0; i < bytes.size() / 4; ++i) {
                float f;
                std::memcpy(&f, bytes.data() + 4 * i, 4);
                const uint16_t b = f32_to_bf16(f);
                std::memcpy(half.data() + 2 * i, &b, 2);
            }
            bytes = half;
            t.dtype = DType::BF16;
        }
        return true;
    });
    EXPECT_HAS(open_error(m.dir()), "tensor 'attentions.2.v_lin.bias' is bf16, expected f32");
}

TEST(PkmPlugin, SecondSequenceDecodesIndependently) {
    // Sequence 1 sees the golden prompt after sequence 0 read another one: its logits must still
    // be the golden ones (each sequence has its own cache rows; memories keep no state).
    const std::string dir = model_dir(kModel);
    const std::vector<int32_t> ids = read_ids(dir + "/golden_ids.txt");
    const test::NpyArray golden = test::load_npy(dir + "/golden_logits.npy");
    auto s = open_model(dir, 64, /*n_seq=*/2);
    s->append(0, {5, 9, 2, 77, 3}, false);
    const std::vector<float> logits = s->append(1, ids, true);
    EXPECT_LT(max_rel_error(logits, golden.as_f32()), 1e-4);
}
