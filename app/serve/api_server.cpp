#include "serve/api_server.hpp"

#include <httplib.h>

#include <sys/socket.h>

#include <chrono>
#include <random>

#include "serve/api_response.hpp"
#include "app/chat_cache.hpp"
#include "app/prompt_tokens.hpp"
#include "mnemo/error.hpp"

namespace mnemo::serve {

namespace {

using httplib::Request;
using httplib::Response;

void reply_error(Response& res, const ApiError& e) {
    res.status = e.status;
    res.set_content(error_json(e), "application/json");
}

Endpoint endpoint_of(const std::string& path) {
    if (path.rfind("/v1/models/", 0) == 0) return Endpoint::Models;  // one model's object
    for (size_t e = 0; e < static_cast<size_t>(Endpoint::Other); ++e)
        if (path == endpoint_path(static_cast<Endpoint>(e))) return static_cast<Endpoint>(e);
    return Endpoint::Other;
}

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

uint64_t random_seed() {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    return rng();
}

ApiError context_exceeded(size_t tokens, int32_t n_ctx, const char* what) {
    return bad_request("this model's context holds " + std::to_string(n_ctx) + " tokens, but " + what + " take " +
                           std::to_string(tokens) + " (at least one position must be left to generate)",
                       std::string(what) == "the messages" ? "messages" : "prompt", "context_length_exceeded");
}

// The events of one streamed answer written as server-sent events; the state lives as long as
// httplib's content provider does.
struct Stream {
    std::shared_ptr<Job> job;
    ResponseMeta meta;
    bool include_usage = false;
    bool reads_memories = false;
    bool sent_role = false;
    bool finished = false;
    std::string echo;  // a completion's prompt, sent first when `echo` was asked
    std::string text;
    AnswerHistory* history = nullptr;
    int keepalive_ms = 2000;
};

bool write(httplib::DataSink& sink, const std::string& s) { return sink.write(s.data(), s.size()); }

// One call of httplib's content provider: waits for the next event (at most keepalive_ms) and
// writes it. Returns false when the client is gone (the job is then cancelled).
bool stream_step(Stream& st, httplib::DataSink& sink) {
    if (!st.sent_role) {
        st.sent_role = true;
        if (st.meta.chat) {
            Chunk c;
            c.role = true;
            c.usage_null = st.include_usage;
            if (!write(sink, sse_event(chunk_json(st.meta, c)))) return false;
        } else if (!st.echo.empty()) {
            Chunk c;
            c.text = st.echo;
            c.usage_null = st.include_usage;
            if (!write(sink, sse_event(chunk_json(st.meta, c)))) return false;
        }
    }
    std::optional<JobEvent> ev = st.job->channel->pop(std::chrono::milliseconds(st.keepalive_ms));
    if (!ev) return write(sink, ": keep-alive\n\n");
    switch (ev->kind) {
        case JobEvent::Kind::Progress:
            return write(sink, ": prompt " + std::to_string(ev->prefilled) + "/" + std::to_string(ev->to_prefill) + "\n\n");
        case JobEvent::Kind::Text: {
            st.text += ev->text;
            Chunk c;
            c.text = ev->text;
            c.logprob = ev->logprob ? &*ev->logprob : nullptr;
            c.usage_null = st.include_usage;
            return write(sink, sse_event(chunk_json(st.meta, c)));
        }
        case JobEvent::Kind::Done: {
            st.finished = true;
            if (st.history) st.history->remember(st.text, ev->history_text);
            Chunk c;
            c.finish = ev->finish;
            c.timings = &ev->timings;
            c.references = st.reads_memories ? &ev->references : nullptr;
            c.usage_null = st.include_usage;
            std::string out = sse_event(chunk_json(st.meta, c));
            if (st.include_usage) out += sse_event(usage_chunk_json(st.meta, ev->usage));
            out += "data: [DONE]\n\n";
            if (!write(sink, out)) return false;
            sink.done();
            return true;
        }
        case JobEvent::Kind::Failed: {
            st.finished = true;
            const std::string out = sse_event(error_json(ApiError(ev->status, "server_error", ev->error))) + "data: [DONE]\n\n";
            if (!write(sink, out)) return false;
            sink.done();
            return true;
        }
    }
    return true;
}

}  // namespace

struct ApiServer::Routes {
    ApiServer& s;

