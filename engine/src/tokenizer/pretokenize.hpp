// Pre-tokenization for byte-level BPE: the regex splits that GPT-2, Llama-3 / OLMo-2 and Qwen2
// tokenizer.json files declare, and the sequences of splits that GGUF files name in
// tokenizer.ggml.pre (llama.cpp's pre-tokenizer types), implemented as hand-written matchers
// (std::regex has no \p{..}), and GPT-2's byte <-> printable-character mapping.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mnemo::tokenizer_detail {

enum class SplitPattern {
    None,    // the whole segment is one word
    Gpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    Llama3,  // (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|...
    Qwen2,   // as Llama3 but \p{N} one digit at a time
    // Sequences of splits (GGUF tokenizer.ggml.pre). Each step cuts every piece the step before
    // left into its matches and the text between them (both kept), as llama.cpp applies the
    // regex lists of its pre-tokenizer types:
    Default,        // [\p{P}$+<=>^~|]+ ; GPT-2 ; \p{N}+ ; [0-9][0-9][0-9]       ("default")
    Starcoder,      // \p{N} ; GPT-2                             ("starcoder", "refact", ...)
    Falcon,         // [\p{P}$+<=>^~|`]+ ; GPT-2 ; [0-9][0-9][0-9]                 ("falcon")
    DeepseekCoder,  // [\r\n] ; \s?\p{L}+ ; \s?\p{P}+ ; [U+4E00-U+9FA5 U+0800-U+4E00
                    // U+AC00-U+D7FF]+ ; \p{N}                               ("deepseek-coder")
};

// The exact regex text of each supported single-regex pattern, as written in tokenizer.json
// (after JSON unescaping). Returns nullopt for any other text. split_pattern_regex() gives that
// text back, and for the sequences their steps separated by " ; " (for messages only).
std::optional<SplitPattern> recognise_split_pattern(std::string_view regex);
const char* split_pattern_regex(SplitPattern p);

// Split `text` into the consecutive pieces the pattern's findall would return. Every byte of the
// input belongs to exactly one piece (these patterns match everything), so concatenating the
// pieces gives the input back. Invalid UTF-8 bytes count as punctuation-like characters.
std::vector<std::string_view> split_words(std::string_view text, SplitPattern pattern);

// GPT-2's reversible byte -> code point map (printable bytes map to themselves, the rest to
// U+0100 and up), as UTF-8 text.
const std::string& byte_to_unicode(unsigned char b);
// Inverse: code point -> byte, or -1 when the code point is not in the map.
int unicode_to_byte(char32_t cp);

}  // namespace mnemo::tokenizer_detail
