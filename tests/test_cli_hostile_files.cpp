// `mnemo` on hostile files: a FIFO or a device where a model file, a memory folder's file, a
// questions file, a corpus or a token file belongs must be refused at once (exit 1, the file
// named), never block the program; text that is not UTF-8 is an error naming where it is; and text
// from files that reaches the terminal (an error quoting a config field, an eval set's name) is
// escaped. Each command runs under a timeout, so a hang fails the test (exit 124).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fixtures/fifo.hpp"
#include "fixtures/model_copy.hpp"
#include "model_test_util.hpp"
#include "process_util.hpp"

namespace fs = std::filesystem;
using mnemo::testing::exited_with;
using mnemo::testing::ProcessResult;
using mnemo::testing::run_program;
using mnemo::testing::shell_quote;

namespace {

// A blocked program is killed after this long; a refusal takes well under a second.
constexpr int kSeconds = 20;

ProcessResult mnemo(const std::string& args) { return run_program("mnemo", args, kSeconds); }

class HostileFiles : public ::testing::Test {
protected:
    void SetUp() override {
        model_ = mnemo::test::model_dir("memory3-tiny-bpe");
        if (!fs::is_regular_file(model_ + "/tokenizer.json")) GTEST_SKIP() << "test model missing: " << model_;
        tmp_ = fs::temp_directory_path() / ("mnemo-hostile-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(tmp_);
        fs::create_directories(tmp_);
    }
    void TearDown() override { fs::remove_all(tmp_); }

    std::string path(const std::string& name) const { return (tmp_ / name).string(); }
    std::string write(const std::string& name, const std::string& bytes) const {
        std::ofstream(path(name), std::ios::binary) << bytes;
        return path(name);
    }
    std::string fifo(const std::string& name) const {
        mnemo::test::make_fifo(path(name));
        return path(name);
    }
    // A memory folder written by `mnemo memorize` from a two-paragraph corpus.
    std::string memory_folder() const {
        const std::string corpus = write("corpus.txt", "A library keeps books.\n\nA model keeps parameters.\n");
        const std::string out = path("memories");
        const auto r = mnemo("memorize -m " + shell_quote(model_) + " --corpus " + shell_quote(corpus) + " -o " + shell_quote(out));
        EXPECT_TRUE(exited_with(r, 0));
        return out;
    }

    std::string model_;
    fs::path tmp_;
};

TEST_F(HostileFiles, ModelFileThatIsAFifoIsRefused) {
    for (const char* file : {"model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json"}) {
        mnemo::test::ModelCopy copy(model_);
        fs::remove(copy.dir() + "/" + file);
        mnemo::test::make_fifo(copy.dir() + "/" + file);
        const auto r = mnemo("run -m " + shell_quote(copy.dir()) + " -p hello -n 2");
        EXPECT_TRUE(exited_with(r, 1, {copy.dir() + "/" + file + ": is a FIFO, expected a regular file"})) << file;
    }
}

TEST_F(HostileFiles, MemoryFolderFileThatIsAFifoIsRefused) {
    const std::string folder = memory_folder();
    for (const char* file : {"manifest.json", "records.bin", "vectors.f32", "references.jsonl"}) {
        const std::string broken = path(std::string("broken-") + file);
        fs::copy(folder, broken);
        fs::remove(broken + "/" + file);
        mnemo::test::make_fifo(broken + "/" + file);
        const auto r = mnemo("run -m " + shell_quote(model_) + " --memories " + shell_quote(broken) + " -p hello -n 2");
        EXPECT_TRUE(exited_with(r, 1, {broken + "/" + file + ": is a FIFO, expected a regular file"})) << file;
    }
}

TEST_F(HostileFiles, InputFilesThatAreNotRegularAreRefused) {
    const std::string q = fifo("questions.jsonl");
    EXPECT_TRUE(exited_with(mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(q)), 1,
                            {"--questions: " + q + ": is a FIFO, expected a regular file"}));
    EXPECT_TRUE(exited_with(mnemo("eval -m " + shell_quote(model_) + " --questions /dev/zero"), 1,
                            {"/dev/zero: is a character device, expected a regular file"}));
    const std::string corpus = fifo("corpus.txt");
    EXPECT_TRUE(exited_with(mnemo("memorize -m " + shell_quote(model_) + " --corpus " + shell_quote(corpus) + " -o " +
                                  shell_quote(path("out"))),
                            1, {"--corpus: " + corpus + ": is a FIFO, expected a regular file"}));
    EXPECT_FALSE(fs::exists(path("out")));
    // The token is read before any connection is tried.
    const std::string token = fifo("token");
    EXPECT_TRUE(exited_with(mnemo("run -m " + shell_quote(model_) + " --kb grpc://127.0.0.1:1 --kb-token-file " +
                                  shell_quote(token) + " -p hello -n 2"),
                            1, {token + ": is a FIFO, expected a regular file"}));
}

TEST_F(HostileFiles, TextThatIsNotUtf8IsAnErrorSayingWhere) {
    const std::string q = write("questions.jsonl", "{\"question\": \"ok?\", \"answer\": \"yes\"}\n"
                                                   "{\"question\": \"caf\xE9?\", \"answer\": \"yes\"}\n");
    EXPECT_TRUE(exited_with(mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(q)), 1,
                            {q + ": line 2: not valid JSON", "expected valid UTF-8 in string"}));
    const std::string corpus = write("latin1.txt", "A caf\xE9 keeps coffee.\n");
    EXPECT_TRUE(exited_with(mnemo("memorize -m " + shell_quote(model_) + " --corpus " + shell_quote(corpus) + " -o " +
                                  shell_quote(path("out"))),
                            1, {corpus + ": byte 5 is not valid UTF-8"}));
    EXPECT_FALSE(fs::exists(path("out")));
}

// An error message quotes the field it refuses; a field holding a terminal escape sequence (here:
// "set the window title") must reach the terminal escaped, never as the sequence itself.
TEST_F(HostileFiles, ErrorsQuotingAFileEscapeControlCharacters) {
    mnemo::test::ModelCopy copy(model_);
    copy.set_config("model_type", "\"\\u001b]0;pwned\\u0007\\n\\u202eevil\"");
    const auto r = mnemo("run -m " + shell_quote(copy.dir()) + " -p hello -n 2");
    EXPECT_TRUE(exited_with(r, 1, {"\\e]0;pwned\\x07\\n\\u{202E}evil"}));
    EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << "a raw ESC reached the terminal";
    EXPECT_EQ(r.output.find("\xE2\x80\xAE"), std::string::npos) << "a raw RLO reached the terminal";
}

TEST_F(HostileFiles, EvalTableEscapesSetNames) {
    const std::string q = write("questions.jsonl", "{\"prompt\": \"a b c\", \"completion\": \"d\", \"set\": \"\\u001b[31mred\"}\n");
    const auto r = mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(q) + " --quiet");
    EXPECT_TRUE(exited_with(r, 0, {"\\e[31mred"}));
    EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
}

}  // namespace
