// What a method of the service sees of its call (kb_service.hpp): the context, a way to send a
// reply message, the note for the log line, and whether it must stop. A method never touches the
// raw stream: send() serializes and counts, state() says why a call must end early.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/proto_utils.h>  // SerializationTraits of protobuf messages
#include <grpcpp/support/sync_stream.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "serve/access_tokens.hpp"
#include "serve/call_watchdog.hpp"
#include "serve/request_log.hpp"

namespace google::protobuf {
class Message;
}

namespace mnemo::kb {

class CallIo {
public:
    using RawStream = grpc::ServerReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;

    CallIo(grpc::ServerContext& ctx, RawStream& stream, std::chrono::system_clock::time_point deadline, uint32_t max_call_seconds,
           const CallWatchdog::Watch& watch, CallNote& note)
        : ctx_(ctx), stream_(stream), deadline_(deadline), max_call_seconds_(max_call_seconds), watch_(watch), note_(note) {}

    grpc::ServerContext& context() { return ctx_; }
    std::string client;  // the caller's token name (for messages about who holds what)
    TokenScope scope = TokenScope::Read;  // the caller's token's scope (a shard request needs shard or admin)
    // When the call must end: the client's deadline or the server's cap, whichever comes first.
    std::chrono::system_clock::time_point deadline() const { return deadline_; }
    CallNote& note() { return note_; }

    // Serializes `m` and sends it; adds its size to the note. False when it was not sent: the
    // client went away, or the call was cancelled (by the client, its deadline or the watchdog).
    bool send(const google::protobuf::Message& m);
    size_t sent() const { return sent_; }
    // A client-streaming call's next request message, decoded (request_decode.hpp). OK with
    // *end = true when the client half-closed; CANCELLED when it cancelled or went away; an
    // INVALID_ARGUMENT naming the message's index when it does not decode.
    grpc::Status read(google::protobuf::Message& m, bool* end);
    size_t received() const { return received_; }

    // OK while the call may go on; otherwise the status it ends with: DEADLINE_EXCEEDED past the
    // client's deadline or the server's cap, CANCELLED when the client cancelled or went away.
    grpc::Status state() const;
    // For work inside one message (a retrieval over the whole bank): true when state() is not OK.
    bool should_stop() const { return !state().ok(); }

    // The status of a call past the server's cap; of one the watchdog had to cancel (a write had
    // blocked past the cap and its grace: the client sees CANCELLED, the log says this).
    static grpc::Status cap_exceeded(uint32_t max_call_seconds);
    static grpc::Status cap_cancelled(uint32_t max_call_seconds);

private:
    grpc::ServerContext& ctx_;
    RawStream& stream_;
    std::chrono::system_clock::time_point deadline_;
    uint32_t max_call_seconds_;
    const CallWatchdog::Watch& watch_;
    CallNote& note_;
    size_t sent_ = 0;
    size_t received_ = 0;
};

}  // namespace mnemo::kb
