// Byte-level BPE against goldens from the independent Python reference.
// Regenerate the fixtures and goldens (repository root, Debian python3 + python3-regex):
//     /usr/bin/python3 tools/reference/bpe_reference.py tests/data/tokenizers
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "fixtures/error_checks.hpp"
#include "fixtures/fifo.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(MNEMO_TEST_DATA) + "/tokenizers/";

void check_goldens(const std::string& name) {
    SCOPED_TRACE(name);
    auto tok = mnemo::load_tokenizer(kDir + name);
    const auto golden = mnemo::json::parse_file(kDir + name + "_golden.json");
    size_t checked = 0;
    for (const auto& c : golden.find("cases")->as_array()) {
        const std::string& text = c.find("text")->as_string();
        const bool parse_special = c.find("parse_special")->as_bool();
        std::vector<int32_t> expected;
        for (const auto& v : c.find("ids")->as_array()) expected.push_back(int32_t(v.as_int()));
        SCOPED_TRACE("text: '" + text + "' parse_special=" + std::to_string(parse_special));
        const auto ids = tok->encode(text, parse_special);
        EXPECT_EQ(ids, expected);
        EXPECT_EQ(tok->decode(ids, false), c.find("decoded")->as_string());
        ++checked;
    }
    EXPECT_GT(checked, 30u);
}

TEST(TokenizerBpe, Gpt2PatternMatchesReference) { check_goldens("gpt2_bpe"); }
TEST(TokenizerBpe, Llama3PatternMatchesReference) { check_goldens("llama3_bpe"); }
TEST(TokenizerBpe, Qwen2PatternWithNfcMatchesReference) { check_goldens("qwen2_bpe"); }

TEST(TokenizerBpe, SpecialTokensAndBosEosFromConfig) {
    auto tok = mnemo::load_tokenizer(kDir + "llama3_bpe");
    const auto eot = tok->token_id("<|eot_id|>");
    ASSERT_TRUE(eot.has_value());
    EXPECT_TRUE(tok->is_special(*eot));
    EXPECT_FALSE(tok->is_special(0));
    EXPECT_EQ(tok->token_bytes(*eot), "<|eot_id|>");
    EXPECT_EQ(tok->bos_id, tok->token_id("<|begin_of_text|>"));
    EXPECT_EQ(tok->eos_id, eot);
    EXPECT_TRUE(tok->add_bos);  // from the TemplateProcessing post-processor
    // eos from tokenizer_config, both config.json ids, no duplicates.
    EXPECT_EQ(tok->eos_ids, (std::vector<int32_t>{379, 376}));

    const auto with = tok->encode("a<|eot_id|>b", true);
    ASSERT_EQ(with.size(), 3u);
    EXPECT_EQ(with[1], *eot);
    const auto without = tok->encode("a<|eot_id|>b", false);
    EXPECT_GT(without.size(), 3u);
    EXPECT_EQ(tok->decode(with, true), "ab");
    EXPECT_EQ(tok->decode(with, false), "a<|eot_id|>b");
    EXPECT_EQ(tok->decode(without, false), "a<|eot_id|>b");
}

TEST(TokenizerBpe, LongWordsAreFastAndRoundTrip) {
    auto tok = mnemo::load_tokenizer(kDir + "gpt2_bpe");
    std::string text;
    for (int i = 0; i < 20000; ++i) text += "thequickbrownfox";  // one 320 KB word
    const auto start = std::chrono::steady_clock::now();
    const auto ids = tok->encode(text, false);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(ids.size(), text.size());
    EXPECT_EQ(tok->decode(ids, false), text);
    EXPECT_LT(secs, 5.0);  // a quadratic merge loop would take minutes
}

TEST(TokenizerBpe, InvalidUtf8RoundTripsAsBytesAndDecodesWithReplacement) {
    auto tok = mnemo::load_tokenizer(kDir + "gpt2_bpe");
    const std::string text = "ok\xff\xfe bad \xe2\x82 end";
    const auto ids = tok->encode(text, false);
    std::string raw;
    for (int32_t id : ids) raw += tok->token_bytes(id);
    EXPECT_EQ(raw, text);
    EXPECT_EQ(tok->decode(ids, false), "ok\xEF\xBF\xBD\xEF\xBF\xBD bad \xEF\xBF\xBD end");
    EXPECT_THROW(tok->token_bytes(tok->vocab_size()), mnemo::Error);
    EXPECT_THROW(tok->decode({-1}, false), mnemo::Error);
}

// A Llama-2 style tokenizer.json (metaspace normalizers, byte fallback), small enough to verify
// by hand.
std::string metaspace_json() {
    std::string vocab = R"("<unk>":0,"<s>":1,"</s>":2)";
    const char* hex = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b)
        vocab += std::string(",\"<0x") + hex[b >> 4] + hex[b & 15] + ">\":" + std::to_string(3 + b);
    vocab += R"(,"▁":259,"h":260,"i":261,"▁h":262,"▁hi":263,"!":264)";
    return R"({"added_tokens":[{"id":1,"content":"<s>","special":true},
        {"id":2,"content":"</s>","special":true}],
      "normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},
        {"type":"Replace","pattern":{"String":" "},"content":"▁"}]},
      "pre_tokenizer":null,
      "model":{"type":"BPE","byte_fallback":true,"unk_token":"<unk>","vocab":{)" +
           vocab + R"(},"merges":["▁ h","▁h i"]}})";
}

