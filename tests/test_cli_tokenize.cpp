// `mnemo tokenize` run as a separate process: ids of a vocab-only GGUF against the
// libsentencepiece goldens, the one-token-per-line form, BOS handling, special tokens written in
// the text, a model folder, and the errors (usage: exit 2; a bad file: exit 1 naming it).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fixtures/error_checks.hpp"
#include "mnemo/io/gguf.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "process_util.hpp"

namespace fs = std::filesystem;

namespace {

using mnemo::testing::exited_with;
using mnemo::testing::run_mnemo;
using mnemo::testing::shell_quote;

const std::string kDir = std::string(MNEMO_TEST_DATA) + "/tokenizers/";
const std::string kGguf = kDir + "sp_gguf.gguf";

class CliTokenize : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(fs::exists(std::string(MNEMO_BUILD_BIN) + "/mnemo")) << "build the mnemo_cli target";
        dir_ = fs::temp_directory_path() / ("mnemo_cli_tokenize_" + std::to_string(getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string file(const std::string& name, const std::string& content) {
        const std::string path = (dir_ / name).string();
        std::ofstream(path, std::ios::binary) << content;
        return path;
    }
    fs::path dir_;
};

// The libsentencepiece ids of a golden text (tools/reference/gguf_tokenizer_reference.py).
std::string golden_ids(const std::string& text) {
    const mnemo::json::Value golden = mnemo::json::parse_file(kDir + "sp_gguf_golden.json");
    for (const auto& c : golden.find("cases")->as_array())
        if (c.find("text")->as_string() == text) {
            std::string out;
            for (const auto& v : c.find("ids")->as_array()) {
                if (!out.empty()) out.push_back(' ');
                out += std::to_string(v.as_int());
            }
            return out;
        }
    ADD_FAILURE() << "no golden for '" << text << "'";
    return "";
}

TEST_F(CliTokenize, IdsOfVocabOnlyGgufMatchSentencePiece) {
    for (const std::string text : {"Hello world", "Emoji 😀👍🏽 and rare ŋ ǂ ʬ", "two  inner   runs    of     spaces"}) {
        const auto r = run_mnemo("tokenize -m " + shell_quote(kGguf) + " -p " + shell_quote(text) + " --ids");
        EXPECT_EQ(r.code, 0) << r.output;
        EXPECT_EQ(r.output, "1 " + golden_ids(text) + "\n");  // the BOS the model adds, then the text
        const auto no_bos = run_mnemo("tokenize -m " + shell_quote(kGguf) + " -p " + shell_quote(text) + " --ids --no-bos");
        EXPECT_EQ(no_bos.output, golden_ids(text) + "\n");
    }
    EXPECT_EQ(run_mnemo("tokenize -m " + shell_quote(kGguf) + " -p '' --ids --no-bos").output, "\n");
}

TEST_F(CliTokenize, OneLinePerTokenWithEscapedPieces) {
    const auto r = run_mnemo("tokenize -m " + shell_quote(kGguf) + " -p " + shell_quote("the\nriver"));
    ASSERT_EQ(r.code, 0) << r.output;
    const auto tok = mnemo::load_tokenizer(kGguf);
    std::string expected = "1 '<s>'\n";
    for (int32_t id : tok->encode("the\nriver", true))
        expected += std::to_string(id) + " '" + (tok->token_bytes(id) == "\n" ? "\\n" : tok->token_bytes(id)) + "'\n";
    EXPECT_EQ(r.output, expected);
    EXPECT_NE(r.output.find(std::to_string(*tok->token_id("<0x0A>")) + " '\\n'\n"), std::string::npos) << r.output;
}

TEST_F(CliTokenize, FileInputParsesSpecialTokens) {
    const auto tok = mnemo::load_tokenizer(kGguf);
    const std::string start = std::to_string(*tok->token_id("<|im_start|>"));
    const std::string text = file("chat.txt", "<|im_start|>user\nhello<|im_end|>\n");
    const auto r = run_mnemo("tokenize -m " + shell_quote(kGguf) + " -f " + shell_quote(text) + " --ids --no-bos");
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output.substr(0, start.size() + 1), start + " ") << r.output;
    const auto plain = run_mnemo("tokenize -m " + shell_quote(kGguf) + " -f " + shell_quote(text) + " --ids --no-bos --no-parse-special");
    ASSERT_EQ(plain.code, 0) << plain.output;
    EXPECT_EQ((" " + plain.output).find(" " + start + " "), std::string::npos) << plain.output;
}

// A model folder with the same SentencePiece model gives the same ids as its GGUF.
TEST_F(CliTokenize, ModelFolderAndGgufAgree) {
    if (std::string why; !mnemo::sentencepiece_supported(&why)) GTEST_SKIP() << why;
    const std::string text = file("corpus.txt", "The river flows.\n  Indented 1234 ☃\n");
    const auto folder = run_mnemo("tokenize -m " + shell_quote(kDir + "sp_gguf") + " -f " + shell_quote(text) + " --ids --no-bos");
    const auto gguf = run_mnemo("tokenize -m " + shell_quote(kGguf) + " -f " + shell_quote(text) + " --ids --no-bos");
    EXPECT_EQ(folder.code, 0) << folder.output;
    EXPECT_EQ(folder.output, gguf.output);
    EXPECT_TRUE(exited_with(run_mnemo("tokenize -m " + shell_quote(kDir + "gpt2_bpe") + " -p 'Hello world' --ids"), 0));
}

TEST_F(CliTokenize, ErrorsNameWhatIsWrong) {
    const std::string m = "tokenize -m " + shell_quote(kGguf);
    EXPECT_TRUE(exited_with(run_mnemo("tokenize --help"), 0, {"usage: mnemo tokenize", "--ids", "--no-bos"}));
    EXPECT_TRUE(exited_with(run_mnemo(m), 2, {"-p TEXT", "-f FILE", "see mnemo tokenize --help"}));
    EXPECT_TRUE(exited_with(run_mnemo(m + " -p a -f /etc/hostname"), 2, {"exactly one"}));
    EXPECT_TRUE(exited_with(run_mnemo("tokenize -m /nonexistent/model.gguf -p a"), 1,
                            {"mnemo: error:", "/nonexistent/model.gguf", "does not exist"}));
    EXPECT_TRUE(exited_with(run_mnemo("tokenize -m " + shell_quote(kDir + "sp_gguf_golden.json") + " -p a"), 1,
                            {"sp_gguf_golden.json", "neither a folder nor a GGUF file"}));
    EXPECT_TRUE(exited_with(run_mnemo(m + " -f /nonexistent/text.txt"), 1, {"/nonexistent/text.txt"}));
    const std::string bert = (dir_ / "bert.gguf").string();
    mnemo::write_gguf(bert,
                      {{"tokenizer.ggml.model", mnemo::gguf_string("bert")},
                       {"tokenizer.ggml.tokens", mnemo::gguf_strings({"[CLS]", "a"})}},
                      {});
    EXPECT_TRUE(exited_with(run_mnemo("tokenize -m " + shell_quote(bert) + " -p a"), 1,
                            {"mnemo: error:", bert, "tokenizer.ggml.model", "'bert'"}));
    const std::string empty_dir = (dir_ / "empty").string();
    fs::create_directories(empty_dir);
    EXPECT_TRUE(exited_with(run_mnemo("tokenize -m " + shell_quote(empty_dir) + " -p a"), 1,
                            {empty_dir, "no tokenizer.json or tokenizer.model"}));
}

}  // namespace
