// StreamDecoder: pieces handed out one token at a time must be valid UTF-8 and add up to the
// whole-sequence decode, for byte-level BPE and SentencePiece alike.
#include <gtest/gtest.h>

#include "mnemo/tokenizer/tokenizer.hpp"

namespace {

const std::string kDir = std::string(MNEMO_TEST_DATA) + "/tokenizers/";

bool valid_utf8_without_replacement(const std::string& s) {
    if (s.find("\xEF\xBF\xBD") != std::string::npos) return false;
    for (size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        size_t len = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
        if (len == 0 || i + len > s.size()) return false;
        for (size_t k = 1; k < len; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
        i += len;
    }
    return true;
}

void check_stream(const mnemo::Tokenizer& tok, const std::string& text) {
    SCOPED_TRACE(text);
    const auto ids = tok.encode(text, true);
    mnemo::StreamDecoder dec(tok);
    std::string streamed;
    for (int32_t id : ids) {
        const std::string piece = dec.push(id);
        EXPECT_TRUE(valid_utf8_without_replacement(piece)) << piece;
        streamed += piece;
    }
    streamed += dec.finish();
    EXPECT_EQ(streamed, tok.decode(ids, true));
}

const char* kTexts[] = {"Hello world", "Emoji 😀👍🏽 family 👨‍👩‍👧‍👦", "東京は日本の首都です。",
                        "Café ŋ ǂ \U0001F9EC", "  spaced  out  "};

TEST(StreamDecoder, ByteLevelBpeMatchesWholeDecode) {
    auto tok = mnemo::load_tokenizer(kDir + "llama3_bpe");
    for (const char* t : kTexts) check_stream(*tok, t);
    check_stream(*tok, "<|begin_of_text|>hi<|eot_id|>");  // specials are skipped
}

TEST(StreamDecoder, SentencePieceDropsOnlyTheFirstSpace) {
    if (std::string why; !mnemo::sentencepiece_supported(&why)) GTEST_SKIP() << why;
    auto tok = mnemo::load_tokenizer(kDir + "sp_tiny");
    for (const char* t : kTexts) check_stream(*tok, t);
    mnemo::StreamDecoder dec(*tok);
    std::string out;
    for (int32_t id : tok->encode("Hello world", false)) out += dec.push(id);
    EXPECT_EQ(out + dec.finish(), "Hello world");
}

TEST(StreamDecoder, HoldsPartialCharactersAndFlushesInvalidLeftovers) {
    auto tok = mnemo::load_tokenizer(kDir + "gpt2_bpe");
    // Single-byte tokens for the 4 bytes of U+1F600: nothing comes out until the last one.
    const std::string emoji = "\xF0\x9F\x98\x80";
    std::vector<int32_t> byte_ids;
    for (char c : emoji) {
        const auto ids = tok->encode(std::string(1, c), false);
        ASSERT_EQ(ids.size(), 1u);
        byte_ids.push_back(ids[0]);
    }
    mnemo::StreamDecoder dec(*tok);
    EXPECT_EQ(dec.push(byte_ids[0]), "");
    EXPECT_EQ(dec.push(byte_ids[1]), "");
    EXPECT_EQ(dec.push(byte_ids[2]), "");
    EXPECT_EQ(dec.push(byte_ids[3]), emoji);
    // An unfinished character at the end becomes U+FFFD.
    EXPECT_EQ(dec.push(byte_ids[0]), "");
    EXPECT_EQ(dec.push(byte_ids[1]), "");
    EXPECT_EQ(dec.finish(), "\xEF\xBF\xBD");
    // A byte that can never start a character is replaced at once.
    const auto ff = tok->encode("\xFF", false);
    ASSERT_EQ(ff.size(), 1u);
    EXPECT_EQ(dec.push(ff[0]), "\xEF\xBF\xBD");
    EXPECT_EQ(dec.finish(), "");
}

}  // namespace
