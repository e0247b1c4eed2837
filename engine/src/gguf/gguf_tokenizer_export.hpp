// A model folder's tokenizer as GGUF metadata (tokenizer.ggml.*, tokenizer.chat_template), so that
// the GGUF files convert_to_gguf writes tokenize on their own, in Mnemo and in llama.cpp. The keys
// and what each means: docs/gguf.md, section "Tokenizer".
#pragma once

#include <string>

#include "mnemo/io/gguf.hpp"

namespace mnemo::detail {

// The tokenizer keys for the folder's tokenizer, in the order llama.cpp's converter writes them:
//   * tokenizer.model (SentencePiece BPE without a normalizer) -> model "llama": pieces, scores,
//     token types, add_space_prefix (the model's add_dummy_prefix);
//   * tokenizer.json (byte-level BPE) -> model "gpt2": the vocabulary by id, the merges as
//     "left right", added tokens as control (special) or user-defined (3 / 4) tokens, and
//     tokenizer.ggml.pre named from the split pattern (GPT-2 "gpt-2", Llama-3 "llama-bpe" or
//     "smaug-bpe" without ignore_merges, Qwen2 "qwen2").
// A folder holding both reads tokenizer.json as load_tokenizer() does, except a SentencePiece-style
// (Metaspace) tokenizer.json, whose pieces' scores only tokenizer.model has: then the pieces come
// from tokenizer.model and the added tokens' types from tokenizer.json. BOS / EOS / unknown /
// padding ids, add_bos_token and add_eos_token follow config.json and tokenizer_config.json as
// load_tokenizer() reads them; the chat template is tokenizer_config.json's. The vocabulary is
// padded with unused "[PAD<id>]" tokens up to config.json's vocab_size (the rows of the embedding,
// which llama.cpp requires the vocabulary to match).
// A folder without tokenizer.json and tokenizer.model gives no keys. What a GGUF vocabulary cannot
// say is an error naming the file and the field: a SentencePiece unigram model, or one that
// normalizes (a normalizer other than identity, collapsing whitespace); a byte-level tokenizer.json
// without a split pattern GGUF names, or with add_prefix_space. Not carried, as in llama.cpp: the
// NFC normalizer of a tokenizer.json (text already in NFC tokenizes the same), added tokens'
// lstrip / rstrip, and end-of-sequence ids beyond the first one config.json lists.
GgufMetadata tokenizer_gguf_metadata(const std::string& model_dir);

}  // namespace mnemo::detail