    void check_auth(const Request& req) const {
        if (!s.options_.keys) return;
        const std::string h = req.get_header_value("Authorization");
        const std::string prefix = "Bearer ";
        if (h.size() <= prefix.size() || h.compare(0, prefix.size(), prefix) != 0) {
            s.metrics_.rejected_auth.fetch_add(1);
            throw ApiError(401, "invalid_request_error", "this server needs an API key: send 'Authorization: Bearer KEY'", {},
                           "invalid_api_key");
        }
        if (s.options_.keys->find(std::string_view(h).substr(prefix.size())).empty()) {
            s.metrics_.rejected_auth.fetch_add(1);
            throw ApiError(401, "invalid_request_error", "the API key is not one this server accepts", {}, "invalid_api_key");
        }
    }

    // `question`: what a grounded answer must not merely repeat (the last user message, the prompt).
    std::shared_ptr<Job> generation_job(const GenerationRequest& g, std::string question) const {
        auto job = std::make_shared<Job>();
        job->sampling = g.sampling;
        if (!g.seeded) job->sampling.seed = random_seed();
        job->max_tokens = g.max_tokens.value_or(-1);
        job->top_logprobs = g.top_logprobs;
        job->ignore_eos = g.ignore_eos;
        job->grounded = g.grounded.value_or(s.options_.grounded);
        if (job->grounded && !s.model_.references_recorded)
            throw bad_request("'grounded' answers quote the references their prompt read, and model '" + s.model_.id +
                                  "' reads none here: start mnemo serve with --kb URL or --memories FOLDER",
                              "grounded", "grounding_unsupported");
        job->question = std::move(question);
        return job;
    }

    void submit(const std::shared_ptr<Job>& job) const {
        if (!s.scheduler_.submit(job)) {
            s.metrics_.rejected_queue_full.fetch_add(1);
            throw ApiError(429, "rate_limit_error",
                           "the server is busy: every slot is serving a request and the queue is full; retry shortly", {},
                           "queue_full");
        }
    }

    // Runs the job and answers: streamed as server-sent events, or whole.
    void answer(const std::shared_ptr<Job>& job, const ResponseMeta& meta, const GenerationRequest& g, std::string prefix,
                Response& res) const {
        submit(job);
        if (g.stream) {
            auto st = std::make_shared<Stream>();
            st->job = job;
            st->meta = meta;
            st->include_usage = g.include_usage;
            st->reads_memories = s.model_.reads_memories;
            st->history = meta.chat ? &s.history_ : nullptr;
            st->keepalive_ms = s.options_.keepalive_comment_ms;
            st->echo = std::move(prefix);
            res.set_header("Cache-Control", "no-cache");
            res.set_header("X-Accel-Buffering", "no");
            res.set_chunked_content_provider(
                "text/event-stream",
                [st](size_t, httplib::DataSink& sink) {
                    if (stream_step(*st, sink)) return true;
                    st->job->channel->cancel();
                    return false;
                },
                [st](bool) {
                    if (!st->finished) st->job->channel->cancel();  // the client went away: free the slot
                });
            return;
        }
        Answer a;
        a.text = std::move(prefix);
        a.want_logprobs = g.top_logprobs >= 0;
        a.reads_memories = s.model_.reads_memories;
        while (true) {
            std::optional<JobEvent> ev = job->channel->pop(std::chrono::seconds(1));
            if (!ev) continue;
            if (ev->kind == JobEvent::Kind::Text) {
                a.text += ev->text;
                if (ev->logprob) a.logprobs.push_back(std::move(*ev->logprob));
            } else if (ev->kind == JobEvent::Kind::Done) {
                a.finish = ev->finish;
                a.usage = ev->usage;
                a.timings = ev->timings;
                a.references = std::move(ev->references);
                if (meta.chat) s.history_.remember(a.text, ev->history_text);
                break;
            } else if (ev->kind == JobEvent::Kind::Failed) {
                throw ApiError(ev->status, "server_error", ev->error);
            }
        }
        res.set_content(completion_json(meta, a), "application/json");
    }

