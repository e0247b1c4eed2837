// Tokenizers: byte-level BPE from tokenizer.json (GPT-2 / Llama-3 / OLMo / Qwen style),
// SentencePiece tokenizer.model (through Debian's libsentencepiece) and the tokenizer.ggml.* metadata
// of a GGUF file (docs/gguf.md, "Tokenizer"). All give the same interface.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "mnemo/api.hpp"

namespace mnemo {

class GgufFile;

class MNEMO_API Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Text -> ids. Special/added tokens written literally in the text ("<|eot_id|>") are matched
    // when parse_special is true, else they are tokenized as ordinary text.
    virtual std::vector<int32_t> encode(std::string_view text, bool parse_special) const = 0;
    // Raw bytes of one token as it contributes to the decoded text (may be part of a UTF-8
    // character for byte-level tokens; SentencePiece "▁" becomes a space, byte-fallback <0xNN>
    // becomes that byte). Special tokens give their literal text.
    virtual std::string token_bytes(int32_t id) const = 0;
    // Whole-sequence decode (handles leading-space rules of SentencePiece).
    virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special) const = 0;

    virtual int32_t vocab_size() const = 0;
    virtual std::optional<int32_t> token_id(std::string_view piece) const = 0;  // exact piece
    virtual bool is_special(int32_t id) const = 0;

    std::optional<int32_t> bos_id;  // from tokenizer_config.json / model when known
    std::optional<int32_t> eos_id;
    std::vector<int32_t> eos_ids;   // every id that ends generation (eos + eot...)
    bool add_bos = false;           // prepend bos when encoding a prompt
    bool add_eos = false;           // append eos to an encoded text (GGUF tokenizer.ggml.add_eos_token)
};

// Loads from a model folder: tokenizer.json (preferred) or tokenizer.model, plus
// tokenizer_config.json / config.json for bos/eos/add_bos; or, when `model_dir` is a GGUF file
// (it starts with the GGUF magic), from that file's metadata (load_gguf_tokenizer). Errors name
// the file and field.
MNEMO_API std::unique_ptr<Tokenizer> load_tokenizer(const std::string& model_dir);

// Exposed for tests and the fuzz target: parse a tokenizer.json document.
MNEMO_API std::unique_ptr<Tokenizer> load_bpe_tokenizer_json(std::string_view json_text,
                                                   const std::string& source);
MNEMO_API std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& model_path);
// False (with the reason) when this build cannot load SentencePiece models at all: a sanitized
// build that also holds the gRPC client (engine/src/tokenizer/sentencepiece.cpp says why).
MNEMO_API bool sentencepiece_supported(std::string* reason);

// Streaming detokenizer: feed ids one at a time, get back only complete UTF-8 text; bytes of a
// partial character wait for the next token. finish() flushes what remains (invalid bytes become
// U+FFFD).
class MNEMO_API StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tok, bool skip_special = true);
    std::string push(int32_t id);
    std::string finish();

private:
    const Tokenizer& tok_;
    bool skip_special_;
    std::string pending_;
    bool first_ = true;
};

// Chat templates of the families we load, chosen from tokenizer_config.json's "chat_template"
// text (recognised by its markers) or by model_type.
enum class ChatFormat { Raw, Llama3, ChatML, Olmo, Llama2, Plain };

struct ChatMessage {
    std::string role;  // "system", "user", "assistant"
    std::string content;
};

struct MNEMO_API ChatTemplate {
    ChatFormat format = ChatFormat::Raw;
    std::string name;        // "llama3", "chatml", ... for messages
    std::string bos_text;    // literal BOS text the template starts with, if any
    std::vector<std::string> stop_strings;  // end-of-turn markers
    // Render messages and, when add_generation_prompt, the assistant header.
    std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
    // The same as token ids, with the assistant header at the end: a BOS token first when the
    // tokenizer adds one and the rendered text does not already start with the BOS text.
    std::vector<int32_t> render_tokens(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages) const;
    // The same, and where each user turn after the first begins in those ids (increasing
    // offsets): the segments a conversation's retrieval keeps apart (Session::append). A turn
    // begins where a chat feeds it: after the previous answer's text, at its end-of-turn marker
    // (a stop string). A turn whose rendered prefix does not tokenize as a prefix of the whole
    // is left out.
    std::vector<int32_t> render_tokens(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                       std::vector<int32_t>& turn_starts) const;
};

// Detect the template for a model folder, or a GGUF file (its tokenizer.chat_template). `note`
// receives a human-readable reason when falling back to Raw ("unknown chat_template in
// tokenizer_config.json; using raw mode").
MNEMO_API ChatTemplate detect_chat_template(const std::string& model_dir, std::string* note);

// A GGUF file's tokenizer (tokenizer.ggml.*: "llama" SentencePiece vocabularies with scores and
// byte fallback, "gpt2" byte-level BPE with the pre-tokenizer tokenizer.ggml.pre names; special,
// control and user-defined tokens; bos/eos/eot/eom ids, add-BOS/EOS flags). A vocab-only file
// (no tensors) is enough. Every missing or malformed key is a mnemo::Error naming the file and
// the key. The keys and what Mnemo does with each: docs/gguf.md, section "Tokenizer".
MNEMO_API std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& file);
// The chat format of the file's tokenizer.chat_template (Plain when there is none).
MNEMO_API ChatTemplate gguf_chat_template(const GgufFile& file, std::string* note);

}  // namespace mnemo
