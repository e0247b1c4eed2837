// A running knowledge server: the service (kb_service.hpp) behind a gRPC listener, with TLS or
// loopback plaintext (listen_policy.hpp), the bank slot and its --watch-seconds poller. What
// `mnemo-kb serve` runs, and what tests start in-process:
//
//     ServeOptions o;
//     o.listen = "127.0.0.1:0";  o.insecure = true;  o.tokens = TokenTable::parse(..., "test");
//     auto server = KbServer::start(provider, o);  // listening when it returns
//     auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server->port()), ...);
//     ...
//     server->shutdown(std::chrono::seconds(2));
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "serve/bank_slot.hpp"
#include "serve/kb_service.hpp"

namespace mnemo::kb {

struct ServeOptions {
    std::string listen;         // "HOST:PORT"; port 0 lets the system pick (port() tells)
    std::string tls_cert_pem;   // certificate chain and private key (PEM text, not paths);
    std::string tls_key_pem;    // both empty: plaintext, which needs `insecure`
    bool insecure = false;
    std::shared_ptr<const TokenTable> tokens;  // nullptr: no authentication, which needs no_auth
    bool no_auth = false;
    ServeLimits limits;
    uint32_t watch_seconds = 0;  // 0: reload only when asked (Reload)
    std::string server_version;
    std::function<void(const std::string&)> log;  // per-request lines; empty: quiet
    // Runs once the bank is open, before gRPC starts any thread. `mnemo-kb serve` blocks SIGINT
    // and SIGTERM there: every gRPC thread inherits the mask (the signals go to its sigwait
    // thread), while the bank's open, however long, stays interruptible by them.
    std::function<void()> before_threads;
    // What AddDocuments/DeleteDocuments write through (bank_editor.hpp); null: they are refused
    // with FAILED_PRECONDITION. Its storage must be the one `provider` opens.
    std::shared_ptr<BankEditor> editor;
    // A node of a sharded index: the other shards' nodes (shard_peers.hpp). The provider must
    // open this node's shard of the bank (BankOpenOptions).
    std::shared_ptr<ShardPeers> shard_peers;
};

class KbServer {
public:
    // Checks the options (transport_problem: mnemo::Error with its message; a TLS key that is
    // not the certificate's), opens the bank, binds and starts serving. Throws mnemo::Error
    // naming the address when it cannot bind.
    static std::unique_ptr<KbServer> start(BankProvider provider, ServeOptions options);
    ~KbServer();

    int port() const { return port_; }
    // Blocks until shutdown() (from another thread: a signal handler's thread, a test).
    void wait();
    // Stops taking calls, lets those in flight finish for up to `grace`, then cancels them.
    // Idempotent.
    void shutdown(std::chrono::milliseconds grace);

    KbService& service() { return *service_; }
    std::shared_ptr<const Bank> bank() const { return slot_->current(); }

private:
    KbServer() = default;
    void watch_loop(uint32_t seconds);

    std::unique_ptr<BankSlot> slot_;
    std::unique_ptr<KbService> service_;
    std::unique_ptr<grpc::Server> server_;
    int port_ = 0;
    std::thread watcher_;
    std::mutex stop_mutex_;
    std::condition_variable stop_cv_;
    bool stopping_ = false;
};

}  // namespace mnemo::kb
