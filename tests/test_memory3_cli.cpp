// `mnemo memorize` and `mnemo run --memories` as a user runs them, on the tiny memory3 model that
// has a tokenizer (tests/data/models/memory3-tiny-bpe): a corpus becomes a memory folder, a run
// reads it (vector and BM25 retrieval), and bad input is a clear error with a non-zero exit and
// no half-written folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "model_test_util.hpp"
#include "process_util.hpp"

namespace fs = std::filesystem;
using mnemo::testing::run_mnemo;
using mnemo::testing::shell_quote;

namespace {

class Memory3Cli : public ::testing::Test {
protected:
    void SetUp() override {
        tmp_ = fs::temp_directory_path() / ("mnemo-m3cli-" + std::to_string(::getpid()));
        fs::remove_all(tmp_);
        fs::create_directories(tmp_);
        corpus_ = (tmp_ / "corpus.txt").string();
        std::ofstream(corpus_) << "The hippocampus turns short-term memories into long-term ones.\n\n"
                                  "Explicit memories are sparse attention key-values of reference texts,\n"
                                  "written once and read by the model every sixty-four tokens.\n\n"
                                  "A library keeps books; a model keeps parameters; a knowledge base keeps memories.\n"
                                  "This paragraph is long enough to be cut into more than one reference, because the tiny "
                                  "model reads at most thirty-two tokens per reference and this text holds many more words "
                                  "than that, so memorize splits it.\n";
        model_ = mnemo::test::model_dir("memory3-tiny-bpe");
        out_ = (tmp_ / "memories").string();
    }
    void TearDown() override { fs::remove_all(tmp_); }
    fs::path tmp_;
    std::string corpus_, model_, out_;
};

TEST_F(Memory3Cli, MemorizeThenRunWithMemories) {
    auto r = run_mnemo("memorize -m " + shell_quote(model_) + " --corpus " + shell_quote(corpus_) + " -o " + shell_quote(out_));
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("references"), std::string::npos) << r.output;
    EXPECT_TRUE(fs::exists(fs::path(out_) / "manifest.json"));
    EXPECT_FALSE(fs::exists(out_ + ".partial"));

    for (const char* mode : {"vector", "bm25"}) {
        r = run_mnemo("run -m " + shell_quote(model_) + " --memories " + shell_quote(out_) + " --retrieval " + mode +
                      " -p " + shell_quote("Explicit memories of the hippocampus") + " -n 40 --temp 0");
        ASSERT_EQ(r.code, 0) << mode << ": " << r.output;
        // A 26-token prompt (chunks of 16: 2 prompt chunks) and 40 generated tokens (decoded chunks
        // 0, 1, 2; chunk 0 keeps the last prompt chunk's memories): 2 + 2 retrievals.
        EXPECT_NE(r.output.find("memories: memory folder"), std::string::npos) << r.output;
        EXPECT_NE(r.output.find("4 retrievals"), std::string::npos) << mode << ": " << r.output;
    }
    // The same folder again is refused unless --force, and --force replaces it.
    r = run_mnemo("memorize -m " + shell_quote(model_) + " --corpus " + shell_quote(corpus_) + " -o " + shell_quote(out_));
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_NE(r.output.find("already exists"), std::string::npos) << r.output;
    r = run_mnemo("memorize -m " + shell_quote(model_) + " --corpus " + shell_quote(corpus_) + " -o " + shell_quote(out_) + " --force");
    EXPECT_EQ(r.code, 0) << r.output;
}

TEST_F(Memory3Cli, BadInputIsAClearError) {
    // A model that reads no memories.
    auto r = run_mnemo("memorize -m " + shell_quote(mnemo::test::model_dir("llama-tiny-f32")) + " --corpus " + shell_quote(corpus_) +
                       " -o " + shell_quote(out_));
    EXPECT_NE(r.code, 0);
    EXPECT_FALSE(fs::exists(out_));
    // A folder that is not a memory folder.
    fs::create_directories(tmp_ / "empty");
    r = run_mnemo("run -m " + shell_quote(model_) + " --memories " + shell_quote((tmp_ / "empty").string()) + " -p hi -n 2");
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_NE(r.output.find("manifest.json is missing"), std::string::npos) << r.output;
    ASSERT_EQ(run_mnemo("memorize -m " + shell_quote(model_) + " --corpus " + shell_quote(corpus_) + " -o " + shell_quote(out_)).code, 0);
    // An unknown retrieval mode, an empty corpus.
    r = run_mnemo("run -m " + shell_quote(model_) + " --memories " + shell_quote(out_) + " --retrieval dense -p hi -n 2");
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.output.find("unknown retrieval mode 'dense'"), std::string::npos) << r.output;
    std::ofstream(tmp_ / "blank.txt") << "\n\n  \n";
    r = run_mnemo("memorize -m " + shell_quote(model_) + " --corpus " + shell_quote((tmp_ / "blank.txt").string()) + " -o " +
                  shell_quote((tmp_ / "m2").string()));
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.output.find("holds no text"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(tmp_ / "m2"));
}

}  // namespace
