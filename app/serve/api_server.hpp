// `mnemo serve`'s HTTP side (cpp-httplib): the OpenAI routes, authentication, limits, timeouts,
// server-sent events. It renders and tokenizes requests, hands them to the BatchScheduler and
// writes what comes back; it never touches the session itself (the scheduler's thread owns it),
// except through the scheduler.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "serve/answer_history.hpp"
#include "serve/api_keys.hpp"
#include "serve/api_request.hpp"
#include "serve/batch_scheduler.hpp"
#include "serve/metrics.hpp"
#include "mnemo/session/session.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace httplib {
class Server;
}

namespace mnemo::serve {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;                      // 0: any free port (bind() says which)
    std::optional<ApiKeys> keys;          // none: no authentication (loopback only)
    std::string tls_cert, tls_key;        // both or neither
    size_t max_body_bytes = size_t{8} << 20;
    int read_timeout_s = 30;              // a request that trickles in slower than this is dropped
    int write_timeout_s = 30;             // a client that stops reading is dropped
    int keep_alive_s = 5;
    int http_threads = 0;                 // 0: slots + queue + 4
    int keepalive_comment_ms = 2000;      // ": keep-alive" on a stream that has nothing to send
    bool grounded = false;                // --grounded: answers quote their references unless a
                                          // request says "grounded": false
    RequestLimits limits;
};

// What the routes need to know about the model.
struct ServedModel {
    std::string id;                       // what /v1/models lists
    const Tokenizer* tokenizer = nullptr;
    ChatTemplate chat_template;
    int32_t n_ctx = 0;
    bool reads_memories = false;          // answers carry references
    bool references_recorded = false;     // the scheduler sees each prompt's references (a memory
                                          // source is attached): answers can be grounded
    bool embeddings = false;              // /v1/embeddings answers
    int32_t embedding_max_tokens = 0;     // a text's tokens at most (the model's reference length)
    int64_t created = 0;
};

class ApiServer {
public:
    ApiServer(ServerOptions options, ServedModel model, BatchScheduler& scheduler, Metrics& metrics);
    ~ApiServer();
    // Binds the address; returns the port. Throws mnemo::Error (address in use, bad TLS files).
    int bind();
    // Serves until stop() (from another thread or a signal handler's helper).
    void run();
    void stop();

private:
    struct Routes;
    ServerOptions options_;
    ServedModel model_;
    BatchScheduler& scheduler_;
    Metrics& metrics_;
    AnswerHistory history_;
    std::unique_ptr<httplib::Server> http_;
    int listen_socket_ = -1;  // the bound socket, for its backlog (bind())
    std::shared_ptr<Routes> routes_keepalive_;  // the handlers' object, alive as long as the server
};

}  // namespace mnemo::serve
