// The KnowledgeBase service (engine/proto/mnemo_kb.proto) on gRPC's synchronous API. Every call
// goes through the same frame (run_call): authenticate the bearer token, take a slot of the
// client's concurrency limit, put the call under the watchdog of the server's call-time cap,
// read and decode the request (request_decode.hpp), check it (request_checks.hpp), answer, then
// count and log one line. Nothing in that frame locks on the read path: the bank is an atomic
// shared_ptr, the limits and counters are atomics.
//
// The methods are registered with raw byte buffers (every one as gRPC's bidirectional kind, which
// on the wire is every kind): gRPC's own typed parse would run before the call is authenticated,
// answer INTERNAL with an empty message to a malformed or non-UTF-8 request, and let protobuf
// write to stderr. Clients see no difference; the generated stubs call these methods as declared.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/rpc_service_method.h>
#include <grpcpp/support/method_handler.h>
#include <grpcpp/support/sync_stream.h>

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "mnemo_kb.grpc.pb.h"
#include "serve/access_tokens.hpp"
#include "serve/bank_editor.hpp"
#include "serve/bank_slot.hpp"
#include "serve/call_watchdog.hpp"
#include "serve/request_log.hpp"
#include "serve/serve_counters.hpp"
#include "serve/serve_limits.hpp"
#include "serve/shard_peers.hpp"

namespace mnemo::kb {

struct ServiceConfig {
    ServeLimits limits;
    std::shared_ptr<const TokenTable> tokens;  // TokenTable::anonymous() for --no-auth
    std::string server_version;
    // One line per request and per reload problem (no newline); empty: silent (--log-quiet).
    std::function<void(const std::string&)> log;
    // AddDocuments and DeleteDocuments change the bank through this; null: they answer
    // FAILED_PRECONDITION (a server whose bank is not a folder it may write, as in some tests).
    std::shared_ptr<BankEditor> editor;
    // A node of a sharded index (its bank opened with BankOpenOptions::shards > 1): the other
    // shards' nodes, asked on every client Retrieve (shard_fanout.hpp). Null: the bank is whole
    // (or this node answers only other nodes' shard requests, and clients get FAILED_PRECONDITION).
    std::shared_ptr<ShardPeers> shard_peers;
};

class CallIo;

class KbService final : public grpc::Service {
public:
    KbService(BankSlot& bank, ServiceConfig config);

    // The Reload call's work, also run by the --watch-seconds poller: counts, logs a failure, and
    // rethrows it (the served bank stays).
    ReloadOutcome reload_bank();
    const ServeCounters& counters() const { return counters_; }
    const ServeLimits& limits() const { return config_.limits; }
    size_t watched_calls() const { return watchdog_.watched(); }

    using CallNote = kb::CallNote;
    using RawStream = grpc::ServerReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;

private:
    template <class Request>
    using Body = grpc::Status (KbService::*)(const Request&, CallIo&);

    // client_stream: the method reads its request messages itself (CallIo::read); the frame
    // reads none.
    template <class Request>
    void add_method(KbMethod method, TokenScope needed, bool unary, Body<Request> body, bool client_stream = false);
    template <class Request>
    grpc::Status run_call(KbMethod method, grpc::ServerContext* ctx, RawStream* stream, TokenScope needed, bool unary,
                          bool client_stream, Body<Request> body);
    grpc::Status authenticate(grpc::ServerContext* ctx, KbMethod method, TokenScope needed, const TokenEntry** who) const;
    void log(const std::string& line) const;

    // The methods (kb_methods.cpp), each given its decoded request.
    grpc::Status info(const v1::InfoRequest& req, CallIo& io);
    grpc::Status health(const v1::HealthRequest& req, CallIo& io);
    grpc::Status retrieve(const v1::RetrieveRequest& req, CallIo& io);
    grpc::Status fetch_memories(const v1::FetchRequest& req, CallIo& io);
    grpc::Status retrieve_memories(const v1::RetrieveRequest& req, CallIo& io);
    grpc::Status get_codebook(const v1::CodebookRequest& req, CallIo& io);
    grpc::Status reload(const v1::ReloadRequest& req, CallIo& io);
    // kb_admin_methods.cpp
    grpc::Status add_documents(const v1::AddDocumentsRequest& unused, CallIo& io);
    grpc::Status delete_documents(const v1::DeleteDocumentsRequest& req, CallIo& io);
    grpc::Status retrieve_into(CallIo& io, const Bank& bank, const v1::RetrieveRequest& req, v1::RetrieveReply* reply) const;
    // The hits of a client's query: the bank's own, or merged from every shard (shard_fanout.hpp).
    grpc::Status ranked_hits(CallIo& io, const Bank& bank, const BankQuery& q, uint32_t k, std::vector<BankHit>* hits) const;

    BankSlot& bank_;
    ServiceConfig config_;
    ServeCounters counters_;
    CallWatchdog watchdog_;
    std::array<std::string, kKbMethods> paths_;  // "/mnemo.kb.v1.KnowledgeBase/Info": gRPC keeps the pointers
};

// When a call must stop: the client's deadline or the server's cap, whichever comes first.
std::chrono::system_clock::time_point call_deadline(const grpc::ServerContext& ctx, std::chrono::system_clock::time_point start,
                                                    uint32_t max_call_seconds);

}  // namespace mnemo::kb
