#include "serve/kb_server.hpp"

#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"
#include "serve/listen_policy.hpp"
#include "serve/tls_key_match.hpp"

namespace mnemo::kb {

std::unique_ptr<KbServer> KbServer::start(BankProvider provider, ServeOptions o) {
    TransportChoice choice;
    choice.listen = o.listen;
    choice.tls = !o.tls_cert_pem.empty() || !o.tls_key_pem.empty();
    choice.insecure = o.insecure;
    choice.tokens = o.tokens != nullptr;
    choice.no_auth = o.no_auth;
    if (const std::string problem = transport_problem(choice); !problem.empty()) throw Error("serve: " + problem);
    if (choice.tls && (o.tls_cert_pem.empty() || o.tls_key_pem.empty())) throw Error("serve: TLS needs both a certificate and a key");
    if (choice.tls) {
        const std::string mismatch = tls_key_mismatch(o.tls_cert_pem, o.tls_key_pem, "the certificate", "the key");
        if (!mismatch.empty()) throw Error("serve: " + mismatch);
    }

    std::unique_ptr<KbServer> s(new KbServer());
    const std::string what = provider.describe;
    try {
        s->slot_ = std::make_unique<BankSlot>(std::move(provider));
    } catch (const std::exception& e) {
        throw Error("serve: opening " + printable(what) + ": " + e.what());
    }
    if (o.before_threads) o.before_threads();
    ServiceConfig config;
    config.limits = o.limits;
    config.tokens = o.tokens ? o.tokens : TokenTable::anonymous();
    config.server_version = o.server_version;
    config.log = o.log;
    config.editor = o.editor;
    config.shard_peers = o.shard_peers;
    s->service_ = std::make_unique<KbService>(*s->slot_, std::move(config));

    std::shared_ptr<grpc::ServerCredentials> creds;
    if (choice.tls) {
        grpc::SslServerCredentialsOptions ssl;
        ssl.pem_key_cert_pairs.push_back({o.tls_key_pem, o.tls_cert_pem});
        creds = grpc::SslServerCredentials(ssl);
    } else {
        creds = grpc::InsecureServerCredentials();
    }
    grpc::ServerBuilder builder;
    builder.AddListeningPort(o.listen, creds, &s->port_);
    builder.SetMaxReceiveMessageSize(static_cast<int>(o.limits.max_receive_bytes));
    builder.RegisterService(s->service_.get());
    s->server_ = builder.BuildAndStart();
    if (!s->server_ || s->port_ == 0)
        throw Error("serve: cannot listen on '" + printable(o.listen) + "' (address in use, or not an address of this machine)");
    if (o.watch_seconds > 0) s->watcher_ = std::thread([raw = s.get(), n = o.watch_seconds] { raw->watch_loop(n); });
    return s;
}

KbServer::~KbServer() { shutdown(std::chrono::milliseconds(0)); }

void KbServer::watch_loop(uint32_t seconds) {
    std::unique_lock<std::mutex> lock(stop_mutex_);
    while (!stop_cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return stopping_; })) {
        lock.unlock();
        try {
            service_->reload_bank();
        } catch (const std::exception&) {
            // reload_bank() said it; the old bank keeps serving and the next poll tries again.
        }
        lock.lock();
    }
}

void KbServer::wait() {
    if (server_) server_->Wait();
}

void KbServer::shutdown(std::chrono::milliseconds grace) {
    {
        std::lock_guard<std::mutex> lock(stop_mutex_);
        if (stopping_) return;
        stopping_ = true;
    }
    stop_cv_.notify_all();
    if (watcher_.joinable()) watcher_.join();
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + grace);
}

}  // namespace mnemo::kb
