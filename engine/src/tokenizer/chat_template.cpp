// Chat formats. Mnemo does not run Jinja: it recognises which family a tokenizer_config.json
// "chat_template" belongs to by its marker tokens and renders that family's official template in
// C++ (the outputs are checked against the official templates' text in tests/test_chat_template.cpp).
//
// BOS convention: render() never emits the BOS token. A template that starts with {{ bos_token }}
// reports it in `bos_text` instead, and the caller gets the BOS from the tokenizer (add_bos /
// bos_id) when encoding the rendered prompt, so it appears exactly once. A caller that builds raw
// text without the tokenizer may prepend bos_text itself. Later literal BOS/EOS texts inside the
// rendering (Llama-2 repeats "<s>" per turn) must be encoded with parse_special = true.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "mnemo/error.hpp"
#include "mnemo/io/gguf.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_config.hpp"

namespace mnemo {
namespace {

namespace fs = std::filesystem;

std::string trim(std::string_view s) {  // Jinja's |trim / Python's str.strip() on ASCII space
    const char* ws = " \t\n\r\f\v";
    const size_t b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    const size_t e = s.find_last_not_of(ws);
    return std::string(s.substr(b, e - b + 1));
}

std::string render_llama3(const std::vector<ChatMessage>& msgs, bool gen) {
    std::string out;
    for (const auto& m : msgs)
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) +
               "<|eot_id|>";
    if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

std::string render_chatml(const std::vector<ChatMessage>& msgs, bool gen) {
    std::string out;
    for (const auto& m : msgs) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (gen) out += "<|im_start|>assistant\n";
    return out;
}

std::string render_olmo(const std::vector<ChatMessage>& msgs, bool gen, const std::string& eos) {
    std::string out;
    for (size_t i = 0; i < msgs.size(); ++i) {
        const auto& m = msgs[i];
        const bool last = i + 1 == msgs.size();
        if (m.role == "system") out += "<|system|>\n" + m.content + "\n";
        else if (m.role == "user") out += "<|user|>\n" + m.content + "\n";
        else if (m.role == "assistant")
            out += "<|assistant|>\n" + m.content + eos + (last ? "" : "\n");
        if (last && gen) out += "<|assistant|>\n";
    }
    return out;
}

std::string render_llama2(const std::vector<ChatMessage>& msgs, const std::string& bos,
                          const std::string& eos) {
    size_t first = 0;
    std::string system;
    bool has_system = false;
    if (!msgs.empty() && msgs[0].role == "system") {
        system = msgs[0].content;
        has_system = true;
        first = 1;
    }
    std::string out;
    for (size_t i = first; i < msgs.size(); ++i) {
        const auto& m = msgs[i];
        const bool expect_user = (i - first) % 2 == 0;
        if ((m.role == "user") != expect_user)
            throw Error("chat template llama2: conversation roles must alternate "
                        "user/assistant/user/... (message " + std::to_string(i) + " is '" +
                        m.role + "')");
        std::string content = m.content;
        if (i == first && has_system)
            content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
        if (m.role == "user") {
            // The first BOS is the tokenizer's (see the BOS convention above).
            if (i != first) out += bos;
            out += "[INST] ";
            out += trim(content);
            out += " [/INST]";
        } else {
            out += ' ';
            out += trim(content);
            out += ' ';
            out += eos;
        }
    }
    return out;
}

std::string render_plain(const std::vector<ChatMessage>& msgs, bool gen) {
    std::string out;
    for (const auto& m : msgs) {
        std::string role = m.role;
        if (!role.empty()) role[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(role[0])));
        out += role + ": " + m.content + "\n";
    }
    if (gen) out += "Assistant:";
    return out;
}

}  // namespace

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt) const {
    switch (format) {
        case ChatFormat::Llama3: return render_llama3(messages, add_generation_prompt);
        case ChatFormat::ChatML: return render_chatml(messages, add_generation_prompt);
        case ChatFormat::Olmo:
            return render_olmo(messages, add_generation_prompt,
                               stop_strings.empty() ? std::string() : stop_strings[0]);
        case ChatFormat::Llama2:
            return render_llama2(messages, bos_text,
                                 stop_strings.empty() ? std::string() : stop_strings[0]);
        case ChatFormat::Plain: return render_plain(messages, add_generation_prompt);
        case ChatFormat::Raw: break;
    }
    // Raw: the model continues the text itself.
    std::string out;
    for (const auto& m : messages) out += m.content;
    return out;
}

namespace {

std::vector<int32_t> encode_rendered(const ChatTemplate& t, const Tokenizer& tokenizer, const std::string& text) {
    std::vector<int32_t> ids;
    const bool text_has_bos = !t.bos_text.empty() && text.rfind(t.bos_text, 0) == 0;
    if (tokenizer.add_bos && tokenizer.bos_id && !text_has_bos) ids.push_back(*tokenizer.bos_id);
    for (int32_t id : tokenizer.encode(text, /*parse_special=*/true)) ids.push_back(id);
    return ids;
}

}  // namespace

