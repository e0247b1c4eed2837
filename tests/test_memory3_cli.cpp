// `mnemo memorize` and `mnemo run --memories` as a user runs them, on the tiny memory3 model that
// has a tokenizer (tests/data/models/memory3-tiny-bpe): a corpus becomes a memory folder, a run
// reads it (vector and BM25 retrieval), `--update` memorizes changed files again in place of what
// the folder held for them, and bad input is a clear error with a non-zero exit and no
// half-written folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "mnemo/memory/memory_folder.hpp"
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

// Each corpus file is a document (its file name the id): --update replaces a file's references
// and adds new files', keeping the rest; the folder is rewritten whole.
TEST_F(Memory3Cli, MemorizeUpdateReplacesWhatAFileHeld) {
    const fs::path c1 = tmp_ / "c1", c2 = tmp_ / "c2";
    fs::create_directories(c1);
    fs::create_directories(c2);
    std::ofstream(c1 / "a.txt") << "The lighthouse keeper lives on the north rock.\n\nHe paints the lamp blue.\n";
    std::ofstream(c1 / "b.txt") << "The ferry leaves at seven.\n";
    std::ofstream(c2 / "a.txt") << "The lighthouse keeper lives on the south rock.\n";
    std::ofstream(c2 / "c.txt") << "The harbour has three cranes.\n";
    ASSERT_EQ(run_mnemo("memorize -m " + shell_quote(model_) + " --corpus " + shell_quote(c1.string()) + " -o " + shell_quote(out_)).code, 0);
    // The folder's references as "doc_id: text" (the tiny model cuts a paragraph at 32 tokens).
    auto texts = [&] {
        std::vector<std::string> out;
        for (const mnemo::MemoryReference& r : mnemo::read_memory_folder(out_).references) out.push_back(r.doc_id + ": " + r.text);
        return out;
    };
    auto count = [](const std::vector<std::string>& refs, const std::string& part) {
        return std::count_if(refs.begin(), refs.end(), [&](const std::string& r) { return r.find(part) != std::string::npos; });
    };
    const std::vector<std::string> before = texts();
    const auto old_a = count(before, "a.txt: ");
    ASSERT_GE(old_a, 2);
    EXPECT_EQ(count(before, "b.txt: The ferry"), 1);
    EXPECT_EQ(count(before, "a.txt: He paints"), 1);
    const auto r = run_mnemo("memorize -m " + shell_quote(model_) + " --corpus " + shell_quote(c2.string()) + " -o " + shell_quote(out_) +
                             " --update");
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("1 of 2 documents replace what"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("(" + std::to_string(old_a) + " references dropped), 1 references kept"), std::string::npos) << r.output;
    const std::vector<std::string> after = texts();
    ASSERT_FALSE(after.empty());
    EXPECT_EQ(after.front(), "b.txt: The ferry leaves at seven.") << "kept, first";
    EXPECT_EQ(count(after, "north"), 0) << "a.txt's old text is gone";
    EXPECT_EQ(count(after, "He paints"), 0);
    EXPECT_EQ(count(after, "a.txt: The lighthouse keeper lives on the south"), 1);
    EXPECT_EQ(count(after, "c.txt: The harbour"), 1);
    EXPECT_EQ(static_cast<long>(after.size()), count(after, "a.txt: ") + count(after, "b.txt: ") + count(after, "c.txt: "))
        << "every reference has its file";
    EXPECT_FALSE(fs::exists(out_ + ".partial"));
    // The updated folder is read like any other.
    const auto run = run_mnemo("run -m " + shell_quote(model_) + " --memories " + shell_quote(out_) + " --retrieval bm25 -p " +
                               shell_quote("the lighthouse keeper") + " -n 4 --temp 0");
    EXPECT_EQ(run.code, 0) << run.output;
    // Refused, the folder unchanged: no folder to update, --force with it, another model's folder.
    auto bad = run_mnemo("memorize -m " + shell_quote(model_) + " --corpus " + shell_quote(c2.string()) + " -o " +
                         shell_quote((tmp_ / "none").string()) + " --update");
    EXPECT_EQ(bad.code, 1) << bad.output;
    EXPECT_NE(bad.output.find("does not exist; --update adds to an existing folder"), std::string::npos) << bad.output;
    bad = run_mnemo("memorize -m " + shell_quote(model_) + " --corpus " + shell_quote(c2.string()) + " -o " + shell_quote(out_) +
                    " --update --force");
    EXPECT_EQ(bad.code, 2) << bad.output;
    bad = run_mnemo("memorize -m " + shell_quote(std::string(MNEMO_SOURCE_DIR) + "/assets/default-model") + " --corpus " +
                    shell_quote(c1.string()) + " -o " + shell_quote(out_) + " --update");
    EXPECT_EQ(bad.code, 1) << bad.output;
    EXPECT_NE(bad.output.find("memory folder '" + out_ + "'"), std::string::npos) << bad.output;
    EXPECT_EQ(texts(), after);
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
