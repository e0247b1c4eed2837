// The midus_hml plugin beyond its goldens (those are in test_memory_models.cpp): a zero latent
// value bank makes every memory block the identity (paper appendix D.2), so the model equals its
// Llama backbone; batched sequences decode as each alone; and every bad config or checkpoint is
// refused at load time with a message naming the field or tensor.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "mnemo/error.hpp"
#include "mnemo/io/safetensors.hpp"
#include "mnemo/session/session.hpp"
#include "model_test_util.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using namespace mnemo::test;

namespace {

const char* const kModel = "midus_hml-tiny-f32";

// A scratch copy of the test model that a test may corrupt; removed afterwards.
// A scratch copy of the tiny MIDUS model (tests/model_test_util.hpp ModelCopy).
class Scratch : public ModelCopy {
public:
    Scratch() : ModelCopy(model_dir(kModel)) {}
    void rewrite(const std::function<bool(TensorToWrite&, std::vector<uint8_t>&)>& edit) const { rewrite_tensors(edit); }
};

std::string open_error(const std::string& dir) {
    try {
        open_model(dir);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<float> all_logits(const std::string& dir) {
    return open_model(dir)->append(0, read_ids(model_dir(kModel) + "/golden_ids.txt"), true);
}

// ------------------------------------------------------------------------------ behaviour

// D.2: with V̄ = 0 every memory block is M(x) = x, so the up-scaled model is its Llama backbone
// (the extra memory tensors are simply not declared by the llama plugin).
TEST(MidusPlugin, ZeroValueBankGivesTheBackboneLogits) {
    Scratch midus;
    midus.rewrite([](TensorToWrite& t, std::vector<uint8_t>& bytes) {
        if (t.name.size() > 11 && t.name.compare(t.name.size() - 11, 11, ".hml.values") == 0)
            std::fill(bytes.begin(), bytes.end(), uint8_t{0});
        return true;
    });
    Scratch llama;
    llama.set_config("model_type", "\"llama\"");

    const std::vector<float> zero_bank = all_logits(midus.dir());
    const std::vector<float> backbone = all_logits(llama.dir());
    const std::vector<float> with_memory = all_logits(model_dir(kModel));
    ASSERT_EQ(zero_bank.size(), backbone.size());
    ASSERT_TRUE(all_finite(zero_bank));
    EXPECT_LT(max_rel_error(zero_bank, backbone), 1e-6);
    // ...and the trained-looking (random) bank really changes the output: the test above is not
    // passing because memory blocks are skipped.
    EXPECT_GT(max_rel_error(with_memory, backbone), 1e-2);
}

// Each sequence has its own KV cache rows in every memory block, and the lookups are per token:
// two sequences in one batch give what each gives alone.
TEST(MidusPlugin, BatchedSequencesDecodeAsEachAlone) {
    const std::vector<int32_t> ids = read_ids(model_dir(kModel) + "/golden_ids.txt");
    const std::vector<int32_t> a(ids.begin(), ids.begin() + 6), b(ids.begin() + 6, ids.end());
    auto alone_a = open_model(model_dir(kModel))->append(0, a, true);
    auto alone_b = open_model(model_dir(kModel))->append(0, b, true);
    auto s = open_model(model_dir(kModel), 64, 2);
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < a.size(); ++i) {
        batch.push_back({a[i], static_cast<int32_t>(i), 0, true});
        batch.push_back({b[i], static_cast<int32_t>(i), 1, true});
    }
    const std::vector<float> both = s->decode(batch);
    const size_t v = static_cast<size_t>(s->vocab_size());
    std::vector<float> got_a, got_b;  // rows alternate between the two sequences
    for (size_t r = 0; r < batch.size(); ++r) {
        std::vector<float>& dst = r % 2 == 0 ? got_a : got_b;
        dst.insert(dst.end(), both.begin() + static_cast<ptrdiff_t>(r * v), both.begin() + static_cast<ptrdiff_t>((r + 1) * v));
    }
    EXPECT_LT(max_rel_error(got_a, alone_a), 1e-5);
    EXPECT_LT(max_rel_error(got_b, alone_b), 1e-5);
}

TEST(MidusPlugin, SummaryNamesTheMemoryBlocks) {
    auto s = open_model(model_dir(kModel));
    const ModelSummary& m = s->summary();
    EXPECT_EQ(m.model_type, "midus_hml");
    EXPECT_EQ(m.n_layers, 5);  // 3 base blocks + 2 memory blocks
    EXPECT_TRUE(contains(m.architecture, "2 memory blocks before blocks {0,2}")) << m.architecture;
    EXPECT_TRUE(contains(m.architecture, "n 8 (64 keys/head), top-3, r 6")) << m.architecture;
}

// ------------------------------------------------------------------------------ bad configs

TEST(MidusBadConfig, AnchorsNotIncreasing) {
    Scratch m;
    m.set_config("memory_anchors", "[2, 0]");
    const std::string e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "memory_anchors must be strictly increasing")) << e;
    m.set_config("memory_anchors", "[1, 1]");
    EXPECT_TRUE(contains(open_error(m.dir()), "strictly increasing")) << open_error(m.dir());
}

