// A prompt as the model reads it: the tokenizer's BOS (when it asks for one) and the encoded
// text, checked against the context. Shared by `mnemo run`, `mnemo eval` and `mnemo serve`, so an evaluation
// scores exactly what `mnemo run` would generate for the same prompt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::app {

// BOS (when the tokenizer adds one and `add_bos`) + the encoded text. A text that already starts
// with the BOS text (a chat template writes it) keeps a single BOS. `parse_special` reads
// special-token text ("<|eot_id|>") as those tokens. Throws mnemo::Error when non-empty text
// encodes to no tokens at all (a vocabulary without them).
std::vector<int32_t> prompt_tokens(const Tokenizer& tok, const std::string& text, bool add_bos, bool parse_special);

// Throws mnemo::Error unless the prompt leaves room for at least one generated token in a
// context of n_ctx tokens; `what` names the prompt ("prompt", "questions.jsonl: line 3").
void check_room_to_generate(size_t prompt_tokens, int32_t n_ctx, const std::string& what);

}  // namespace mnemo::app
