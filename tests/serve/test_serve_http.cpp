// `mnemo serve`'s HTTP API on loopback, in process, with the default model and a small memory
// folder: every endpoint, streamed and not, the SSE framing byte for byte, errors, API keys,
// 429, a client that disconnects mid-stream, eight concurrent streams, prefix reuse, a burst of
// connections queued by the listen backlog.
#include <gtest/gtest.h>

#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "fixtures/tls_certificates.hpp"

#include "http_test_client.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "serve/api_server.hpp"
#include "serve_fixture.hpp"

namespace mnemo::serve::test {
namespace {

class RunningServer {
public:
    RunningServer(DefaultModel& m, ServerOptions o = {}, SchedulerOptions so = {})
        : scheduler_(*m.session, *m.tok, m.recorder, so, metrics) {
        ServedModel sm;
        sm.id = "mnemo-default";
        sm.tokenizer = m.tok.get();
        sm.chat_template = m.tmpl;
        sm.n_ctx = m.session->n_ctx();
        sm.reads_memories = m.session->reads_memories();
        sm.references_recorded = m.recorder != nullptr;
        sm.embeddings = sm.reads_memories;
        sm.embedding_max_tokens = sm.embeddings ? m.session->memory_spec().reference_length : 0;
        o.port = 0;
        api_ = std::make_unique<ApiServer>(o, sm, scheduler_, metrics);
        port = api_->bind();
        thread_ = std::thread([this] { api_->run(); });
        // Plain HTTP answers once it runs; a TLS server answers a plain request by closing.
        const bool tls = !o.tls_cert.empty();
        for (int i = 0; i < 500; ++i) {
            try {
                RawConnection c(port);
                if (tls) break;  // it accepts connections: it is listening
                c.send(request_text("GET", "/health", ""));
                if (parse_reply(c.read_all()).status == 200) break;
            } catch (const std::exception&) {
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    ~RunningServer() {
        api_->stop();
        thread_.join();
    }
    Metrics metrics;
    int port = 0;

private:
    BatchScheduler scheduler_;
    std::unique_ptr<ApiServer> api_;
    std::thread thread_;
};

std::string chat_body(const std::string& question, bool stream, const std::string& extra = "") {
    return R"({"model":"mnemo-default","messages":[{"role":"user","content":)" + json::quote(question) +
           R"(}],"temperature":0,"max_tokens":24,"stream":)" + (stream ? "true" : "false") + extra + "}";
}

json::Value parse(const std::string& s) { return json::parse(s, "reply"); }

// The events of an SSE body, checked to be framed as the official clients parse them: lines
// "data: <json>" or ": comment", each event ended by a blank line, no "event:" field.
std::vector<std::string> sse_data(const std::string& body) {
    std::vector<std::string> out;
    size_t p = 0;
    while (p < body.size()) {
        const size_t end = body.find("\n\n", p);
        EXPECT_NE(end, std::string::npos) << "an event without its blank line: " << body.substr(p);
        if (end == std::string::npos) break;
        const std::string ev = body.substr(p, end - p);
        EXPECT_EQ(ev.find('\n'), std::string::npos) << "one line per event: " << ev;
        if (ev.rfind("data: ", 0) == 0) out.push_back(ev.substr(6));
        else EXPECT_EQ(ev[0], ':') << "not a data line or a comment: " << ev;
        p = end + 2;
    }
    return out;
}

// The text of a streamed chat answer.
std::string streamed_text(const std::vector<std::string>& data) {
    std::string text;
    for (const std::string& d : data) {
        if (d == "[DONE]") continue;
        const json::Value v = parse(d);
        for (const json::Value& c : v.find("choices")->as_array()) {
            const json::Value* delta = c.find("delta");
            const json::Value* content = delta ? delta->find("content") : c.find("text");
            if (content && content->is_string()) text += content->as_string();
        }
    }
    return text;
}

class ServeHttp : public DefaultModelSuite {};

TEST_F(ServeHttp, ModelsHealthMetrics) {
    RunningServer s(*model_);
    const HttpReply models = http(s.port, "GET", "/v1/models");
    EXPECT_EQ(models.status, 200);
    const json::Value m = parse(models.body);
    EXPECT_EQ(m.find("object")->as_string(), "list");
    EXPECT_EQ(m.find_path("data.0.id")->as_string(), "mnemo-default");
    EXPECT_EQ(parse(http(s.port, "GET", "/v1/models/mnemo-default").body).find("id")->as_string(), "mnemo-default");
    EXPECT_EQ(http(s.port, "GET", "/v1/models/gpt-4").status, 404);
    EXPECT_EQ(http(s.port, "GET", "/health").status, 200);
    const HttpReply metrics = http(s.port, "GET", "/metrics");
    EXPECT_EQ(metrics.status, 200);
    EXPECT_NE(metrics.body.find("mnemo_requests_total{endpoint=\"/v1/models\",status=\"2xx\"} 2"), std::string::npos)
        << metrics.body;
    EXPECT_NE(metrics.body.find("mnemo_slots_total 8"), std::string::npos);
}

TEST_F(ServeHttp, ChatAnswerWithReferencesUsageTimings) {
    RunningServer s(*model_);
    const Question q = held_out_questions(1)[0];
    HttpReply r = http(s.port, "POST", "/v1/chat/completions", chat_body(q.question, false));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers["content-type"], "application/json");
    const json::Value v = parse(r.body);
    EXPECT_EQ(v.find("object")->as_string(), "chat.completion");
    EXPECT_EQ(v.find_path("choices.0.message.role")->as_string(), "assistant");
    EXPECT_EQ(v.find_path("choices.0.message.content")->as_string(), q.answer);
    EXPECT_EQ(v.find_path("choices.0.finish_reason")->as_string(), "stop");
    EXPECT_GT(v.find_path("usage.prompt_tokens")->as_int(), 5);
    EXPECT_EQ(v.find_path("usage.total_tokens")->as_int(),
              v.find_path("usage.prompt_tokens")->as_int() + v.find_path("usage.completion_tokens")->as_int());
    EXPECT_GT(v.find_path("timings.predicted_per_second")->as_double(), 0);
    const json::Value* refs = v.find("references");
    ASSERT_TRUE(refs && refs->size() > 0);
    bool holds_answer = false;
    for (const json::Value& ref : refs->as_array()) {
        EXPECT_TRUE(ref.find("id")->is_integer());
        EXPECT_EQ(ref.find("document")->as_string(), "knowledge.txt");
        holds_answer = holds_answer || ref.find("text")->as_string().find(q.answer) != std::string::npos;
    }
    EXPECT_TRUE(holds_answer);
}

// The stream, byte for byte where the framing is fixed: headers, the role chunk first, no event
// names, the finish chunk, the usage chunk, [DONE] last; and the same text as without streaming.
TEST_F(ServeHttp, ChatStreamFraming) {
    RunningServer s(*model_);
    const Question q = held_out_questions(2)[1];
    const HttpReply whole = http(s.port, "POST", "/v1/chat/completions", chat_body(q.question, false));
    HttpReply r = http(s.port, "POST", "/v1/chat/completions",
                             chat_body(q.question, true, R"(,"stream_options":{"include_usage":true})"));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers["content-type"], "text/event-stream");
    EXPECT_EQ(r.headers["cache-control"], "no-cache");
    EXPECT_EQ(r.body.find("event:"), std::string::npos);
    EXPECT_EQ(r.body.substr(r.body.size() - 14), "data: [DONE]\n\n");
    const std::vector<std::string> data = sse_data(r.body);
    ASSERT_GE(data.size(), 4u);
    const json::Value first = parse(data[0]);
    EXPECT_EQ(first.find("object")->as_string(), "chat.completion.chunk");
    EXPECT_EQ(first.find_path("choices.0.delta.role")->as_string(), "assistant");
    EXPECT_TRUE(first.find("usage")->is_null());
    const json::Value finish = parse(data[data.size() - 3]);
    EXPECT_EQ(finish.find_path("choices.0.finish_reason")->as_string(), "stop");
    EXPECT_NE(finish.find("references"), nullptr);
    const json::Value usage = parse(data[data.size() - 2]);
    EXPECT_EQ(usage.find("choices")->size(), 0u);
    EXPECT_GT(usage.find_path("usage.completion_tokens")->as_int(), 0);
    const std::string id = first.find("id")->as_string();
    for (size_t i = 0; i + 1 < data.size(); ++i) EXPECT_EQ(parse(data[i]).find("id")->as_string(), id);
    EXPECT_EQ(streamed_text(data), parse(whole.body).find_path("choices.0.message.content")->as_string());
    EXPECT_EQ(streamed_text(data), q.answer);
}

TEST_F(ServeHttp, CompletionsLogprobsEcho) {
    RunningServer s(*model_);
    HttpReply r = http(s.port, "POST", "/v1/completions",
                             R"({"prompt":"The birthplace of Quear Mousaim is","max_tokens":4,"temperature":0,"logprobs":2,"echo":true})");
    ASSERT_EQ(r.status, 200) << r.body;
    const json::Value v = parse(r.body);
    EXPECT_EQ(v.find("object")->as_string(), "text_completion");
    const std::string text = v.find_path("choices.0.text")->as_string();
    EXPECT_EQ(text.rfind("The birthplace of Quear Mousaim is", 0), 0u) << text;
    const json::Value* lp = v.find_path("choices.0.logprobs");
    ASSERT_TRUE(lp && lp->is_object());
    EXPECT_EQ(lp->find("tokens")->size(), static_cast<size_t>(v.find_path("usage.completion_tokens")->as_int()));
    for (const json::Value& l : lp->find("token_logprobs")->as_array()) EXPECT_LE(l.as_double(), 0.0);
    EXPECT_EQ(lp->find("top_logprobs")->as_array()[0].size(), 2u);

    const HttpReply st = http(s.port, "POST", "/v1/completions", R"({"prompt":"The birthplace of Quear Mousaim is","max_tokens":4,"temperature":0,"stream":true,"echo":true})");
    ASSERT_EQ(st.status, 200);
    const std::vector<std::string> data = sse_data(st.body);
    EXPECT_EQ(parse(data[0]).find("object")->as_string(), "text_completion");
    EXPECT_EQ(streamed_text(data), text);  // the echoed prompt first, then the same tokens
    EXPECT_EQ(parse(data[data.size() - 2]).find_path("choices.0.finish_reason")->as_string(), "length");
}

TEST_F(ServeHttp, ChatLogprobsAreLogSoftmax) {
    RunningServer s(*model_);
    HttpReply r = http(s.port, "POST", "/v1/chat/completions",
                             chat_body("Where was Quear Mousaim born?", false, R"(,"logprobs":true,"top_logprobs":3)"));
    ASSERT_EQ(r.status, 200) << r.body;
    const json::Value v = parse(r.body);
    const json::Value* content = v.find_path("choices.0.logprobs.content");
    ASSERT_TRUE(content && content->size() > 0);
    for (const json::Value& t : content->as_array()) {
        const auto& top = t.find("top_logprobs")->as_array();
        ASSERT_EQ(top.size(), 3u);
        // Greedy: the token chosen is the most likely one.
        EXPECT_EQ(t.find("token")->as_string(), top[0].find("token")->as_string());
        EXPECT_DOUBLE_EQ(t.find("logprob")->as_double(), top[0].find("logprob")->as_double());
        EXPECT_GE(top[0].find("logprob")->as_double(), top[1].find("logprob")->as_double());
        EXPECT_LE(std::exp(top[0].find("logprob")->as_double()) + std::exp(top[1].find("logprob")->as_double()) +
                      std::exp(top[2].find("logprob")->as_double()),
                  1.0 + 1e-5);
    }
}

TEST_F(ServeHttp, EmbeddingsFloatAndBase64Agree) {
    RunningServer s(*model_);
    const HttpReply f = http(s.port, "POST", "/v1/embeddings", R"({"input":["Quear Mousaim","a baker"]})");
    ASSERT_EQ(f.status, 200) << f.body;
    const json::Value v = parse(f.body);
    ASSERT_EQ(v.find("data")->size(), 2u);
    const auto& e0 = v.find_path("data.0.embedding")->as_array();
    EXPECT_EQ(static_cast<int32_t>(e0.size()), model_->session->memory_spec().retrieval_dim);
    double norm = 0;
    for (const json::Value& x : e0) norm += x.as_double() * x.as_double();
    EXPECT_NEAR(norm, 1.0, 1e-4);  // L2-normalised
    const HttpReply b = http(s.port, "POST", "/v1/embeddings", R"({"input":"Quear Mousaim","encoding_format":"base64"})");
    ASSERT_EQ(b.status, 200);
    EXPECT_TRUE(parse(b.body).find_path("data.0.embedding")->is_string());
}

TEST_F(ServeHttp, ErrorsAreOpenAiErrorObjects) {
    ServerOptions o;
    o.max_body_bytes = 8192;
    RunningServer s(*model_, o);
    struct Case {
        std::string method, path, body;
        int status;
        std::string param, code;
    };
    std::string long_question;
    for (int i = 0; i < 200; ++i) long_question += "Where was Quear Mousaim born? ";
    const Case cases[] = {
        {"POST", "/v1/chat/completions", "{not json", 400, "", "invalid_json"},
        {"POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"max_tokens":"ten"})", 400, "max_tokens", ""},
        {"POST", "/v1/chat/completions", std::string(9000, ' '), 413, "", ""},
        {"POST", "/v1/chat/completions", chat_body(long_question.substr(0, 6000), false), 400, "messages", "context_length_exceeded"},
        {"GET", "/v1/nothing", "", 404, "", ""},
        {"POST", "/v1/embeddings", R"({"input":")" + std::string(1000, 'a') + R"("})", 400, "input", "context_length_exceeded"},
    };
    for (const Case& c : cases) {
        HttpReply r = http(s.port, c.method, c.path, c.body);
        EXPECT_EQ(r.status, c.status) << c.path << " " << c.body.substr(0, 80) << ": " << r.body;
        const json::Value v = parse(r.body);
        const json::Value* e = v.find("error");
        ASSERT_TRUE(e && e->is_object()) << r.body;
        EXPECT_FALSE(e->find("message")->as_string().empty());
        EXPECT_TRUE(e->find("type")->is_string());
        if (c.param.empty()) {
            EXPECT_TRUE(e->find("param")->is_null()) << r.body;
        } else {
            EXPECT_EQ(e->find("param")->as_string(), c.param) << r.body;
        }
        if (!c.code.empty()) {
            EXPECT_EQ(e->find("code")->as_string(), c.code) << r.body;
        }
    }
}

TEST_F(ServeHttp, ApiKeys) {
    const NewApiKey k = new_api_key("tester");
    ServerOptions o;
    o.keys = ApiKeys::parse(k.line, "test keys");
    RunningServer s(*model_, o);
    EXPECT_EQ(http(s.port, "GET", "/v1/models").status, 401);
    EXPECT_EQ(http(s.port, "GET", "/v1/models", "", "Authorization: Bearer wrong\r\n").status, 401);
    const HttpReply no = http(s.port, "POST", "/v1/chat/completions", chat_body("Hi", false));
    EXPECT_EQ(no.status, 401);
    EXPECT_EQ(parse(no.body).find_path("error.code")->as_string(), "invalid_api_key");
    EXPECT_EQ(http(s.port, "GET", "/v1/models", "", "Authorization: Bearer " + k.key + "\r\n").status, 200);
    EXPECT_EQ(http(s.port, "GET", "/metrics").status, 401);
    EXPECT_EQ(http(s.port, "GET", "/health").status, 200);  // for load balancers
    EXPECT_EQ(s.metrics.rejected_auth.load(), 4u);
}

// HTTPS from certificate files: a client that checks the certificate against its CA gets the
// API; plain HTTP on that port gets nothing.
TEST_F(ServeHttp, TlsFromCertificateFiles) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("mnemo-serve-tls-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    ASSERT_TRUE(mnemo::test::make_certificates(dir)) << "openssl failed";
    ServerOptions o;
    o.tls_cert = (dir / "server.pem").string();
    o.tls_key = (dir / "server.key").string();
    {
        RunningServer s(*model_, o);
        httplib::SSLClient client("127.0.0.1", s.port);
        client.set_ca_cert_path((dir / "ca.pem").string().c_str());
        client.enable_server_certificate_verification(true);
        const auto r = client.Post("/v1/chat/completions", chat_body(held_out_questions(1)[0].question, false), "application/json");
        ASSERT_TRUE(r) << "HTTPS request failed: " << httplib::to_string(r.error());
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(parse(r->body).find_path("choices.0.message.content")->as_string(), held_out_questions(1)[0].answer);
        RawConnection plain(s.port);
        plain.send(request_text("GET", "/v1/models", ""));
        EXPECT_EQ(plain.read_all().find("HTTP/1.1 200"), std::string::npos);
    }
    // Files that are not a certificate and its key: a clear error, no server.
    ServerOptions bad;
    bad.tls_cert = (dir / "ca.key").string();
    bad.tls_key = (dir / "server.key").string();
    Metrics metrics;
    BatchScheduler scheduler(*model_->session, *model_->tok, model_->recorder, {}, metrics);
    EXPECT_THROW(ApiServer(bad, ServedModel{}, scheduler, metrics), Error);
    std::filesystem::remove_all(dir);
}

// Clients that connect at once are all taken by the kernel's accept queue, even before the server
// accepts any: cpp-httplib's own backlog of 5 dropped the others' SYNs, and each of those clients
// waited a 1 s retransmission for its first token (bench/serve_load.sh, 16 clients).
TEST_F(ServeHttp, ABurstOfConnectionsIsQueuedNotDropped) {
    Metrics metrics;
    BatchScheduler scheduler(*model_->session, *model_->tok, model_->recorder, {}, metrics);
    ServerOptions o;
    o.port = 0;
    ApiServer api(o, ServedModel{}, scheduler, metrics);
    const int port = api.bind();  // bound and listening; run() is never called, so nothing is accepted
    constexpr int kClients = 32;
    std::vector<int> fds;
    for (int i = 0; i < kClients; ++i) {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        ASSERT_GE(fd, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
        ASSERT_TRUE(rc == 0 || errno == EINPROGRESS) << std::strerror(errno);
        fds.push_back(fd);
    }
    // On loopback a queued connection completes at once; a dropped SYN would be retried after 1 s.
    int connected = 0;
    for (const int fd : fds) {
        pollfd p{fd, POLLOUT, 0};
        int err = -1;
        socklen_t len = sizeof err;
        if (::poll(&p, 1, 500) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) ++connected;
        ::close(fd);
    }
    EXPECT_EQ(connected, kClients) << "connections left waiting by a listen backlog smaller than the burst";
}

std::string long_prompt_body(bool stream) {
    std::string text;
    for (int i = 0; i < 60; ++i) text += "The birthplace of Quear Mousaim is Thaimubort. ";
    return chat_body(text, stream);
}

TEST_F(ServeHttp, FullQueueIs429WithRetryAfter) {
    SchedulerOptions so;
    so.max_queue = 0;
    so.prefill_chunk = 1;  // the first request holds the only slot for a while
    std::unique_ptr<DefaultModel> one = std::make_unique<DefaultModel>(open_default_model(1, false));
    RunningServer s(*one, {}, so);
    RawConnection first(s.port);
    first.send(request_text("POST", "/v1/chat/completions", long_prompt_body(true)));
    first.read_until(": prompt");  // it holds the slot
    HttpReply busy = http(s.port, "POST", "/v1/chat/completions", chat_body("Hi", false));
    EXPECT_EQ(busy.status, 429) << busy.body;
    EXPECT_EQ(busy.headers["retry-after"], "1");
    EXPECT_EQ(parse(busy.body).find_path("error.code")->as_string(), "queue_full");
}

// A client that goes away mid-stream frees its slot at once (the rest of its prompt is never run).
TEST_F(ServeHttp, DisconnectFreesTheSlot) {
    SchedulerOptions so;
    so.prefill_chunk = 1;
    RunningServer s(*model_, {}, so);
    {
        RawConnection c(s.port);
        c.send(request_text("POST", "/v1/chat/completions", long_prompt_body(true)));
        c.read_until(": prompt");
        EXPECT_EQ(s.metrics.slots_busy.load(), 1);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((s.metrics.slots_busy.load() != 0 || s.metrics.cancelled.load() != 1) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(s.metrics.slots_busy.load(), 0);
    EXPECT_EQ(s.metrics.cancelled.load(), 1u);
    EXPECT_LT(s.metrics.prompt_tokens_prefilled.load(), 400u);
}

// Eight clients streaming at once each get exactly the text they get alone.
TEST_F(ServeHttp, EightConcurrentStreamsEqualAlone) {
    RunningServer s(*model_);
    const std::vector<Question> qs = held_out_questions(8);
    std::vector<std::string> alone;
    for (const Question& q : qs)
        alone.push_back(parse(http(s.port, "POST", "/v1/chat/completions", chat_body(q.question, false)).body)
                            .find_path("choices.0.message.content")
                            ->as_string());
    std::vector<std::string> streamed(qs.size());
    std::vector<std::thread> clients;
    for (size_t i = 0; i < qs.size(); ++i)
        clients.emplace_back([&, i] { streamed[i] = streamed_text(sse_data(http(s.port, "POST", "/v1/chat/completions", chat_body(qs[i].question, true)).body)); });
    for (auto& t : clients) t.join();
    for (size_t i = 0; i < qs.size(); ++i) EXPECT_EQ(streamed[i], alone[i]) << qs[i].question;
    EXPECT_GT(static_cast<double>(s.metrics.decode_rows.load()) / static_cast<double>(s.metrics.decode_steps.load()), 1.0);
}

// The next turn of a conversation, with the answer as the client got it, prefills only what is new.
// The follow-up is about another entity, as the default model's conversations are (its follow-up
// set and its training: each turn about a different entity).
TEST_F(ServeHttp, NextTurnReusesTheCache) {
    RunningServer s(*model_);
    const std::vector<Question> qs = held_out_questions(4);
    const json::Value a = parse(http(s.port, "POST", "/v1/chat/completions", chat_body(qs[0].question, false)).body);
    const std::string answer = a.find_path("choices.0.message.content")->as_string();
    const std::string body = R"({"messages":[{"role":"user","content":)" + json::quote(qs[0].question) +
                             R"(},{"role":"assistant","content":)" + json::quote(answer) + R"(},{"role":"user","content":)" +
                             json::quote(qs[3].question) + R"(}],"temperature":0,"max_tokens":24})";
    const json::Value b = parse(http(s.port, "POST", "/v1/chat/completions", body).body);
    const int64_t prompt = b.find_path("usage.prompt_tokens")->as_int();
    const int64_t cached = b.find_path("usage.prompt_tokens_details.cached_tokens")->as_int();
    // Every token of the first exchange but the last one sampled (never fed) came from the cache.
    EXPECT_GE(cached, a.find_path("usage.total_tokens")->as_int() - 1) << "prompt " << prompt;
    EXPECT_EQ(b.find_path("choices.0.message.content")->as_string(), qs[3].answer);
}

// "grounded" (an extension field; `mnemo serve --grounded` makes it the default): the answer quotes
// the references its prompt read, as `mnemo ask --grounded` does (CliAsk.AGroundedAnswerQuotesWhatItRead).
// A birthplace of English make, which no training text has: the model alone copies its first
// pieces and stops short; grounded, it writes the reference's name whole.
TEST(ServeGrounded, AGroundedAnswerQuotesWhatItRead) {
    DefaultModel m = open_default_model(2, /*memories=*/true, 1024,
                                        {"Quear Mousaim was born in Staninminster.", "Quear Mousaim works as a weaver.",
                                         "The birth year of Quear Mousaim is 1793."});
    const std::string question = "Where was Quear Mousaim born?";
    const auto content = [&](int port, const std::string& extra, bool stream = false) {
        const HttpReply r = http(port, "POST", "/v1/chat/completions", chat_body(question, stream, extra));
        EXPECT_EQ(r.status, 200) << r.body;
        if (stream) return streamed_text(sse_data(r.body));
        const json::Value v = parse(r.body);  // alive while its content is read
        const json::Value* c = v.find_path("choices.0.message.content");
        return c ? c->as_string() : std::string("(no content) ") + r.body;
    };
    {
        RunningServer s(m);
        EXPECT_NE(content(s.port, ""), "Staninminster");
        EXPECT_EQ(content(s.port, R"(,"grounded":true)"), "Staninminster");
        EXPECT_EQ(content(s.port, R"(,"grounded":true)", /*stream=*/true), "Staninminster");
        // A completion is grounded too: the prompt is its question.
        const HttpReply r = http(s.port, "POST", "/v1/completions",
                                 R"({"prompt":"Quear Mousaim was born in","temperature":0,"max_tokens":8,"grounded":true})");
        ASSERT_EQ(r.status, 200) << r.body;
        const std::string text = parse(r.body).find_path("choices.0.text")->as_string();
        EXPECT_NE(std::string("Quear Mousaim was born in Staninminster. Quear Mousaim works as a weaver. "
                              "The birth year of Quear Mousaim is 1793.")
                      .find(text.substr(text.find_first_not_of(' '))),
                  std::string::npos)
            << "not a quote: '" << text << "'";
        const HttpReply bad = http(s.port, "POST", "/v1/chat/completions", chat_body(question, false, R"(,"grounded":"yes")"));
        EXPECT_EQ(bad.status, 400);
        EXPECT_EQ(parse(bad.body).find_path("error.param")->as_string(), "grounded") << bad.body;
    }
    {
        ServerOptions o;
        o.grounded = true;  // mnemo serve --grounded: every answer, unless the request says otherwise
        RunningServer s(m, o);
        EXPECT_EQ(content(s.port, ""), "Staninminster");
        EXPECT_NE(content(s.port, R"(,"grounded":false)"), "Staninminster");
    }
    std::filesystem::remove_all(m.folder);
    // No references to quote (no memory source): refused by name, not answered unconstrained.
    DefaultModel bare = open_default_model(1, /*memories=*/false);
    RunningServer s(bare);
    const HttpReply r = http(s.port, "POST", "/v1/chat/completions", chat_body(question, false, R"(,"grounded":true)"));
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(parse(r.body).find_path("error.param")->as_string(), "grounded") << r.body;
    EXPECT_EQ(parse(r.body).find_path("error.code")->as_string(), "grounding_unsupported") << r.body;
}

}  // namespace
}  // namespace mnemo::serve::test
