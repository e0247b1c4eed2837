#include "serve/api_response.hpp"

#include <cstring>
#include <random>

#include "app/json_writer.hpp"

namespace mnemo::serve {

namespace {

using app::JsonWriter;

void byte_array(JsonWriter& w, const std::string& bytes) {
    w.begin_array();
    for (unsigned char c : bytes) w.value(static_cast<int64_t>(c));
    w.end_array();
}

// Chat format: {"token", "logprob", "bytes", "top_logprobs": [...]}.
void chat_logprob(JsonWriter& w, const TokenLogprob& lp) {
    w.begin_object().key("token").value(lp.bytes).key("logprob").value(static_cast<double>(lp.logprob)).key("bytes");
    byte_array(w, lp.bytes);
    w.key("top_logprobs").begin_array();
    for (const auto& [bytes, logprob] : lp.top) {
        w.begin_object().key("token").value(bytes).key("logprob").value(static_cast<double>(logprob)).key("bytes");
        byte_array(w, bytes);
        w.end_object();
    }
    w.end_array().end_object();
}

void logprobs(JsonWriter& w, bool chat, const std::vector<const TokenLogprob*>& lps, size_t text_offset) {
    if (chat) {
        w.begin_object().key("content").begin_array();
        for (const TokenLogprob* lp : lps) chat_logprob(w, *lp);
        w.end_array().key("refusal").null().end_object();
        return;
    }
    // Legacy completions: parallel arrays.
    w.begin_object().key("tokens").begin_array();
    for (const TokenLogprob* lp : lps) w.value(lp->bytes);
    w.end_array().key("token_logprobs").begin_array();
    for (const TokenLogprob* lp : lps) w.value(static_cast<double>(lp->logprob));
    w.end_array().key("top_logprobs").begin_array();
    for (const TokenLogprob* lp : lps) {
        w.begin_object();
        for (const auto& [bytes, logprob] : lp->top) w.key(bytes).value(static_cast<double>(logprob));
        w.end_object();
    }
    w.end_array().key("text_offset").begin_array();
    for (const TokenLogprob* lp : lps) {
        w.value(static_cast<int64_t>(text_offset));
        text_offset += lp->bytes.size();
    }
    w.end_array().end_object();
}

void usage(JsonWriter& w, const Usage& u) {
    w.begin_object()
        .key("prompt_tokens").value(u.prompt_tokens)
        .key("completion_tokens").value(u.completion_tokens)
        .key("total_tokens").value(u.prompt_tokens + u.completion_tokens)
        .key("prompt_tokens_details").begin_object().key("cached_tokens").value(u.cached_tokens).end_object()
        .end_object();
}

double per_second(int32_t n, double ms) { return ms > 0 ? 1000.0 * n / ms : 0.0; }

void timings(JsonWriter& w, const Timings& t) {
    w.begin_object()
        .key("prompt_n").value(t.prompt_n)
        .key("prompt_ms").value(t.prompt_ms)
        .key("prompt_per_second").value(per_second(t.prompt_n, t.prompt_ms))
        .key("predicted_n").value(t.predicted_n)
        .key("predicted_ms").value(t.predicted_ms)
        .key("predicted_per_second").value(per_second(t.predicted_n, t.predicted_ms))
        .key("queued_ms").value(t.queued_ms)
        .end_object();
}

void references(JsonWriter& w, const std::vector<RetrievedReference>& refs) {
    w.begin_array();
    for (const RetrievedReference& r : refs) {
        w.begin_object().key("chunk").value(r.chunk).key("id").value(static_cast<int64_t>(r.id)).key("score");
        if (r.has_score) w.value(static_cast<double>(r.score)); else w.null();
        w.key("text").value(r.text).key("title").value(r.title).key("source").value(r.source);
        w.key("document");
        if (r.doc_id.empty()) w.null(); else w.value(r.doc_id);
        w.key("document_version");
        if (r.doc_version == 0) w.null(); else w.value(r.doc_version);
        w.end_object();
    }
    w.end_array();
}

void head(JsonWriter& w, const ResponseMeta& m, bool chunk) {
    const char* object = m.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    w.key("id").value(m.id).key("object").value(object).key("created").value(m.created).key("model").value(m.model);
    w.key("system_fingerprint").value("mnemo");
}

}  // namespace

std::string new_response_id(const char* prefix) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    static const char* hex = "0123456789abcdef";
    std::string id = prefix;
    for (int i = 0; i < 24; ++i) id += hex[rng() & 15];
    return id;
}

std::string error_json(const ApiError& e) {
    JsonWriter w;
    w.begin_object().key("error").begin_object().key("message").value(std::string(e.what())).key("type").value(e.type);
    w.key("param");
    if (e.param.empty()) w.null(); else w.value(e.param);
    w.key("code");
    if (e.code.empty()) w.null(); else w.value(e.code);
    w.end_object().end_object();
    return w.str();
}