    void chat(const Request& req, Response& res) const {
        const ChatRequest r = parse_chat_request(req.body, s.options_.limits);
        std::vector<ChatMessage> messages = r.messages;
        for (ChatMessage& m : messages)
            if (m.role == "assistant") m.content = s.history_.as_generated(m.content);
        const app::RenderedChat rendered = app::render_chat(s.model_.chat_template, *s.model_.tokenizer, messages);
        if (static_cast<int64_t>(rendered.tokens.size()) >= s.model_.n_ctx)
            throw context_exceeded(rendered.tokens.size(), s.model_.n_ctx, "the messages");
        std::string question;  // the last user message
        for (const ChatMessage& m : r.messages)
            if (m.role == "user") question = m.content;
        auto job = generation_job(r.gen, std::move(question));
        job->prompt = rendered.tokens;
        job->segment_starts = rendered.turn_starts;
        job->stop = s.model_.chat_template.stop_strings;
        job->stop.insert(job->stop.end(), r.gen.stop.begin(), r.gen.stop.end());
        answer(job, {new_response_id("chatcmpl-"), s.model_.id, unix_now(), true}, r.gen, {}, res);
    }

    void completion(const Request& req, Response& res) const {
        const CompletionRequest r = parse_completion_request(req.body, s.options_.limits);
        std::vector<int32_t> tokens;
        try {
            tokens = app::prompt_tokens(*s.model_.tokenizer, r.prompt, /*add_bos=*/true, /*parse_special=*/true);
        } catch (const Error& e) {
            throw bad_request(std::string("'prompt': ") + e.what(), "prompt");
        }
        if (tokens.empty()) throw bad_request("'prompt' is empty and this tokenizer adds no BOS token to start from", "prompt");
        if (static_cast<int64_t>(tokens.size()) >= s.model_.n_ctx) throw context_exceeded(tokens.size(), s.model_.n_ctx, "the prompt's tokens");
        auto job = generation_job(r.gen, r.prompt);
        job->prompt = std::move(tokens);
        job->stop = r.gen.stop;
        answer(job, {new_response_id("cmpl-"), s.model_.id, unix_now(), false}, r.gen, r.echo ? r.prompt : std::string(), res);
    }

    void embeddings(const Request& req, Response& res) const {
        const EmbeddingRequest r = parse_embedding_request(req.body, s.options_.limits);
        if (!s.model_.embeddings)
            throw bad_request("model '" + s.model_.id +
                                  "' gives no embeddings: only a model that reads explicit memories has a retrieval vector "
                                  "(docs/serve.md, \"Embeddings\")",
                              "model", "embeddings_unsupported");
        auto job = std::make_shared<Job>();
        job->kind = Job::Kind::Embed;
        for (size_t i = 0; i < r.inputs.size(); ++i) {
            std::vector<int32_t> t = s.model_.tokenizer->encode(r.inputs[i], /*parse_special=*/false);
            const std::string at = "input." + std::to_string(i);
            if (t.empty()) throw bad_request("'" + at + "' encodes to no tokens", "input");
            if (static_cast<int32_t>(t.size()) > s.model_.embedding_max_tokens)
                throw bad_request("'" + at + "' has " + std::to_string(t.size()) + " tokens; this model embeds at most " +
                                      std::to_string(s.model_.embedding_max_tokens) + " (its reference length)",
                                  "input", "context_length_exceeded");
            job->texts.push_back(std::move(t));
        }
        submit(job);
        while (true) {
            std::optional<JobEvent> ev = job->channel->pop(std::chrono::seconds(1));
            if (!ev) continue;
            if (ev->kind == JobEvent::Kind::Failed) throw ApiError(ev->status, "server_error", ev->error);
            if (ev->kind == JobEvent::Kind::Done) {
                res.set_content(embeddings_json(s.model_.id, ev->embeddings, ev->usage.prompt_tokens, r.base64), "application/json");
                return;
            }
        }
    }

    // Every route's handler runs through here: API errors become error replies.
    template <class F>
    httplib::Server::Handler guarded(F f) {
        return [this, f](const Request& req, Response& res) {
            try {
                check_auth(req);
                (this->*f)(req, res);
            } catch (const ApiError& e) {
                if (e.status == 429) res.set_header("Retry-After", "1");
                reply_error(res, e);
            } catch (const std::exception& e) {
                reply_error(res, ApiError(500, "server_error", e.what()));
            }
        };
    }

    void models(const Request& req, Response& res) const {
        if (req.path != "/v1/models") {
            const std::string id = req.path.substr(std::string("/v1/models/").size());
            if (id != s.model_.id) throw ApiError(404, "not_found_error", "model '" + id + "' is not served here", "model", "model_not_found");
            res.set_content(model_json(s.model_.id, s.model_.created), "application/json");
            return;
        }
        res.set_content(models_json(s.model_.id, s.model_.created), "application/json");
    }

