#include "serve/call_io.hpp"

#include <google/protobuf/message.h>

#include "serve/request_decode.hpp"

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

Status CallIo::read(google::protobuf::Message& m, bool* end) {
    *end = false;
    grpc::ByteBuffer bytes;
    if (!stream_.Read(&bytes)) {
        if (ctx_.IsCancelled()) return Status(StatusCode::CANCELLED, "the client cancelled the call or went away while sending");
        *end = true;
        return Status::OK;
    }
    const size_t index = received_++;
    std::vector<grpc::Slice> slices;
    std::string flat;
    if (bytes.Dump(&slices).ok())
        for (const grpc::Slice& s : slices) flat.append(reinterpret_cast<const char*>(s.begin()), s.size());
    const Status st = decode_request(flat, m);
    if (!st.ok()) return Status(st.error_code(), "request message " + std::to_string(index) + ": " + st.error_message());
    return st;
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
