// `mnemo` on models that are broken in ways the loader cannot see: weights that are not finite
// (every command that generates or measures must stop with a clear error and exit 1, not print
// nothing and exit 0), a tokenizer without a vocabulary, and a context longer than the model was
// trained for (allowed, with a warning that says what it costs). Each runs a scratch copy of the
// default model, damaged as the test needs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "fixtures/model_copy.hpp"
#include "process_util.hpp"

using mnemo::testing::exited_with;
using mnemo::testing::run_mnemo;
using mnemo::testing::shell_quote;

namespace {

std::string default_model() { return std::string(MNEMO_SOURCE_DIR) + "/assets/default-model"; }

// A scratch file name of this test process.
std::string temp_file(const std::string& name) { return ::testing::TempDir() + "mnemo-faults-" + std::to_string(::getpid()) + "-" + name; }

// The default model with every embedding value NaN: every logit of every position is NaN.
class NanModel : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        copy_ = new mnemo::test::ModelCopy(default_model());
        copy_->edit_tensor("model.embed_tokens.weight", [](mnemo::TensorToWrite&, std::vector<uint8_t>& bytes) {
            const float nan = std::numeric_limits<float>::quiet_NaN();
            for (size_t i = 0; i + 4 <= bytes.size(); i += 4) std::memcpy(bytes.data() + i, &nan, 4);
        });
    }
    static void TearDownTestSuite() { delete copy_; }
    static std::string model() { return shell_quote(copy_->dir()); }

    static inline mnemo::test::ModelCopy* copy_ = nullptr;
};

const char* kNanMessage = "the model produced NaN/Inf logits at position ";
const char* kNotFinite = "its weights or activations are not finite";

TEST_F(NanModel, RunFailsNamingThePosition) {
    const auto r = run_mnemo("run -m " + model() + " -p 'Where was Tour Hujert born?' -n 8");
    EXPECT_TRUE(exited_with(r, 1, {kNanMessage, kNotFinite}));
}

TEST_F(NanModel, ChatFails) {
    const std::string input = temp_file("chat-input.txt");
    std::ofstream(input) << "hello\n";
    EXPECT_TRUE(exited_with(run_mnemo("chat -m " + model() + " -n 4", input), 1, {kNanMessage, kNotFinite}));
}

TEST_F(NanModel, AskFails) {
    EXPECT_TRUE(exited_with(run_mnemo("ask -m " + model() + " -q 'Where was Tour Hujert born?'"), 1, {kNanMessage}));
}

TEST_F(NanModel, EvalFailsAndWritesNoReport) {
    const std::string questions = temp_file("questions.jsonl");
    const std::string report = temp_file("report.json");
    std::ofstream(questions) << "{\"question\": \"Where was Tour Hujert born?\", \"answer\": \"Zeajusy\"}\n";
    std::remove(report.c_str());
    const auto r = run_mnemo("eval -m " + model() + " --questions " + shell_quote(questions) + " --report " + shell_quote(report));
    EXPECT_TRUE(exited_with(r, 1, {kNanMessage}));
    EXPECT_FALSE(std::ifstream(report).good()) << "a failed eval leaves no report";
}

TEST_F(NanModel, BenchFailsRatherThanReportAThroughput) {
    EXPECT_TRUE(exited_with(run_mnemo("bench -m " + model() + " -p 8 -n 0 -r 1 --no-warmup"), 1,
                            {"pp: the model produced NaN/Inf logits", kNotFinite}));
    EXPECT_TRUE(exited_with(run_mnemo("bench -m " + model() + " -p 0 -n 4 -r 1 --no-warmup"), 1,
                            {"tg: the model produced NaN/Inf logits"}));
}

