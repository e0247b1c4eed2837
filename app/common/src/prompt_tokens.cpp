#include "app/prompt_tokens.hpp"

#include "mnemo/error.hpp"

namespace mnemo::app {

std::vector<int32_t> prompt_tokens(const Tokenizer& tok, const std::string& text, bool add_bos, bool parse_special) {
    std::vector<int32_t> ids;
    if (tok.add_bos && add_bos && tok.bos_id) ids.push_back(*tok.bos_id);
    const std::vector<int32_t> encoded = tok.encode(text, parse_special);
    // The encoder drops what its vocabulary has no token for; text that leaves nothing behind
    // would run the model on a lone BOS and print an answer to a question never asked.
    if (!text.empty() && encoded.empty())
        throw Error("the prompt's " + std::to_string(text.size()) +
                    " bytes of text encode to no tokens: the tokenizer has no token for any of it");
    const bool starts_with_bos = !ids.empty() && !encoded.empty() && encoded.front() == ids.front();
    ids.insert(ids.end(), encoded.begin() + (starts_with_bos ? 1 : 0), encoded.end());
    return ids;
}

void check_room_to_generate(size_t prompt_tokens, int32_t n_ctx, const std::string& what) {
    if (static_cast<int64_t>(prompt_tokens) >= n_ctx) {
        throw Error(what + " has " + std::to_string(prompt_tokens) + " tokens but the context holds " +
                    std::to_string(n_ctx) + " (-c), leaving no room to generate");
    }
}

}  // namespace mnemo::app
