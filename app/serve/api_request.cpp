#include "serve/api_request.hpp"

#include <cmath>

#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"

namespace mnemo::serve {

namespace {

using json::Type;
using json::Value;

std::string type_of(const Value& v) { return json::type_name(v.type()); }

ApiError wrong_type(const std::string& field, const char* expected, const Value& v) {
    return bad_request("'" + field + "' must be " + expected + ", not " + type_of(v), field);
}

Value parse_body(std::string_view body) {
    if (body.empty()) throw bad_request("the request has no body: expected a JSON object");
    Value root;
    try {
        root = json::parse(body, "request body");
    } catch (const Error& e) {
        throw bad_request(std::string("the request body is not valid JSON: ") + e.what(), {}, "invalid_json");
    }
    if (!root.is_object()) throw bad_request("the request body must be a JSON object, not " + type_of(root));
    return root;
}

const Value* field(const Value& root, const char* name) {
    const Value* v = root.find(name);
    return v != nullptr && !v->is_null() ? v : nullptr;  // null means absent, as OpenAI reads it
}

double number(const Value& root, const char* name, double def, double lo, double hi) {
    const Value* v = field(root, name);
    if (v == nullptr) return def;
    if (!v->is_number()) throw wrong_type(name, "a number", *v);
    const double d = v->as_double();
    if (!std::isfinite(d) || d < lo || d > hi)
        throw bad_request("'" + std::string(name) + "' is " + v->dump() + ", outside " + Value::make_number(lo, false, 0).dump() +
                              ".." + Value::make_number(hi, false, 0).dump(),
                          name);
    return d;
}

std::optional<int64_t> integer(const Value& root, const char* name, int64_t lo, int64_t hi) {
    const Value* v = field(root, name);
    if (v == nullptr) return std::nullopt;
    if (!v->is_integer()) throw wrong_type(name, "an integer", *v);
    const int64_t i = v->as_int();
    if (i < lo || i > hi)
        throw bad_request("'" + std::string(name) + "' is " + std::to_string(i) + ", outside " + std::to_string(lo) + ".." +
                              std::to_string(hi),
                          name);
    return i;
}

bool boolean(const Value& root, const char* name, bool def) {
    const Value* v = field(root, name);
    if (v == nullptr) return def;
    if (!v->is_bool()) throw wrong_type(name, "a boolean", *v);
    return v->as_bool();
}

std::string string_field(const Value& root, const char* name) {
    const Value* v = field(root, name);
    if (v == nullptr) return {};
    if (!v->is_string()) throw wrong_type(name, "a string", *v);
    return v->as_string();
}

std::vector<std::string> stop_strings(const Value& root, const RequestLimits& limits) {
    const Value* v = field(root, "stop");
    std::vector<std::string> out;
    if (v == nullptr) return out;
    if (v->is_string()) {
        out.push_back(v->as_string());
    } else if (v->is_array()) {
        for (size_t i = 0; i < v->as_array().size(); ++i) {
            const Value& s = v->as_array()[i];
            if (!s.is_string()) throw wrong_type("stop." + std::to_string(i), "a string", s);
            out.push_back(s.as_string());
        }
    } else {
        throw wrong_type("stop", "a string or an array of strings", *v);
    }
    if (out.size() > limits.max_stop)
        throw bad_request("'stop' has " + std::to_string(out.size()) + " strings, at most " + std::to_string(limits.max_stop) +
                              " are accepted",
                          "stop");
    for (const std::string& s : out) {
        if (s.empty()) throw bad_request("'stop' holds an empty string", "stop");
        if (s.size() > limits.max_stop_bytes)
            throw bad_request("a 'stop' string has " + std::to_string(s.size()) + " bytes, at most " +
                                  std::to_string(limits.max_stop_bytes) + " are accepted",
                              "stop");
    }
    return out;
}

// Fields every generating endpoint shares. `logprobs_field` differs: chat has logprobs (bool)
// with top_logprobs, completions logprobs (an integer).
GenerationRequest generation(const Value& root, const RequestLimits& limits, bool chat) {
    GenerationRequest g;
    if (const auto n = integer(root, "n", 1, 128); n && *n != 1)
        throw bad_request("'n' is " + std::to_string(*n) + ": this server makes one choice per request (n = 1)", "n");
    if (const Value* b = field(root, "best_of"); b != nullptr && !(b->is_integer() && b->as_int() == 1))
        throw bad_request("'best_of' other than 1 is not supported", "best_of");
    for (const char* unsupported : {"tools", "functions", "tool_choice", "function_call"}) {
        const Value* v = field(root, unsupported);
        if (v != nullptr && !(v->is_array() && v->size() == 0) && !(v->is_string() && v->as_string() == "none"))
            throw bad_request(std::string("'") + unsupported + "' is not supported: this server has no tool calling", unsupported);
    }
    if (const Value* rf = field(root, "response_format"); rf != nullptr) {
        const Value* t = rf->is_object() ? rf->find("type") : nullptr;
        if (t == nullptr || !t->is_string() || t->as_string() != "text")
            throw bad_request("'response_format' other than {\"type\": \"text\"} is not supported (no constrained decoding)",
                              "response_format");
    }
    g.sampling.temperature = static_cast<float>(number(root, "temperature", 1.0, 0.0, 2.0));
    g.sampling.top_p = static_cast<float>(number(root, "top_p", 1.0, 0.0, 1.0));
    g.sampling.top_k = static_cast<int32_t>(integer(root, "top_k", 0, 1 << 20).value_or(0));
    g.sampling.min_p = static_cast<float>(number(root, "min_p", 0.0, 0.0, 1.0));
    g.sampling.repeat_penalty = static_cast<float>(number(root, "repeat_penalty", 1.0, 0.0, 10.0));
    if (const auto seed = integer(root, "seed", INT64_MIN, INT64_MAX)) {
        g.sampling.seed = static_cast<uint64_t>(*seed);
        g.seeded = true;
    }
    std::optional<int64_t> max_tokens = integer(root, "max_tokens", 1, limits.max_tokens);
    if (chat) {
        if (auto m = integer(root, "max_completion_tokens", 1, limits.max_tokens)) max_tokens = m;
    }
    if (max_tokens) g.max_tokens = static_cast<int32_t>(*max_tokens);
    g.stop = stop_strings(root, limits);
    if (chat) {
        const bool want = boolean(root, "logprobs", false);
        const auto top = integer(root, "top_logprobs", 0, limits.max_top_logprobs);
        if (top && !want) throw bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
        if (want) g.top_logprobs = static_cast<int32_t>(top.value_or(0));
    } else {
        if (const auto lp = integer(root, "logprobs", 0, std::min(5, limits.max_top_logprobs)))
            g.top_logprobs = static_cast<int32_t>(*lp);
    }
    g.stream = boolean(root, "stream", false);
    g.ignore_eos = boolean(root, "ignore_eos", false);
    if (g.ignore_eos && !g.max_tokens) throw bad_request("'ignore_eos' needs 'max_tokens'", "ignore_eos");
    if (field(root, "grounded")) g.grounded = boolean(root, "grounded", false);
    if (const Value* so = field(root, "stream_options")) {
        if (!so->is_object()) throw wrong_type("stream_options", "an object", *so);
        if (!g.stream) throw bad_request("'stream_options' is only allowed with 'stream': true", "stream_options");
        g.include_usage = boolean(*so, "include_usage", false);
    }
    return g;
}

// A message's content: a string, or an array of text parts ({"type": "text", "text": ...}).
std::string message_content(const Value& content, const std::string& where) {
    if (content.is_string()) return content.as_string();
    if (!content.is_array()) throw wrong_type(where, "a string or an array of text parts", content);
    std::string text;
    for (size_t i = 0; i < content.as_array().size(); ++i) {
        const Value& part = content.as_array()[i];
        const std::string at = where + "." + std::to_string(i);
        if (!part.is_object()) throw wrong_type(at, "an object", part);
        const std::string type = string_field(part, "type");
        if (type != "text") throw bad_request("'" + at + ".type' is '" + type + "': only text parts are supported", at + ".type");
        const Value* t = part.find("text");
        if (t == nullptr || !t->is_string()) throw bad_request("'" + at + ".text' must be a string", at + ".text");
        text += t->as_string();
    }
    return text;
}

}  // namespace

ChatRequest parse_chat_request(std::string_view body, const RequestLimits& limits) {
    const Value root = parse_body(body);
    ChatRequest r;
    r.model = string_field(root, "model");
    const Value* msgs = field(root, "messages");
    if (msgs == nullptr) throw bad_request("'messages' is required", "messages");
    if (!msgs->is_array()) throw wrong_type("messages", "an array", *msgs);
    if (msgs->size() == 0) throw bad_request("'messages' is empty: at least one message is needed", "messages");
    if (msgs->size() > limits.max_messages)
        throw bad_request("'messages' holds " + std::to_string(msgs->size()) + " messages, at most " +
                              std::to_string(limits.max_messages) + " are accepted",
                          "messages");
    for (size_t i = 0; i < msgs->as_array().size(); ++i) {
        const Value& m = msgs->as_array()[i];
        const std::string at = "messages." + std::to_string(i);
        if (!m.is_object()) throw wrong_type(at, "an object", m);
        const Value* role = m.find("role");
        if (role == nullptr || !role->is_string()) throw bad_request("'" + at + ".role' must be a string", at + ".role");
        std::string name = role->as_string();
        if (name == "developer") name = "system";  // OpenAI's newer name for the system message
        if (name != "system" && name != "user" && name != "assistant")
            throw bad_request("'" + at + ".role' is '" + role->as_string() + "': expected system, developer, user or assistant",
                              at + ".role");
        const Value* content = m.find("content");
        if (content == nullptr || content->is_null()) {
            throw bad_request("'" + at + ".content' is required", at + ".content");
        }
        r.messages.push_back({name, message_content(*content, at + ".content")});
    }
    r.gen = generation(root, limits, /*chat=*/true);
    return r;
}

CompletionRequest parse_completion_request(std::string_view body, const RequestLimits& limits) {
    const Value root = parse_body(body);
    CompletionRequest r;
    r.model = string_field(root, "model");
    const Value* p = field(root, "prompt");
    if (p == nullptr) throw bad_request("'prompt' is required", "prompt");
    if (p->is_string()) {
        r.prompt = p->as_string();
    } else if (p->is_array() && p->size() == 1 && p->as_array()[0].is_string()) {
        r.prompt = p->as_array()[0].as_string();
    } else {
        throw bad_request("'prompt' must be a string (or an array of one string): one prompt per request", "prompt");
    }
    r.echo = boolean(root, "echo", false);
    if (const Value* s = field(root, "suffix"); s != nullptr && !(s->is_string() && s->as_string().empty()))
        throw bad_request("'suffix' (fill-in-the-middle) is not supported", "suffix");
    r.gen = generation(root, limits, /*chat=*/false);
    return r;
}

EmbeddingRequest parse_embedding_request(std::string_view body, const RequestLimits& limits) {
    const Value root = parse_body(body);
    EmbeddingRequest r;
    r.model = string_field(root, "model");
    const Value* in = field(root, "input");
    if (in == nullptr) throw bad_request("'input' is required", "input");
    if (in->is_string()) {
        r.inputs.push_back(in->as_string());
    } else if (in->is_array()) {
        r.input_was_array = true;
        for (size_t i = 0; i < in->as_array().size(); ++i) {
            const Value& s = in->as_array()[i];
            if (!s.is_string()) throw wrong_type("input." + std::to_string(i), "a string (token arrays are not accepted)", s);
            r.inputs.push_back(s.as_string());
        }
    } else {
        throw wrong_type("input", "a string or an array of strings", *in);
    }
    if (r.inputs.empty()) throw bad_request("'input' is empty", "input");
    if (r.inputs.size() > limits.max_inputs)
        throw bad_request("'input' holds " + std::to_string(r.inputs.size()) + " texts, at most " +
                              std::to_string(limits.max_inputs) + " are accepted",
                          "input");
    for (size_t i = 0; i < r.inputs.size(); ++i)
        if (r.inputs[i].empty()) throw bad_request("'input." + std::to_string(i) + "' is an empty string", "input");
    const std::string format = string_field(root, "encoding_format");
    if (!format.empty() && format != "float" && format != "base64")
        throw bad_request("'encoding_format' is '" + format + "': expected float or base64", "encoding_format");
    r.base64 = format == "base64";
    return r;
}

}  // namespace mnemo::serve
