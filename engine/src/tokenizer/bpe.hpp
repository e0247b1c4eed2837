// Byte-pair-encoding tokenizer as described by a Hugging Face tokenizer.json. Two flavours share
// the merge machinery:
//   * byte-level (GPT-2, Llama-3, Qwen2, OLMo-2): text is split by a regex pre-tokenizer, every
//     byte is mapped to a printable character and words are merged from single bytes;
//   * metaspace (Llama-2 / Mistral tokenizer.json): spaces become U+2581, the text is merged from
//     single characters, characters missing from the vocab fall back to <0xNN> byte tokens.
// Parsing lives in bpe_json.cpp (tokenizer.json) and gguf_vocab.cpp (GGUF metadata),
// encoding/decoding in bpe.cpp.
#pragma once

#include <array>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mnemo/tokenizer/tokenizer.hpp"
#include "tokenizer/pretokenize.hpp"

namespace mnemo::tokenizer_detail {

struct AddedToken {
    std::string content;
    int32_t id = -1;
    bool special = false;
    bool lstrip = false;  // also swallow whitespace before the token
    bool rstrip = false;  // ... and after it
};

enum class BpeFlavour { ByteLevel, Metaspace };
enum class PrependScheme { Never, First, Always };

struct BpeConfig {
    std::string source;  // file name for messages
    BpeFlavour flavour = BpeFlavour::ByteLevel;
    SplitPattern split = SplitPattern::None;
    bool add_prefix_space = false;   // ByteLevel: prefix a space to each segment
    bool nfc = false;                // "normalizer": NFC
    // Metaspace options.
    PrependScheme prepend = PrependScheme::Never;
    bool prepend_even_if_present = false;  // Prepend normalizer: " x" -> "\u2581\u2581x"
    bool split_on_metaspace = false;
    bool byte_fallback = false;
    bool ignore_merges = false;
    std::optional<int32_t> unk_id;

    std::unordered_map<std::string, int32_t> vocab;  // piece as written in the vocab -> id
    std::vector<std::pair<std::string, std::string>> merges;  // by rank
    // When not empty, the rank of each merge (else its index): equal ranks are a tie, which the
    // leftmost pair wins (SentencePiece scores turned into merges, tokenizer/gguf_vocab.cpp).
    std::vector<int32_t> merge_ranks;
    // When not empty, the piece of every id: a list such as GGUF's may hold one text under
    // several ids, which `vocab` (piece -> id) cannot say.
    std::vector<std::string> id_pieces;
    std::vector<AddedToken> added;
};

class BpeTokenizer final : public Tokenizer {
public:
    explicit BpeTokenizer(BpeConfig config);  // validates; throws mnemo::Error

    std::vector<int32_t> encode(std::string_view text, bool parse_special) const override;
    std::string token_bytes(int32_t id) const override;
    std::string decode(const std::vector<int32_t>& ids, bool skip_special) const override;
    int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }
    std::optional<int32_t> token_id(std::string_view piece) const override;
    bool is_special(int32_t id) const override;

private:
    struct Merge { int32_t rank; int32_t result; };
    static uint64_t pair_key(int32_t a, int32_t b) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
    }

    void check_id(int32_t id) const;
    void encode_segment(std::string_view text, bool first_segment, std::vector<int32_t>& out) const;
    void encode_word(std::string_view word, std::vector<int32_t>& out) const;  // vocab-form text
    void initial_symbols(std::string_view word, std::vector<int32_t>& syms) const;
    void merge(std::vector<int32_t>& syms) const;

    BpeConfig cfg_;
    std::vector<std::string> pieces_;  // id -> vocab piece ("" for unused ids)
    std::vector<std::string> bytes_;   // id -> decoded bytes
    std::vector<uint8_t> special_;     // id -> special added token
    std::unordered_map<uint64_t, Merge> merges_;
    std::array<int32_t, 256> byte_ids_{};  // byte-level: byte -> id; metaspace: <0xNN> -> id
    std::unordered_map<std::string, int32_t> added_ids_;
    // Added tokens grouped by first byte, longest first, for leftmost-longest matching.
    std::array<std::vector<const AddedToken*>, 256> added_by_byte_;

    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace mnemo::tokenizer_detail
