// SentencePiece tokenizer.model against python3-sentencepiece goldens.
// Regenerate the model and goldens (repository root, Debian python3 + python3-sentencepiece):
//     /usr/bin/python3 tools/reference/sp_reference.py tests/data/tokenizers
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "fixtures/error_checks.hpp"
#include "fixtures/fifo.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace {

const std::string kDir = std::string(MNEMO_TEST_DATA) + "/tokenizers/";

// A sanitized build with the gRPC client cannot load SentencePiece (sentencepiece_supported).
#define SKIP_WITHOUT_SENTENCEPIECE()                                                   \
    do {                                                                               \
        if (std::string why; !mnemo::sentencepiece_supported(&why)) GTEST_SKIP() << why; \
    } while (0)

TEST(TokenizerSentencePiece, MatchesPythonSentencePiece) {
    SKIP_WITHOUT_SENTENCEPIECE();
    auto tok = mnemo::load_tokenizer(kDir + "sp_tiny");  // no tokenizer.json: uses the .model
    const auto golden = mnemo::json::parse_file(kDir + "sp_tiny_golden.json");
    EXPECT_EQ(tok->vocab_size(), golden.find("vocab_size")->as_int());
    EXPECT_EQ(tok->bos_id, golden.find("bos_id")->as_int());
    EXPECT_EQ(tok->eos_id, golden.find("eos_id")->as_int());
    EXPECT_TRUE(tok->add_bos);
    for (const auto& c : golden.find("cases")->as_array()) {
        const std::string& text = c.find("text")->as_string();
        SCOPED_TRACE(text);
        std::vector<int32_t> expected;
        for (const auto& v : c.find("ids")->as_array()) expected.push_back(int32_t(v.as_int()));
        const auto ids = tok->encode(text, false);
        EXPECT_EQ(ids, expected);
        EXPECT_EQ(tok->decode(ids, true), c.find("decoded")->as_string());
        // Pieces: token_id(piece) is the inverse of the model's id -> piece mapping.
        const auto& pieces = c.find("pieces")->as_array();
        ASSERT_EQ(pieces.size(), ids.size());
        for (size_t i = 0; i < ids.size(); ++i)
            EXPECT_EQ(tok->token_id(pieces[i].as_string()), ids[i]);
    }
}

TEST(TokenizerSentencePiece, TokenBytes) {
    SKIP_WITHOUT_SENTENCEPIECE();
    auto tok = mnemo::load_sentencepiece(kDir + "sp_tiny/tokenizer.model");
    const auto byte_e6 = tok->token_id("<0xE6>");
    ASSERT_TRUE(byte_e6.has_value());
    EXPECT_EQ(tok->token_bytes(*byte_e6), "\xE6");
    const auto the = tok->token_id("\xE2\x96\x81the");
    ASSERT_TRUE(the.has_value());
    EXPECT_EQ(tok->token_bytes(*the), " the");
    EXPECT_TRUE(tok->is_special(*tok->bos_id));
    EXPECT_EQ(tok->token_bytes(*tok->bos_id), "<s>");
    EXPECT_FALSE(tok->token_id("no-such-piece").has_value());
    EXPECT_THROW(tok->token_bytes(100000), mnemo::Error);
}

TEST(TokenizerSentencePiece, SpecialTokensInText) {
    SKIP_WITHOUT_SENTENCEPIECE();
    auto tok = mnemo::load_sentencepiece(kDir + "sp_tiny/tokenizer.model");
    const auto with = tok->encode("the</s>the", true);
    const auto plain = tok->encode("the", false);
    std::vector<int32_t> expected = plain;
    expected.push_back(*tok->eos_id);
    expected.insert(expected.end(), plain.begin(), plain.end());
    EXPECT_EQ(with, expected);
    const auto without = tok->encode("the</s>the", false);
    EXPECT_EQ(std::count(without.begin(), without.end(), *tok->eos_id), 0);
    EXPECT_EQ(tok->decode(with, true), "the the");
}

TEST(TokenizerSentencePiece, DecodeRoundTrip) {
    SKIP_WITHOUT_SENTENCEPIECE();
    auto tok = mnemo::load_sentencepiece(kDir + "sp_tiny/tokenizer.model");
    for (const char* text : {"Hello world", "东京 and 👍🏽 emoji", "x ≠ y"}) {
        const auto ids = tok->encode(text, false);
        EXPECT_EQ(tok->decode(ids, true), text);
    }
}

TEST(TokenizerSentencePiece, MissingModelIsAnError) {
    SKIP_WITHOUT_SENTENCEPIECE();
    try {
        mnemo::load_sentencepiece(kDir + "sp_tiny/missing.model");
        FAIL();
    } catch (const mnemo::Error& e) {
        EXPECT_NE(std::string(e.what()).find("missing.model"), std::string::npos);
    }
}

// libsentencepiece opens the file itself, with a blocking open: the engine opens it first, so a
// FIFO named tokenizer.model is refused at once.
TEST(TokenizerSentencePiece, FifoModelFileIsRefusedWithoutBlocking) {
    SKIP_WITHOUT_SENTENCEPIECE();
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("mnemo-spfifo-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string model = (dir / "tokenizer.model").string();
    mnemo::test::make_fifo(model);
    const std::string e = mnemo::test::error_without_blocking(model, [&] { mnemo::load_tokenizer(dir.string()); });
    EXPECT_MENTIONS(e, model + ": is a FIFO, expected a regular file");
    fs::remove_all(dir);
}

}  // namespace
