// A request message from its wire bytes, with an error a client can act on. The server reads
// requests as raw bytes (kb_service.cpp) instead of letting gRPC parse them, because gRPC's own
// parse of a proto3 message answers INTERNAL with an empty message when the bytes are malformed
// or a `string` field holds invalid UTF-8, before the call is authenticated, and protobuf writes
// its UTF-8 complaint to stderr meanwhile. Here the bytes are first read as a schema-less field
// set, every field the schema declares `string` is checked with mnemo::is_valid_utf8, and only a
// clean message reaches protobuf's parser (which then has nothing to complain about). Pure: the
// fuzz target (tests/fuzz/fuzz_kb_request.cpp) calls it directly.
#pragma once

#include <grpcpp/support/status.h>

#include <string_view>

namespace google::protobuf {
class Message;
}

namespace mnemo::kb {

// OK and `out` filled, or INVALID_ARGUMENT naming the message type and what is wrong: malformed
// encoding, or the field (with its index when repeated, "filter.sources[2]") that is not UTF-8.
grpc::Status decode_request(std::string_view bytes, google::protobuf::Message& out);

}  // namespace mnemo::kb
