// The call frame of the service (kb_service.hpp): registration, authentication, the per-client
// slot, the call-time watchdog, reading the request, counting and logging. The methods' own work
// is in kb_methods.cpp.
#include "serve/kb_service.hpp"

#include <google/protobuf/descriptor.h>

#include <cstdio>

#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"
#include "serve/call_io.hpp"
#include "serve/request_decode.hpp"

namespace mnemo::kb {
namespace {

using grpc::Status;
using grpc::StatusCode;
using Clock = std::chrono::system_clock;

constexpr std::string_view kBearer = "Bearer ";
// How long past the cap a call may take to notice it before the watchdog cancels it: a call that
// computes checks within milliseconds, so one still running is stuck in a write.
constexpr std::chrono::milliseconds kStuckGrace{1500};

// Gives back a client's concurrency slot and the server's in-flight count when a call ends,
// however it ends.
class CallSlot {
public:
    explicit CallSlot(ServeCounters& c) : counters_(c) { counters_.enter(); }
    ~CallSlot() {
        if (client_) client_->in_flight.fetch_sub(1, std::memory_order_relaxed);
        counters_.leave();
    }
    // False when the client already has `limit` calls in flight.
    bool take(const TokenEntry* client, uint32_t limit) {
        if (client->in_flight.fetch_add(1, std::memory_order_relaxed) >= limit) {
            client->in_flight.fetch_sub(1, std::memory_order_relaxed);
            return false;
        }
        client_ = client;
        return true;
    }

private:
    ServeCounters& counters_;
    const TokenEntry* client_ = nullptr;
};

std::string flatten(const grpc::ByteBuffer& buffer) {
    std::vector<grpc::Slice> slices;
    std::string out;
    if (!buffer.Dump(&slices).ok()) return out;
    out.reserve(buffer.Length());
    for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
    return out;
}

// The request message of a call: read once, decoded with an error that names the field.
Status read_request(grpc::ServerContext* ctx, KbService::RawStream* stream, google::protobuf::Message& request) {
    grpc::ByteBuffer bytes;
    if (!stream->Read(&bytes)) {
        // gRPC gives no reason: a request above max_receive_message_bytes is refused by gRPC
        // itself (the client sees RESOURCE_EXHAUSTED) exactly as a cancelled one ends here.
        if (ctx->IsCancelled())
            return Status(StatusCode::CANCELLED, "the request never arrived: the client cancelled or went away, or it was larger than "
                                                 "max_receive_message_bytes (gRPC then answered RESOURCE_EXHAUSTED)");
        // The cancellation of a call gRPC refused for its size may not be visible yet: the log
        // line names that cause too, rather than only "no message".
        return Status(StatusCode::INVALID_ARGUMENT, "the call carried no request message (or one larger than "
                                                    "max_receive_message_bytes, which gRPC refused)");
    }
    return decode_request(flatten(bytes), request);
}

}  // namespace

Clock::time_point call_deadline(const grpc::ServerContext& ctx, Clock::time_point start, uint32_t max_call_seconds) {
    const Clock::time_point cap = start + std::chrono::seconds(max_call_seconds);
    return std::min(cap, ctx.deadline());
}

KbService::KbService(BankSlot& bank, ServiceConfig config) : bank_(bank), config_(std::move(config)), watchdog_(kStuckGrace) {
    if (!config_.tokens) throw Error("knowledge service: no token table (TokenTable::anonymous() serves without tokens)");
    if (config_.limits.max_k == 0 || config_.limits.max_ids_per_request == 0 || config_.limits.max_streams_per_client == 0 ||
        config_.limits.max_call_seconds == 0 || config_.limits.max_add_documents == 0 || config_.limits.max_add_bytes == 0 ||
        config_.limits.max_add_seconds == 0)
        throw Error("knowledge service: every limit must be at least 1");
    add_method<v1::InfoRequest>(KbMethod::Info, TokenScope::Read, true, &KbService::info);
    add_method<v1::HealthRequest>(KbMethod::Health, TokenScope::Read, true, &KbService::health);
    add_method<v1::RetrieveRequest>(KbMethod::Retrieve, TokenScope::Read, true, &KbService::retrieve);
    add_method<v1::FetchRequest>(KbMethod::FetchMemories, TokenScope::Read, false, &KbService::fetch_memories);
    add_method<v1::RetrieveRequest>(KbMethod::RetrieveMemories, TokenScope::Read, true, &KbService::retrieve_memories);
    add_method<v1::CodebookRequest>(KbMethod::GetCodebook, TokenScope::Read, false, &KbService::get_codebook);
    add_method<v1::ReloadRequest>(KbMethod::Reload, TokenScope::Admin, true, &KbService::reload);
    add_method<v1::AddDocumentsRequest>(KbMethod::AddDocuments, TokenScope::Admin, false, &KbService::add_documents, true);
    add_method<v1::DeleteDocumentsRequest>(KbMethod::DeleteDocuments, TokenScope::Admin, true, &KbService::delete_documents);
}

template <class Request>
void KbService::add_method(KbMethod method, TokenScope needed, bool unary, Body<Request> body, bool client_stream) {
    // The path and request type come from the proto's own descriptor, so a renamed or reordered
    // method fails here, at start, instead of answering UNIMPLEMENTED to every client.
    const google::protobuf::ServiceDescriptor* service = Request::descriptor()->file()->FindServiceByName("KnowledgeBase");
    const google::protobuf::MethodDescriptor* md = service ? service->FindMethodByName(method_name(method)) : nullptr;
    if (md == nullptr || md->input_type() != Request::descriptor() || md->client_streaming() != client_stream || md->server_streaming() == unary)
        throw Error(std::string("knowledge service: the proto has no method ") + method_name(method) + " of this shape");
    std::string& path = paths_[static_cast<size_t>(method)];
    path = "/" + service->full_name() + "/" + md->name();
    AddMethod(new grpc::internal::RpcServiceMethod(
        path.c_str(), grpc::internal::RpcMethod::BIDI_STREAMING,
        new grpc::internal::BidiStreamingHandler<KbService, grpc::ByteBuffer, grpc::ByteBuffer>(
            [method, needed, unary, body, client_stream](KbService* self, grpc::ServerContext* ctx, RawStream* stream) {
                return self->run_call<Request>(method, ctx, stream, needed, unary, client_stream, body);
            },
            this)));
}

void KbService::log(const std::string& line) const {
    if (config_.log) config_.log(line);
}

namespace {
// What a shard-scope token may call: the one call a node makes of another, and the cheap probes.
// Its Retrieve is narrowed further to shard requests (kb_methods.cpp).
bool shard_scope_allows(KbMethod method) { return method == KbMethod::Retrieve || method == KbMethod::Info || method == KbMethod::Health; }
}  // namespace

Status KbService::authenticate(grpc::ServerContext* ctx, KbMethod method, TokenScope needed, const TokenEntry** who) const {
    const TokenTable& tokens = *config_.tokens;
    if (tokens.is_anonymous()) {
        *who = tokens.find("");
        return Status::OK;
    }
    const auto& md = ctx->client_metadata();
    const auto it = md.find("authorization");
    if (it == md.end()) return Status(StatusCode::UNAUTHENTICATED, "missing metadata 'authorization: Bearer <token>'");
    const std::string_view value(it->second.data(), it->second.size());
    if (value.size() <= kBearer.size() || value.substr(0, kBearer.size()) != kBearer)
        return Status(StatusCode::UNAUTHENTICATED, "the authorization metadata is not 'Bearer <token>'");
    const TokenEntry* entry = tokens.find(value.substr(kBearer.size()));
    if (entry == nullptr) return Status(StatusCode::UNAUTHENTICATED, "the token is not one this server accepts");
    *who = entry;
    if (entry->scope == TokenScope::Shard && !shard_scope_allows(method))
        return Status(StatusCode::PERMISSION_DENIED, "client '" + entry->name + "' has the shard scope, which asks for a shard's rankings "
                                                     "(Retrieve with shard set), Info and Health only; " + method_name(method) + " needs read");
    if (!entry->allows(needed))
        return Status(StatusCode::PERMISSION_DENIED, "client '" + entry->name + "' has the " + scope_name(entry->scope) + " scope; this call needs " +
                                                         scope_name(needed));
    return Status::OK;
}

template <class Request>
Status KbService::run_call(KbMethod method, grpc::ServerContext* ctx, RawStream* stream, TokenScope needed, bool unary,
                           bool client_stream, Body<Request> body) {
    const auto start_wall = Clock::now();
    const auto start = std::chrono::steady_clock::now();
    // AddDocuments memorizes: its cap is its own (max_add_seconds), not a retrieval's.
    const uint32_t cap = method == KbMethod::AddDocuments ? config_.limits.max_add_seconds : config_.limits.max_call_seconds;
    counters_.request(method);
    CallSlot slot(counters_);
    CallNote note;
    const TokenEntry* who = nullptr;
    // Authentication first: nothing of an unauthenticated caller's request is read or parsed.
    Status status = authenticate(ctx, method, needed, &who);
    // A shard token is one node asking for its clients' retrievals, which their own tokens'
    // limits already bound on that node: limiting it here would fail those clients' calls.
    if (status.ok() && who->scope != TokenScope::Shard && !slot.take(who, config_.limits.max_streams_per_client))
        status = Status(StatusCode::RESOURCE_EXHAUSTED, "client '" + who->name + "' already has " +
                                                            std::to_string(config_.limits.max_streams_per_client) +
                                                            " calls in flight (max_streams_per_client)");
    if (status.ok()) {
        // At the cap the watchdog marks the call expired (its checks end it); a call still
        // running kStuckGrace later is blocked in a write the client does not read (flow
        // control), and the watchdog cancels it, which frees this thread and the client's slot.
        const std::unique_ptr<CallWatchdog::Watch> watch =
            watchdog_.watch(start + std::chrono::seconds(cap), [ctx] { ctx->TryCancel(); });
        Request request;
        if (!client_stream) status = read_request(ctx, stream, request);
        if (status.ok()) {
            CallIo io(*ctx, *stream, call_deadline(*ctx, start_wall, cap), cap, *watch, note);
            io.client = who->name;
            io.scope = who->scope;
            try {
                status = (this->*body)(request, io);
            } catch (const std::exception& e) {
                // Bank errors name the server's files: the log keeps them, the client gets the kind.
                note.server_error = e.what();
                status = Status(StatusCode::INTERNAL, std::string("the server failed to answer this ") + method_name(method) +
                                                          " call (its log has the details)");
            }
            if (status.ok() && unary && io.sent() != 1)
                status = io.state().ok() ? Status(StatusCode::INTERNAL, "the server sent no reply") : io.state();
        }
        // A cancelled call's status never reaches its client; the log tells why it ended.
        if (watch->cancelled()) status = CallIo::cap_cancelled(cap);
        // The watch ends here, before the call does: no TryCancel can reach a finished call.
    }
    counters_.finished(status.error_code());
    counters_.records(note.records);
    counters_.bytes(note.bytes);
    if (config_.log) {
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        log(format_request_log(start_wall, ctx->peer(), who ? who->name : "", method, status, ms, note));
    }
    return status;
}

ReloadOutcome KbService::reload_bank() {
    try {
        const ReloadOutcome out = bank_.reload();
        if (out.changed()) {
            counters_.reload(true);
            log("reload: " + printable(bank_.describe()) + ": now serving version " + std::to_string(out.version) + " (was " +
                std::to_string(out.previous_version) + ")");
        }
        return out;
    } catch (const std::exception& e) {
        counters_.reload(false);
        const uint64_t kept = bank_.current()->version();
        // Always said, even with --log-quiet: the operator must learn that a publish did not load.
        const std::string line = "reload failed: " + printable(e.what()) + "; still serving version " + std::to_string(kept);
        if (config_.log) {
            log(line);
        } else {
            std::fprintf(stderr, "mnemo-kb serve: %s\n", line.c_str());
        }
        throw Error(line);
    }
}

}  // namespace mnemo::kb
