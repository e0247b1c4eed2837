// The KnowledgeBase service (engine/proto/mnemo_kb.proto) on gRPC's synchronous API. Every call
// goes through the same frame (run_call): authenticate the bearer token, take a slot of the
// client's concurrency limit, take a reference to the current bank, check the request
// (request_checks.hpp), answer, then count and log one line. Nothing in that frame locks: the bank
// is an atomic shared_ptr, the limits and counters are atomics.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "mnemo_kb.grpc.pb.h"
#include "serve/access_tokens.hpp"
#include "serve/bank_slot.hpp"
#include "serve/serve_counters.hpp"
#include "serve/serve_limits.hpp"

namespace mnemo::kb {

struct ServiceConfig {
    ServeLimits limits;
    std::shared_ptr<const TokenTable> tokens;  // TokenTable::anonymous() for --no-auth
    std::string server_version;
    // One line per request and per reload problem (no newline); empty: silent (--log-quiet).
    std::function<void(const std::string&)> log;
};

class KbService final : public v1::KnowledgeBase::Service {
public:
    KbService(BankSlot& bank, ServiceConfig config);

    grpc::Status Info(grpc::ServerContext* ctx, const v1::InfoRequest* req, v1::InfoReply* reply) override;
    grpc::Status Health(grpc::ServerContext* ctx, const v1::HealthRequest* req, v1::HealthReply* reply) override;
    grpc::Status Retrieve(grpc::ServerContext* ctx, const v1::RetrieveRequest* req, v1::RetrieveReply* reply) override;
    grpc::Status FetchMemories(grpc::ServerContext* ctx, const v1::FetchRequest* req,
                               grpc::ServerWriter<v1::MemoryRecord>* writer) override;
    grpc::Status RetrieveMemories(grpc::ServerContext* ctx, const v1::RetrieveRequest* req,
                                  v1::RetrieveMemoriesReply* reply) override;
    grpc::Status GetCodebook(grpc::ServerContext* ctx, const v1::CodebookRequest* req,
                             grpc::ServerWriter<v1::CodebookChunk>* writer) override;
    grpc::Status Reload(grpc::ServerContext* ctx, const v1::ReloadRequest* req, v1::ReloadReply* reply) override;

    // The Reload call's work, also run by the --watch-seconds poller: counts, logs a failure, and
    // rethrows it (the served bank stays).
    ReloadOutcome reload_bank();
    const ServeCounters& counters() const { return counters_; }
    const ServeLimits& limits() const { return config_.limits; }

    // What one call did, for its log line and the counters.
    struct CallNote {
        std::string detail;  // "k=5 hits=5": counts only, never query text
        uint64_t records = 0;
        uint64_t bytes = 0;
    };

private:
    template <class Body>
    grpc::Status run_call(KbMethod method, grpc::ServerContext* ctx, TokenScope needed, Body&& body);
    grpc::Status authenticate(grpc::ServerContext* ctx, TokenScope needed, const TokenEntry** who) const;
    grpc::Status retrieve_into(grpc::ServerContext* ctx, const Bank& bank, const v1::RetrieveRequest& req, v1::RetrieveReply* reply,
                               CallNote& note) const;
    void log(const std::string& line) const;

    BankSlot& bank_;
    ServiceConfig config_;
    ServeCounters counters_;
};

// When a call must stop: the client's deadline or the server's cap, whichever comes first.
std::chrono::system_clock::time_point call_deadline(const grpc::ServerContext& ctx, std::chrono::system_clock::time_point start,
                                                    uint32_t max_call_seconds);

// The request log line (docs/kb-protocol.md, "Logs"): UTC time, peer, client name, method,
// status, milliseconds, the call's counts, and the error's message.
std::string format_request_log(std::chrono::system_clock::time_point when, const std::string& peer, const std::string& client,
                               KbMethod method, const grpc::Status& status, double ms, const KbService::CallNote& note);

}  // namespace mnemo::kb
