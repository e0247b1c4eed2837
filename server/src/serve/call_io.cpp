#include "serve/call_io.hpp"

#include <google/protobuf/message.h>

namespace mnemo::kb {

using grpc::Status;
using grpc::StatusCode;

bool CallIo::send(const google::protobuf::Message& m) {
    grpc::ByteBuffer bytes;
    bool own = false;
    if (!grpc::SerializationTraits<google::protobuf::Message>::Serialize(m, &bytes, &own).ok()) return false;
    const size_t size = bytes.Length();
    if (!stream_.Write(bytes)) return false;
    ++sent_;
    note_.bytes += size;
    return true;
}

Status CallIo::cap_exceeded(uint32_t max_call_seconds) {
    return Status(StatusCode::DEADLINE_EXCEEDED, "the call ran past the server's max_call_seconds (" + std::to_string(max_call_seconds) + " s)");
}

Status CallIo::cap_cancelled(uint32_t max_call_seconds) {
    return Status(StatusCode::DEADLINE_EXCEEDED, "the call ran past the server's max_call_seconds (" + std::to_string(max_call_seconds) +
                                                     " s) while the client was not reading, and was cancelled");
}

Status CallIo::state() const {
    if (watch_.expired()) return cap_exceeded(max_call_seconds_);
    if (std::chrono::system_clock::now() > deadline_)
        return Status(StatusCode::DEADLINE_EXCEEDED, "the call ran past its deadline or the server's max_call_seconds");
    if (ctx_.IsCancelled()) return Status(StatusCode::CANCELLED, "the client cancelled the call or went away");
    return Status::OK;
}

}  // namespace mnemo::kb