TEST(TokenizerBpe, MetaspaceWithByteFallback) {
    auto tok = mnemo::load_bpe_tokenizer_json(metaspace_json(), "llama2.json");
    EXPECT_EQ(tok->encode("hi hi!", false), (std::vector<int32_t>{263, 263, 264}));
    // "é" is not in the vocab: its two UTF-8 bytes become <0xC3> <0xA9>.
    EXPECT_EQ(tok->encode("hié", false), (std::vector<int32_t>{263, 3 + 0xC3, 3 + 0xA9}));
    // The Prepend normalizer adds a metaspace even before an existing space.
    EXPECT_EQ(tok->encode(" hi", false), (std::vector<int32_t>{259, 263}));
    EXPECT_EQ(tok->encode("<s>hi", true), (std::vector<int32_t>{1, 263}));
    EXPECT_EQ(tok->decode({263, 263, 3 + 0xC3, 3 + 0xA9}, false), "hi hié");
    EXPECT_EQ(tok->token_bytes(263), " hi");
    EXPECT_EQ(tok->token_bytes(3 + 0x41), "A");
}

void expect_error(const std::string& json, const std::vector<std::string>& parts) {
    try {
        mnemo::load_bpe_tokenizer_json(json, "bad/tokenizer.json");
        ADD_FAILURE() << "no error for " << json;
    } catch (const mnemo::Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("bad/tokenizer.json"), std::string::npos) << msg;
        for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg;
    }
}

const char* kByteLevel = R"("pre_tokenizer":{"type":"ByteLevel","use_regex":true},)";

TEST(TokenizerBpe, ErrorsNameFileAndField) {
    expect_error(std::string("{") + kByteLevel + R"("model":{"type":"BPE","merges":[]}})",
                 {"model.vocab", "missing"});
    expect_error(std::string("{") + kByteLevel +
                     R"("model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a c"]}})",
                 {"model.merges[0]", "unknown token 'c'"});
    expect_error(std::string("{") + kByteLevel +
                     R"("model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":["a b"]}})",
                 {"model.merges[0]", "'ab' is not in model.vocab"});
    expect_error(std::string("{") + kByteLevel +
                     R"("model":{"type":"BPE","vocab":{"a":0,"b":99999999},"merges":[]}})",
                 {"model.vocab['b']", "out of range"});
    expect_error(std::string("{") + kByteLevel +
                     R"("model":{"type":"BPE","vocab":{"a":0,"b":-1},"merges":[]}})",
                 {"model.vocab['b']", "out of range"});
    expect_error(std::string("{") + kByteLevel +
                     R"("model":{"type":"BPE","vocab":{"a":0,"b":0},"merges":[]}})",
                 {"duplicate id 0"});
    expect_error(R"({"model":{"type":"WordPiece","vocab":{"a":0}}})",
                 {"model.type", "WordPiece", "not supported"});
    expect_error(R"({"pre_tokenizer":{"type":"Whitespace"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}})",
                 {"pre_tokenizer", "Whitespace", "not supported"});
    expect_error(R"({"pre_tokenizer":{"type":"Split","pattern":{"Regex":"\\w+|\\d"},"behavior":"Isolated"},
                   "model":{"type":"BPE","vocab":{"a":0},"merges":[]}})",
                 {"pre_tokenizer.pattern.Regex", "\\w+|\\d"});
    expect_error(R"({"normalizer":{"type":"Lowercase"},"pre_tokenizer":{"type":"ByteLevel"},
                   "model":{"type":"BPE","vocab":{"a":0},"merges":[]}})",
                 {"normalizer", "Lowercase"});
    expect_error(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]}})", {"pre_tokenizer"});
    expect_error(std::string("{") + kByteLevel + R"("added_tokens":[{"id":5}],)" +
                     R"("model":{"type":"BPE","vocab":{"a":0},"merges":[]}})",
                 {"added_tokens[0]", "content"});
    expect_error("{not json", {});
}

TEST(TokenizerBpe, LoadTokenizerNeedsATokenizerFile) {
    EXPECT_THROW(mnemo::load_tokenizer(kDir + "does-not-exist"), mnemo::Error);
}

// A scratch model folder holding only the files a test writes.
class TokenizerFolder : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("mnemo-tokfolder-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string file(const std::string& name) const { return (dir_ / name).string(); }
    fs::path dir_;
};

// A FIFO named tokenizer.json would block the load in open() until some process wrote to it.
TEST_F(TokenizerFolder, FifoTokenizerFileIsRefusedWithoutBlocking) {
    mnemo::test::make_fifo(file("tokenizer.json"));
    const std::string e = mnemo::test::error_without_blocking(file("tokenizer.json"), [&] { mnemo::load_tokenizer(dir_.string()); });
    EXPECT_MENTIONS(e, file("tokenizer.json") + ": is a FIFO, expected a regular file");
}

// Without a token for text, every prompt would encode to nothing but its BOS.
TEST_F(TokenizerFolder, VocabularyWithoutTextTokensIsRefusedNamingTheFile) {
    // Special tokens alone: the parser counts them as a vocabulary; the loader must not.
    std::ofstream(file("tokenizer.json"))
        << std::string("{") + kByteLevel +
               R"("added_tokens": [{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "</s>", "special": true}],
                  "model": {"type": "BPE", "vocab": {}, "merges": []}})";
    const std::string e = mnemo::test::required_error("an empty vocabulary", [&] { mnemo::load_tokenizer(dir_.string()); });
    EXPECT_MENTIONS(e, file("tokenizer.json") + ": the vocabulary has 2 tokens, none of them for text");
    // One token for text is enough to load (what it cannot encode is the encoder's business).
    std::ofstream(file("tokenizer.json")) << std::string("{") + kByteLevel + R"("model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})";
    EXPECT_EQ(mnemo::load_tokenizer(dir_.string())->vocab_size(), 1);
}

}  // namespace
