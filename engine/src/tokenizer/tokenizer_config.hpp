// Small readers shared by the tokenizer loader and the chat-template detector, both of which
// look at tokenizer_config.json (or a GGUF file's tokenizer metadata).
#pragma once

#include <optional>
#include <string>

#include "mnemo/io/json.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo {

// bos_token / eos_token are written either as "<s>" or as {"content": "<s>", ...}.
inline std::optional<std::string> token_text(const json::Value& cfg, const char* key) {
    const json::Value* v = cfg.find(key);
    if (!v) return std::nullopt;
    if (v->is_string()) return v->as_string();
    if (v->is_object())
        if (const json::Value* c = v->find("content"); c && c->is_string()) return c->as_string();
    return std::nullopt;
}

// The chat format of a template text (chat_template.cpp): `bos` / `eos` are the texts of the
// model's BOS/EOS tokens, `where` names the template's place in the notes ("tokenizer_config.json").
ChatTemplate chat_template_from_source(const std::string& source, const std::string& bos, const std::string& eos,
                                       const std::string& where, std::string* note);

}  // namespace mnemo