std::string completion_json(const ResponseMeta& meta, const Answer& a) {
    JsonWriter w;
    w.begin_object();
    head(w, meta, false);
    w.key("choices").begin_array().begin_object().key("index").value(int64_t{0});
    if (meta.chat)
        w.key("message").begin_object().key("role").value("assistant").key("content").value(a.text).key("refusal").null().end_object();
    else
        w.key("text").value(a.text);
    w.key("logprobs");
    if (a.want_logprobs) {
        std::vector<const TokenLogprob*> lps;
        for (const TokenLogprob& lp : a.logprobs) lps.push_back(&lp);
        logprobs(w, meta.chat, lps, 0);
    } else {
        w.null();
    }
    w.key("finish_reason").value(finish_reason_name(a.finish)).end_object().end_array();
    w.key("usage");
    usage(w, a.usage);
    w.key("timings");
    timings(w, a.timings);
    if (a.reads_memories) {
        w.key("references");
        references(w, a.references);
    }
    w.end_object();
    return w.str();
}

std::string chunk_json(const ResponseMeta& meta, const Chunk& c) {
    JsonWriter w;
    w.begin_object();
    head(w, meta, true);
    w.key("choices").begin_array().begin_object().key("index").value(int64_t{0});
    if (meta.chat) {
        w.key("delta").begin_object();
        if (c.role) w.key("role").value("assistant");
        if (c.role || !c.text.empty() || c.finish == FinishReason::None) w.key("content").value(c.text);
        w.end_object();
    } else {
        w.key("text").value(c.text);
    }
    w.key("logprobs");
    if (c.logprob != nullptr) logprobs(w, meta.chat, {c.logprob}, 0); else w.null();
    w.key("finish_reason");
    if (c.finish == FinishReason::None) w.null(); else w.value(finish_reason_name(c.finish));
    w.end_object().end_array();
    if (c.usage_null) w.key("usage").null();
    if (c.timings != nullptr) {
        w.key("timings");
        timings(w, *c.timings);
    }
    if (c.references != nullptr) {
        w.key("references");
        references(w, *c.references);
    }
    w.end_object();
    return w.str();
}

std::string usage_chunk_json(const ResponseMeta& meta, const Usage& u) {
    JsonWriter w;
    w.begin_object();
    head(w, meta, true);
    w.key("choices").begin_array().end_array().key("usage");
    usage(w, u);
    w.end_object();
    return w.str();
}

namespace {

void model_object(JsonWriter& w, const std::string& model, int64_t created) {
    w.begin_object().key("id").value(model).key("object").value("model").key("created").value(created).key("owned_by").value("mnemo");
    w.end_object();
}

}  // namespace

std::string model_json(const std::string& model, int64_t created) {
    JsonWriter w;
    model_object(w, model, created);
    return w.str();
}

std::string models_json(const std::string& model, int64_t created) {
    JsonWriter w;
    w.begin_object().key("object").value("list").key("data").begin_array();
    model_object(w, model, created);
    w.end_array().end_object();
    return w.str();
}

namespace {

std::string base64_floats(const std::vector<float>& v) {
    static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string bytes(v.size() * 4, '\0');
    for (size_t i = 0; i < v.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, &v[i], 4);
        for (int b = 0; b < 4; ++b) bytes[i * 4 + static_cast<size_t>(b)] = static_cast<char>((u >> (8 * b)) & 0xFF);  // little-endian
    }
    std::string out;
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16) |
                           (i + 1 < bytes.size() ? static_cast<uint8_t>(bytes[i + 1]) << 8 : 0) |
                           (i + 2 < bytes.size() ? static_cast<uint8_t>(bytes[i + 2]) : 0);
        out += kAlphabet[(n >> 18) & 63];
        out += kAlphabet[(n >> 12) & 63];
        out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
        out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
    }
    return out;
}

}  // namespace

std::string embeddings_json(const std::string& model, const std::vector<std::vector<float>>& vectors, int32_t prompt_tokens,
                            bool base64) {
    JsonWriter w;
    w.begin_object().key("object").value("list").key("data").begin_array();
    for (size_t i = 0; i < vectors.size(); ++i) {
        w.begin_object().key("object").value("embedding").key("index").value(static_cast<int64_t>(i)).key("embedding");
        if (base64) {
            w.value(base64_floats(vectors[i]));
        } else {
            w.begin_array();
            for (float f : vectors[i]) w.value(static_cast<double>(f));
            w.end_array();
        }
        w.end_object();
    }
    w.end_array().key("model").value(model).key("usage").begin_object().key("prompt_tokens").value(prompt_tokens);
    w.key("total_tokens").value(prompt_tokens).end_object().end_object();
    return w.str();
}

std::string sse_event(const std::string& json) { return "data: " + json + "\n\n"; }

}  // namespace mnemo::serve
