#include "kb/grpc_kb_client.hpp"

#include <chrono>
#include <fstream>
#include <sstream>

namespace mnemo::detail {

namespace {

// A codebook is a few MiB; far above that is a server that lies about total_bytes.
constexpr uint64_t kMaxCodebookBytes = uint64_t{1} << 30;
// Replies carry k records (a 156M Memory3 model's compressed record is tens of KiB): well
// below this, which only guards against a runaway server.
constexpr int kMaxReplyBytes = 64 << 20;

grpc::ChannelArguments channel_arguments() {
    grpc::ChannelArguments a;
    // Reconnect soon after a server restart: gRPC's defaults (1 s, growing to 120 s) would keep
    // a client without memories for minutes after the server is back.
    a.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 250);
    a.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 250);
    a.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 4000);
    // Pings only while a call is open (a codebook download on a slow link): a dead peer is then
    // noticed in ~40 s. No pings between calls: servers with gRPC's default policy answer
    // frequent call-less pings with GOAWAY (too_many_pings), and between chunks the next call's
    // deadline finds a dead link anyway.
    a.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
    a.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
    a.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
    // The client has its own backoff and answers the chunk without memories: a transparent
    // retry would only spend the chunk's deadline.
    a.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
    a.SetMaxReceiveMessageSize(kMaxReplyBytes);
    return a;
}

std::string read_pem(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("--kb-ca '" + path + "': cannot open");
    std::ostringstream s;
    s << f.rdbuf();
    if (s.str().find("-----BEGIN CERTIFICATE-----") == std::string::npos)
        throw Error("--kb-ca '" + path + "': not a PEM certificate file (no BEGIN CERTIFICATE)");
    return s.str();
}

}  // namespace

const char* grpc_code_name(grpc::StatusCode code) {
    switch (code) {
        case grpc::StatusCode::OK: return "OK";
        case grpc::StatusCode::CANCELLED: return "CANCELLED";
        case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
        case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
        case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
        case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
        case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
        case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
        case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
        case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
        case grpc::StatusCode::ABORTED: return "ABORTED";
        case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
        case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
        case grpc::StatusCode::INTERNAL: return "INTERNAL";
        case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
        case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
        case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
        default: return "UNKNOWN_STATUS";
    }
}

KbClient::KbClient(const KbUrl& url, const std::string& token, const std::string& ca_file) : url_(url) {
    if (!token.empty()) authorization_ = "Bearer " + token;
    std::shared_ptr<grpc::ChannelCredentials> creds;
    if (url_.tls) {
        grpc::SslCredentialsOptions ssl;
        if (!ca_file.empty()) ssl.pem_root_certs = read_pem(ca_file);  // empty: gRPC's system roots
        creds = grpc::SslCredentials(ssl);
    } else {
        creds = grpc::InsecureChannelCredentials();  // parse_kb_url allowed it: a loopback host
    }
    channel_ = grpc::CreateCustomChannel(url_.target, creds, channel_arguments());
    stub_ = kbv1::KnowledgeBase::NewStub(channel_);
}

void KbClient::prepare(grpc::ClientContext& context, int32_t timeout_ms, bool wait_for_ready) const {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
    context.set_wait_for_ready(wait_for_ready);
    if (!authorization_.empty()) context.AddMetadata("authorization", authorization_);
}

void KbClient::fail(const char* call, const grpc::Status& status) const {
    std::string msg = name() + ": " + call + " failed: " + grpc_code_name(status.error_code());
    if (!status.error_message().empty()) msg += ": " + status.error_message();
    throw KbCallError(msg, status.error_code());
}

kbv1::InfoReply KbClient::info(int32_t timeout_ms, bool wait_for_ready) {
    grpc::ClientContext context;
    prepare(context, timeout_ms, wait_for_ready);
    kbv1::InfoReply reply;
    const grpc::Status st = stub_->Info(&context, kbv1::InfoRequest(), &reply);
    if (!st.ok()) fail("Info", st);
    return reply;
}

std::string KbClient::codebook(const std::string& sha256, int32_t timeout_ms, bool wait_for_ready) {
    grpc::ClientContext context;
    prepare(context, timeout_ms, wait_for_ready);
    kbv1::CodebookRequest req;
    req.set_sha256(sha256);
    auto reader = stub_->GetCodebook(&context, req);
    std::string bytes;
    uint64_t total = 0;
    bool first = true;
    kbv1::CodebookChunk chunk;
    std::string bad;  // a malformed stream: keep reading (Finish needs it), report after
    while (reader->Read(&chunk)) {
        if (!bad.empty()) continue;
        if (first) {
            total = chunk.total_bytes();
            if (total > kMaxCodebookBytes) bad = "total_bytes " + std::to_string(total) + " is implausible";
            first = false;
        } else if (chunk.total_bytes() != total) {
            bad = "total_bytes changed between chunks";
        }
        if (bad.empty() && chunk.offset() != bytes.size())
            bad = "chunk at offset " + std::to_string(chunk.offset()) + ", expected " + std::to_string(bytes.size());
        if (bad.empty() && bytes.size() + chunk.data().size() > total) bad = "more bytes than total_bytes";
        if (bad.empty()) bytes += chunk.data();
    }
    const grpc::Status st = reader->Finish();
    if (!st.ok()) fail("GetCodebook", st);
    const std::string where = name() + ": GetCodebook " + sha256 + ": ";
    if (!bad.empty()) throw Error(where + bad);
    if (first || bytes.size() != total)
        throw Error(where + "received " + std::to_string(bytes.size()) + " of " + std::to_string(total) + " bytes");
    return bytes;
}

kbv1::RetrieveMemoriesReply KbClient::retrieve_memories(const kbv1::RetrieveRequest& request, int32_t timeout_ms) {
    grpc::ClientContext context;
    prepare(context, timeout_ms, false);
    kbv1::RetrieveMemoriesReply reply;
    const grpc::Status st = stub_->RetrieveMemories(&context, request, &reply);
    if (!st.ok()) fail("RetrieveMemories", st);
    return reply;
}

kbv1::RetrieveReply KbClient::retrieve(const kbv1::RetrieveRequest& request, int32_t timeout_ms) {
    grpc::ClientContext context;
    prepare(context, timeout_ms, false);
    kbv1::RetrieveReply reply;
    const grpc::Status st = stub_->Retrieve(&context, request, &reply);
    if (!st.ok()) fail("Retrieve", st);
    return reply;
}

std::vector<kbv1::MemoryRecord> KbClient::fetch(const kbv1::FetchRequest& request, int32_t timeout_ms, uint64_t* reply_bytes) {
    grpc::ClientContext context;
    prepare(context, timeout_ms, false);
    auto reader = stub_->FetchMemories(&context, request);
    std::vector<kbv1::MemoryRecord> out;
    kbv1::MemoryRecord rec;
    while (reader->Read(&rec)) {
        *reply_bytes += rec.ByteSizeLong();
        // A server that streams more than it was asked for is cut off at the deadline anyway;
        // keeping only what was asked bounds the memory it can make us hold.
        if (out.size() < static_cast<size_t>(request.ids_size())) out.push_back(std::move(rec));
    }
    const grpc::Status st = reader->Finish();
    if (!st.ok()) fail("FetchMemories", st);
    return out;
}

}  // namespace mnemo::detail
