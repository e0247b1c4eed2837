// The knowledge server's calls as the client makes them: one gRPC channel to one server (TLS or
// loopback plaintext), the bearer token on every call, a deadline on every call, and a failure
// turned into an error that names the server, the call and the gRPC status. Thread-safe (the stub
// and channel are); the retrieval logic lives in grpc_kb_source.cpp, which holds one per server.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kb/kb_endpoints.hpp"
#include "kb/kb_url.hpp"
#include "mnemo/error.hpp"
#include "mnemo_kb.grpc.pb.h"

namespace mnemo::detail {

namespace kbv1 = ::mnemo::kb::v1;

// A call that did not answer: "knowledge server grpcs://h:p: Retrieve failed: UNAVAILABLE: ...".
class KbCallError : public Error {
public:
    KbCallError(const std::string& message, grpc::StatusCode code) : Error(message), code(code) {}
    grpc::StatusCode code;
};

const char* grpc_code_name(grpc::StatusCode code);

class KbClient {
public:
    // Reads ca_file (PEM) now; the channel connects lazily, on the first call. gRPC refuses any
    // reply message above max_receive_bytes (raised to at least codebook_chunk_limit()).
    KbClient(const KbEndpoint& endpoint, const std::string& token, const std::string& ca_file, int max_receive_bytes);
    // The URL's own host (no address of its own): the admin calls.
    KbClient(const KbUrl& url, const std::string& token, const std::string& ca_file, int max_receive_bytes)
        : KbClient(KbEndpoint{url, url.url, url.target, ""}, token, ca_file, max_receive_bytes) {}
    // The largest GetCodebook message: the chunk size the client asks for, and its framing.
    static int codebook_chunk_limit();

    const KbUrl& url() const { return endpoint_.url; }
    const KbEndpoint& endpoint() const { return endpoint_; }
    // "knowledge server grpcs://h:p", or "knowledge server grpcs://h:p (10.0.0.2)"
    std::string name() const { return "knowledge server " + endpoint_.name; }

    // wait_for_ready: wait (up to the deadline) for the channel to connect instead of failing
    // at once while it is down: for the first call, not for calls in the generation loop.
    kbv1::InfoReply info(int32_t timeout_ms, bool wait_for_ready);
    // The codebook's bytes, reassembled from its chunks. Checked as they come, and the call
    // cancelled at the first fault: total_bytes against what any codebook of d_in-dimensional
    // vectors can be and then against the header's own size, d_in, chunk sizes and offsets.
    // `what` ("keys", "values") names the codebook in errors.
    std::string codebook(const std::string& sha256, uint32_t d_in, const std::string& what, int32_t timeout_ms,
                         bool wait_for_ready);
    kbv1::RetrieveMemoriesReply retrieve_memories(const kbv1::RetrieveRequest& request, int32_t timeout_ms);
    kbv1::RetrieveReply retrieve(const kbv1::RetrieveRequest& request, int32_t timeout_ms);
    // Records in the order asked; *reply_bytes grows by every message's size.
    std::vector<kbv1::MemoryRecord> fetch(const kbv1::FetchRequest& request, int32_t timeout_ms, uint64_t* reply_bytes);

    // A new channel in place of the current one (calls in flight finish on the old one). The
    // prober dials a server that is down anew before each look: gRPC's own reconnect backoff grows
    // while calls keep failing fast, and in our measurements (loopback, a server killed and
    // restarted 0.6 s later) held the channel off a restarted server for ~4 s, where a fresh
    // channel connected at once. The client's own backoff decides when to look again.
    void redial();

    // For calls made elsewhere on this channel (grpc_kb_admin.cpp): the stub (held by the caller
    // for a stream's whole life, whatever redial() does meanwhile), the deadline and token of a
    // context, and the error of a failed call.
    std::shared_ptr<kbv1::KnowledgeBase::Stub> current() const;
    void prepare(grpc::ClientContext& context, int32_t timeout_ms, bool wait_for_ready) const;
    [[noreturn]] void fail(const char* call, const grpc::Status& status) const;

private:
    KbEndpoint endpoint_;
    int max_receive_bytes_ = 0;
    std::string authorization_;  // "Bearer <token>", empty without a token
    std::shared_ptr<grpc::ChannelCredentials> credentials_;
    grpc::ChannelArguments arguments_;
    mutable std::mutex stub_mu_;
    std::shared_ptr<kbv1::KnowledgeBase::Stub> stub_;  // replaced by redial(); a call holds its own reference
};

}  // namespace mnemo::detail