std::vector<int32_t> ChatTemplate::render_tokens(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages) const {
    return encode_rendered(*this, tokenizer, render(messages, /*add_generation_prompt=*/true));
}

std::vector<int32_t> ChatTemplate::render_tokens(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                                 std::vector<int32_t>& turn_starts) const {
    std::vector<int32_t> ids = render_tokens(tokenizer, messages);
    turn_starts.clear();
    bool seen_user = false;
    for (size_t k = 0; k < messages.size(); ++k) {
        if (messages[k].role != "user") continue;
        if (!seen_user) {  // the first turn starts with the conversation
            seen_user = true;
            continue;
        }
        // The conversation before this turn, as a template renders a finished exchange, up to
        // where an answer's generation stopped (its end-of-turn marker): a chat feeds the turn
        // from there, so the turn's retrieval text is the same fed at once or turn by turn.
        const std::vector<ChatMessage> before(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(k));
        std::string text = render(before, /*add_generation_prompt=*/false);
        if (messages[k - 1].role == "assistant") {
            size_t cut = std::string::npos;
            for (const std::string& stop : stop_strings) {
                const size_t at = stop.empty() ? std::string::npos : text.rfind(stop);
                if (at != std::string::npos && (cut == std::string::npos || at > cut)) cut = at;
            }
            if (cut != std::string::npos) text.resize(cut);
        }
        const std::vector<int32_t> prefix = encode_rendered(*this, tokenizer, text);
        const bool is_prefix = prefix.size() < ids.size() && std::equal(prefix.begin(), prefix.end(), ids.begin());
        if (is_prefix && (turn_starts.empty() || static_cast<int32_t>(prefix.size()) > turn_starts.back()))
            turn_starts.push_back(static_cast<int32_t>(prefix.size()));
    }
    return ids;
}

ChatTemplate detect_chat_template(const std::string& model_dir, std::string* note) {
    if (note) note->clear();
    if (looks_like_gguf(model_dir)) return gguf_chat_template(GgufFile(model_dir), note);
    const fs::path tc = fs::path(model_dir) / "tokenizer_config.json";
    std::optional<json::Value> cfg;
    if (fs::exists(tc)) cfg = json::parse_file(tc.string());

    std::string source;
    if (cfg) {
        if (const json::Value* ct = cfg->find("chat_template")) {
            if (ct->is_string()) {
                source = ct->as_string();
            } else if (ct->is_array()) {
                // Several named templates: the "default" one is the chat template.
                for (const auto& item : ct->as_array()) {
                    const json::Value* name = item.find("name");
                    const json::Value* text = item.find("template");
                    if (name && name->is_string() && name->as_string() == "default" && text &&
                        text->is_string())
                        source = text->as_string();
                }
            } else if (!ct->is_null()) {
                throw Error(tc.string() + ": chat_template: expected a string or a list of "
                            "{name, template}");
            }
        }
    }
    const std::string bos = cfg ? token_text(*cfg, "bos_token").value_or("") : "";
    const std::string eos = cfg ? token_text(*cfg, "eos_token").value_or("") : "";
    return chat_template_from_source(source, bos, eos, "tokenizer_config.json", note);
}

ChatTemplate chat_template_from_source(const std::string& source, const std::string& bos, const std::string& eos,
                                       const std::string& where, std::string* note) {
    auto say = [&](const std::string& s) { if (note) *note = s; };
    if (note) note->clear();
    ChatTemplate t;
    if (source.empty()) {
        t.format = ChatFormat::Plain;
        t.name = "plain";
        t.stop_strings = {"\nUser:"};
        say("no chat template in " + where + "; using a plain 'User: ... / Assistant:' format");
        return t;
    }
    const bool uses_bos = source.find("bos_token") != std::string::npos;
    if (source.find("<|start_header_id|>") != std::string::npos) {
        t.format = ChatFormat::Llama3;
        t.name = "llama3";
        t.bos_text = uses_bos ? (bos.empty() ? "<|begin_of_text|>" : bos) : "";
        t.stop_strings = {"<|eot_id|>"};
    } else if (source.find("<|im_start|>") != std::string::npos) {
        t.format = ChatFormat::ChatML;
        t.name = "chatml";
        t.bos_text = uses_bos ? bos : "";
        t.stop_strings = {"<|im_end|>"};
    } else if (source.find("<|user|>") != std::string::npos &&
               source.find("<|assistant|>") != std::string::npos) {
        t.format = ChatFormat::Olmo;
        t.name = "olmo";
        t.bos_text = uses_bos ? bos : "";
        // The template closes assistant turns with eos_token: that is the stop marker.
        t.stop_strings = {eos.empty() ? "<|endoftext|>" : eos};
    } else if (source.find("[INST]") != std::string::npos) {
        t.format = ChatFormat::Llama2;
        t.name = "llama2";
        t.bos_text = bos.empty() ? "<s>" : bos;
        t.stop_strings = {eos.empty() ? "</s>" : eos};
    } else {
        t.format = ChatFormat::Raw;
        t.name = "raw";
        say(where + " has a chat template Mnemo does not recognise; chatting in raw mode");
    }
    return t;
}

}  // namespace mnemo