    void metrics(const Request&, Response& res) const {
        res.set_content(s.metrics_.prometheus_text(), "text/plain; version=0.0.4");
    }
};

ApiServer::ApiServer(ServerOptions options, ServedModel model, BatchScheduler& scheduler, Metrics& metrics)
    : options_(std::move(options)), model_(std::move(model)), scheduler_(scheduler), metrics_(metrics) {
    if (options_.tls_cert.empty() != options_.tls_key.empty()) throw Error("TLS needs both a certificate and its key file");
    if (!options_.tls_cert.empty()) {
        auto tls = std::make_unique<httplib::SSLServer>(options_.tls_cert.c_str(), options_.tls_key.c_str());
        if (!tls->is_valid())
            throw Error("TLS certificate '" + options_.tls_cert + "' or key '" + options_.tls_key +
                        "' could not be loaded (PEM files, the key matching the certificate)");
        http_ = std::move(tls);
    } else {
        http_ = std::make_unique<httplib::Server>();
    }
    const int threads = options_.http_threads > 0 ? options_.http_threads
                                                  : scheduler_.slots() + static_cast<int>(scheduler_.max_queue()) + 4;
    http_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    http_->set_read_timeout(options_.read_timeout_s, 0);
    http_->set_write_timeout(options_.write_timeout_s, 0);
    http_->set_keep_alive_timeout(options_.keep_alive_s);
    http_->set_payload_max_length(options_.max_body_bytes);
    http_->set_socket_options([this](socket_t sock) {
        httplib::default_socket_options(sock);
        listen_socket_ = sock;
    });

    auto routes = std::make_shared<Routes>(Routes{*this});
    http_->Get("/health", [this](const Request&, Response& res) {
        res.set_content(std::string("{\"status\":\"ok\",\"slots\":") + std::to_string(scheduler_.slots()) +
                            ",\"slots_busy\":" + std::to_string(metrics_.slots_busy.load()) +
                            ",\"queued\":" + std::to_string(scheduler_.queued()) + "}",
                        "application/json");
    });
    http_->Get("/metrics", routes->guarded(&Routes::metrics));
    http_->Get("/v1/models", routes->guarded(&Routes::models));
    http_->Get(R"(/v1/models/[^/]+)", routes->guarded(&Routes::models));
    http_->Post("/v1/chat/completions", routes->guarded(&Routes::chat));
    http_->Post("/v1/completions", routes->guarded(&Routes::completion));
    http_->Post("/v1/embeddings", routes->guarded(&Routes::embeddings));
    // What httplib answers by itself (no route, a body over the limit, a malformed request) gets
    // the same error object.
    const size_t max_body = options_.max_body_bytes;
    http_->set_error_handler([max_body](const Request& req, Response& res) {
        if (!res.body.empty()) return;
        if (res.status == 404)
            reply_error(res, ApiError(404, "not_found_error", "no route " + req.method + " " + req.path +
                                                                  " (the API is under /v1: models, chat/completions, completions, embeddings)"));
        else if (res.status == 413)
            reply_error(res, ApiError(413, "invalid_request_error",
                                      "the request body is larger than " + std::to_string(max_body) + " bytes (--max-body)"));
        else
            reply_error(res, ApiError(res.status, "invalid_request_error", "malformed HTTP request (status " +
                                                                               std::to_string(res.status) + ")"));
    });
    http_->set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        reply_error(res, ApiError(500, "server_error", what));
    });
    http_->set_logger([this](const Request& req, const Response& res) { metrics_.count_request(endpoint_of(req.path), res.status); });
    routes_keepalive_ = routes;
}

ApiServer::~ApiServer() { stop(); }

int ApiServer::bind() {
    int port = options_.port;
    if (port == 0) {
        port = http_->bind_to_any_port(options_.host);
        if (port <= 0) throw Error("cannot listen on " + options_.host + " (any port)");
    } else if (!http_->bind_to_port(options_.host, options_.port)) {
        throw Error("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                    " (the port is in use, or the address is not this machine's)");
    }
    // cpp-httplib (Debian's is a compiled library) listens with a backlog of 5: when more clients
    // than that connect at once (16 streaming clients starting together), the kernel drops the
    // others' SYNs and each waits its 1 s retransmission for a first token (seen as a 1 s p99 in
    // bench/serve_load.sh, llama-server's alike). A second listen() on the socket raises it.
    if (listen_socket_ >= 0) ::listen(listen_socket_, SOMAXCONN);
    return port;
}

void ApiServer::run() { http_->listen_after_bind(); }

void ApiServer::stop() {
    if (http_) http_->stop();
}

}  // namespace mnemo::serve