TEST(MidusBadConfig, AnchorOutOfRange) {
    Scratch m;
    m.set_config("memory_anchors", "[0, 3]");
    std::string e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "memory_anchors[1] = 3 is not a base block index 0..2")) << e;
    m.set_config("memory_anchors", "[-1, 2]");
    e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "memory_anchors[0] = -1")) << e;
}

TEST(MidusBadConfig, AnchorsMustBeAListOfIntegers) {
    Scratch m;
    m.set_config("memory_anchors", "2");
    std::string e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "'memory_anchors' must be a non-empty list of integers")) << e;
    m.set_config("memory_anchors", "[]");
    e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "'memory_anchors' must be a non-empty list of integers")) << e;
    m.set_config("memory_anchors", "[0, 1.5]");
    e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "memory_anchors.1") && contains(e, "expected an integer")) << e;
    m.set_config("memory_anchors", "");
    e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "'memory_anchors' is missing")) << e;
}

TEST(MidusBadConfig, TopkAboveTheSubKeyCount) {
    Scratch m;
    m.set_config("memory_topk", "9");
    const std::string e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "memory_topk (9) must be in 1..memory_n_keys (8)")) << e;
    m.set_config("memory_topk", "0");
    EXPECT_TRUE(contains(open_error(m.dir()), "memory_topk (0)")) << open_error(m.dir());
}

TEST(MidusBadConfig, NonPositiveOrHugeKeyCount) {
    Scratch m;
    m.set_config("memory_n_keys", "0");
    EXPECT_TRUE(contains(open_error(m.dir()), "memory_n_keys must be in 1..46340")) << open_error(m.dir());
    m.set_config("memory_n_keys", "50000");
    EXPECT_TRUE(contains(open_error(m.dir()), "memory_n_keys must be in 1..46340")) << open_error(m.dir());
    m.set_config("memory_n_keys", "");
    EXPECT_TRUE(contains(open_error(m.dir()), "'memory_n_keys' is missing")) << open_error(m.dir());
}

TEST(MidusBadConfig, OddHeadDim) {
    Scratch m;
    m.set_config("head_dim", "7");
    const std::string e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "head_dim must be even")) << e;
}

TEST(MidusBadConfig, HeadsMustTileTheHiddenSize) {
    Scratch m;
    m.set_config("head_dim", "6");  // 4 heads x 6 = 24 != hidden 32
    const std::string e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "num_attention_heads (4) x head_dim (6) must equal hidden_size (32)")) << e;
}

// r is a config field (default d_h); a bank or projection of another width is refused by name.
TEST(MidusBadConfig, LatentDimMismatch) {
    Scratch m;
    m.set_config("memory_latent_dim", "5");
    std::string e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "'model.memory_blocks.0.hml.values' has shape")) << e;
    m.set_config("memory_latent_dim", "");  // default r = head_dim = 8, the checkpoint has r = 6
    e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "'model.memory_blocks.0.hml.values' has shape")) << e;
    m.set_config("memory_latent_dim", "0");
    e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "memory_latent_dim must be >= 1")) << e;
}

TEST(MidusBadCheckpoint, ProjectionOfTheWrongLatentWidth) {
    Scratch m;
    m.rewrite([](TensorToWrite& t, std::vector<uint8_t>& bytes) {
        if (t.name == "model.memory_blocks.1.hml.value_proj") {  // [4, 6, 8] -> [4, 8, 6]
            std::swap(t.shape[1], t.shape[2]);
        }
        (void)bytes;
        return true;
    });
    const std::string e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "'model.memory_blocks.1.hml.value_proj' has shape")) << e;
}

TEST(MidusBadCheckpoint, MissingMemoryTensor) {
    Scratch m;
    m.rewrite([](TensorToWrite& t, std::vector<uint8_t>&) { return t.name != "model.memory_blocks.1.hml.keys"; });
    const std::string e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "'model.memory_blocks.1.hml.keys' is missing")) << e;
}

// Memory blocks have no output projection (eq. 3): a checkpoint is not asked for one, and an
// extra anchor asks for the tensors of a memory block that is not there.
TEST(MidusBadCheckpoint, MoreAnchorsThanMemoryBlocks) {
    Scratch m;
    m.set_config("memory_anchors", "[0, 1, 2]");
    const std::string e = open_error(m.dir());
    EXPECT_TRUE(contains(e, "'model.memory_blocks.2.") && contains(e, "is missing")) << e;
    EXPECT_FALSE(contains(e, "o_proj")) << e;
}

}  // namespace