// Logits written for comparison would carry NaN as if it were data: refused, and no file is left;
// --allow-nonfinite writes them (to look at a broken model) with a warning.
TEST_F(NanModel, LogitsRefusesUnlessAllowedAndWritesNoFile) {
    const std::string out = temp_file("nan-logits.npy");
    std::remove(out.c_str());
    const auto r = run_mnemo("logits -m " + model() + " --ids 1,5,9 --out " + shell_quote(out));
    EXPECT_TRUE(exited_with(r, 1, {kNanMessage + std::string("0 (token 0 is NaN; "), kNotFinite, "was not written"}));
    EXPECT_FALSE(std::ifstream(out).good()) << "a refused logits run leaves no file";
    const auto allowed = run_mnemo("logits -m " + model() + " --ids 1,5,9 --out " + shell_quote(out) + " --allow-nonfinite");
    EXPECT_TRUE(exited_with(allowed, 0, {"mnemo: warning: ", "logits are NaN or Inf (from position 0)"}));
    EXPECT_TRUE(std::ifstream(out).good());
    std::remove(out.c_str());
}

// A tokenizer.json whose vocabulary is empty (only its special tokens are left) would turn every
// prompt into a lone BOS and "answer" it with rc 0.
TEST(TokenizerVocabulary, EmptyVocabularyIsRefusedNamingTheFile) {
    mnemo::test::ModelCopy copy(default_model());
    copy.write("tokenizer.json",
               R"({"version": "1.0", "added_tokens": [{"id": 0, "content": "<unk>", "special": true},
                   {"id": 1, "content": "<s>", "special": true}, {"id": 2, "content": "</s>", "special": true}],
                   "normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
                   "decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {}, "merges": []}})");
    const auto r = run_mnemo("run -m " + shell_quote(copy.dir()) + " -p 'Hello' -n 4");
    EXPECT_TRUE(exited_with(r, 1, {copy.dir() + "/tokenizer.json: the vocabulary has 3 tokens, none of them for text"}));
}

// A vocabulary with a token for text, but none for this prompt's: the encoder drops all of it.
TEST(TokenizerVocabulary, PromptWithoutATokenIsRefused) {
    mnemo::test::ModelCopy copy(default_model());
    copy.write("tokenizer.json",
               R"({"version": "1.0", "added_tokens": [{"id": 0, "content": "<unk>", "special": true},
                   {"id": 1, "content": "<s>", "special": true}, {"id": 2, "content": "</s>", "special": true}],
                   "normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
                   "decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"z": 3}, "merges": []}})");
    EXPECT_TRUE(exited_with(run_mnemo("run -m " + shell_quote(copy.dir()) + " -p 'Hello' -n 4"), 1,
                            {"the prompt's 5 bytes of text encode to no tokens"}));
}

// llama.cpp allows a context past the trained length; so does Mnemo, but it says so and what the
// KV caches take (the default model was trained for 2048 positions of text: its 2176 positions
// less the 128 of its memory prefix).
TEST(ContextLength, LongerThanTrainedIsAllowedWithAWarning) {
    const auto r = run_mnemo("run -m " + shell_quote(default_model()) + " -c 4096 -p 'Where was Tour Hujert born?' -n 2");
    EXPECT_TRUE(exited_with(r, 0, {"mnemo: warning: the context (4096 tokens, -c) exceeds the 2048 positions the model was trained for",
                                   "GiB for its KV caches"}));
    // At the trained length, and by default (which is that length), nothing is said.
    for (const std::string c : {" -c 2048", ""}) {
        const auto quiet = run_mnemo("run -m " + shell_quote(default_model()) + c + " -p 'Where was Tour Hujert born?' -n 2");
        EXPECT_TRUE(exited_with(quiet, 0));
        EXPECT_EQ(quiet.output.find("warning"), std::string::npos) << quiet.output;
    }
}

// 2^24 positions in each of 4096 sequences is 256 TiB of KV caches: refused before allocating,
// on any machine.
TEST(ContextLength, CachesLargerThanMemoryAreRefusedBeforeAllocating) {
    const auto r = run_mnemo("bench -m " + shell_quote(default_model()) + " -c 16777216 --batch 4096 -p 8 -n 0 -r 1");
    EXPECT_TRUE(exited_with(r, 1, {"the context of 16777216 tokens x 4096 sequences needs", "more than the",
                                   "physical memory: lower -c/--ctx-size (the model was trained for 2048 positions)"}));
}

}  // namespace
