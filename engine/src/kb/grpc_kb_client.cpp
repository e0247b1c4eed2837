#include "kb/grpc_kb_client.hpp"

#include <algorithm>
#include <chrono>

#include "mnemo/io/file_read.hpp"
#include "mnemo/memory/vq_codebook.hpp"

namespace mnemo::detail {

namespace {

// Codebook chunks asked for (CodebookRequest.chunk_bytes; the protocol allows up to 4 MiB).
constexpr uint32_t kCodebookChunkBytes = 1 << 20;

grpc::ChannelArguments channel_arguments(int max_receive_bytes) {
    grpc::ChannelArguments a;
    // Reconnect soon after a server restart: gRPC's defaults (1 s, growing to 120 s) would keep
    // a client without memories for minutes after the server is back.
    a.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 250);
    // Subchannels of this channel only: a channel made by redial() starts without the backoff the
    // old one's connection attempts built up (gRPC shares subchannels of equal channels otherwise).
    a.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
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
    // gRPC refuses (RESOURCE_EXHAUSTED) a reply message above this, which the caller derives from
    // what the model needs: a hostile server cannot make the client hold more.
    a.SetMaxReceiveMessageSize(max_receive_bytes);
    return a;
}

std::string read_pem(const std::string& path) {
    // A CA bundle is tens to hundreds of KiB (the whole Mozilla set is ~220 KiB): the small-file cap.
    std::string pem;
    try {
        pem = read_file_capped(path, kMaxSmallFileBytes, "CA certificate file");
    } catch (const Error& e) {
        throw with_context("--kb-ca", e);
    }
    if (pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
        throw Error("--kb-ca '" + path + "': not a PEM certificate file (no BEGIN CERTIFICATE)");
    return pem;
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

int KbClient::codebook_chunk_limit() { return static_cast<int>(kCodebookChunkBytes) + (4 << 10); }

KbClient::KbClient(const KbEndpoint& endpoint, const std::string& token, const std::string& ca_file, int max_receive_bytes)
    : endpoint_(endpoint), max_receive_bytes_(std::max(max_receive_bytes, codebook_chunk_limit())) {
    if (!token.empty()) authorization_ = "Bearer " + token;
    arguments_ = channel_arguments(max_receive_bytes_);
    if (!endpoint_.tls_name.empty()) {
        // Dialled by address (one of a host name's): the certificate must still name the host, and
        // the server sees the host in :authority and in TLS's SNI, as when the name is dialled.
        arguments_.SetSslTargetNameOverride(endpoint_.tls_name);
        arguments_.SetString(GRPC_ARG_DEFAULT_AUTHORITY, endpoint_.tls_name + ":" + std::to_string(endpoint_.url.port));
    }
    if (endpoint_.url.tls) {
        grpc::SslCredentialsOptions ssl;
        if (!ca_file.empty()) ssl.pem_root_certs = read_pem(ca_file);  // empty: gRPC's system roots
        credentials_ = grpc::SslCredentials(ssl);
    } else {
        credentials_ = grpc::InsecureChannelCredentials();  // parse_kb_url allowed it: a loopback host
    }
    redial();
}

void KbClient::redial() {
    std::shared_ptr<kbv1::KnowledgeBase::Stub> stub =
        kbv1::KnowledgeBase::NewStub(grpc::CreateCustomChannel(endpoint_.target, credentials_, arguments_));
    std::lock_guard<std::mutex> lock(stub_mu_);
    stub_ = std::move(stub);
}

std::shared_ptr<kbv1::KnowledgeBase::Stub> KbClient::current() const {
    std::lock_guard<std::mutex> lock(stub_mu_);
    return stub_;
}

void KbClient::prepare(grpc::ClientContext& context, int32_t timeout_ms, bool wait_for_ready) const {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
    context.set_wait_for_ready(wait_for_ready);
    if (!authorization_.empty()) context.AddMetadata("authorization", authorization_);
}

void KbClient::fail(const char* call, const grpc::Status& status) const {
    std::string msg = name() + ": " + call + " failed: " + grpc_code_name(status.error_code());
    if (!status.error_message().empty()) msg += ": " + status.error_message();
    // gRPC's own words for a reply over the receive limit ("Received message larger than max"):
    // say where the limit comes from.
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
        status.error_message().find("larger than max") != std::string::npos)
        msg += " (the client takes reply messages of at most " + std::to_string(max_receive_bytes_) +
               " bytes: what this model's records, their texts and codebook chunks need)";
    throw KbCallError(msg, status.error_code());
}

kbv1::InfoReply KbClient::info(int32_t timeout_ms, bool wait_for_ready) {
    grpc::ClientContext context;
    prepare(context, timeout_ms, wait_for_ready);
    kbv1::InfoReply reply;
    const grpc::Status st = current()->Info(&context, kbv1::InfoRequest(), &reply);
    if (!st.ok()) fail("Info", st);
    return reply;
}

std::string KbClient::codebook(const std::string& sha256, uint32_t d_in, const std::string& what, int32_t timeout_ms,
                               bool wait_for_ready) {
    grpc::ClientContext context;
    prepare(context, timeout_ms, wait_for_ready);
    kbv1::CodebookRequest req;
    req.set_sha256(sha256);
    req.set_chunk_bytes(kCodebookChunkBytes);
    const auto stub = current();  // keeps the channel for the stream's life, whatever redial() does
    auto reader = stub->GetCodebook(&context, req);
    const std::string where = name() + ": GetCodebook " + sha256 + " (" + what + "): ";
    // The most any codebook for the model's d_in-dimensional vectors can be; once its header has
    // come, exactly what that header implies. Both are checked before the bytes are kept.
    const uint64_t cap = vq_codebook_max_bytes(d_in);
    std::string bytes;
    uint64_t total = 0;
    bool first = true, header_checked = false;
    kbv1::CodebookChunk chunk;
    std::string bad;  // a malformed stream: cancel it, then report (Finish needs the stream ended)
    while (reader->Read(&chunk)) {
        if (!bad.empty()) continue;
        if (first) {
            total = chunk.total_bytes();
            if (total > cap)
                bad = "total_bytes is " + std::to_string(total) + ", more than the " + std::to_string(cap) +
                      " bytes any codebook for this model's " + std::to_string(d_in) + "-dimensional " + what + " can have";
            first = false;
        } else if (chunk.total_bytes() != total) {
            bad = "total_bytes changed between chunks";
        }
        if (bad.empty() && chunk.data().size() > kCodebookChunkBytes)
            bad = "a chunk of " + std::to_string(chunk.data().size()) + " bytes, more than the " +
                  std::to_string(kCodebookChunkBytes) + " asked for (chunk_bytes)";
        if (bad.empty() && chunk.offset() != bytes.size())
            bad = "chunk at offset " + std::to_string(chunk.offset()) + ", expected " + std::to_string(bytes.size());
        if (bad.empty() && bytes.size() + chunk.data().size() > total) bad = "more bytes than total_bytes";
        if (bad.empty()) bytes += chunk.data();
        if (bad.empty() && !header_checked && bytes.size() >= VqCodebook::kHeaderBytes) {
            header_checked = true;
            try {
                VqCodebook shape;
                const uint64_t implied = vq_codebook_bytes(bytes.data(), VqCodebook::kHeaderBytes, "header", &shape);
                if (shape.d_in != d_in)
                    bad = "header: d_in is " + std::to_string(shape.d_in) + ", this model's " + what + " have " + std::to_string(d_in);
                else if (implied != total)
                    bad = "total_bytes is " + std::to_string(total) + ", the codebook's header implies " + std::to_string(implied);
            } catch (const Error& e) {
                bad = e.what();
            }
        }
        if (!bad.empty()) context.TryCancel();  // a server streaming on is not read to its end
    }
    const grpc::Status st = reader->Finish();
    if (!bad.empty()) throw Error(where + bad);
    if (!st.ok()) fail("GetCodebook", st);
    if (first || bytes.size() != total)
        throw Error(where + "received " + std::to_string(bytes.size()) + " of " + std::to_string(total) + " bytes");
    return bytes;
}

kbv1::RetrieveMemoriesReply KbClient::retrieve_memories(const kbv1::RetrieveRequest& request, int32_t timeout_ms) {
    grpc::ClientContext context;
    prepare(context, timeout_ms, false);
    kbv1::RetrieveMemoriesReply reply;
    const grpc::Status st = current()->RetrieveMemories(&context, request, &reply);
    if (!st.ok()) fail("RetrieveMemories", st);
    return reply;
}

kbv1::RetrieveReply KbClient::retrieve(const kbv1::RetrieveRequest& request, int32_t timeout_ms) {
    grpc::ClientContext context;
    prepare(context, timeout_ms, false);
    kbv1::RetrieveReply reply;
    const grpc::Status st = current()->Retrieve(&context, request, &reply);
    if (!st.ok()) fail("Retrieve", st);
    return reply;
}

std::vector<kbv1::MemoryRecord> KbClient::fetch(const kbv1::FetchRequest& request, int32_t timeout_ms, uint64_t* reply_bytes) {
    grpc::ClientContext context;
    prepare(context, timeout_ms, false);
    const auto stub = current();  // keeps the channel for the stream's life, whatever redial() does
    auto reader = stub->FetchMemories(&context, request);
    std::vector<kbv1::MemoryRecord> out;
    kbv1::MemoryRecord rec;
    bool extra = false;
    while (reader->Read(&rec)) {
        *reply_bytes += rec.ByteSizeLong();
        if (out.size() < static_cast<size_t>(request.ids_size())) {
            out.push_back(std::move(rec));
        } else if (!extra) {
            extra = true;  // more than asked: the answer is wrong, and the rest is not read
            context.TryCancel();
        }
    }
    const grpc::Status st = reader->Finish();
    if (extra)
        throw Error(name() + ": FetchMemories sent more records than the " + std::to_string(request.ids_size()) + " asked for");
    if (!st.ok()) fail("FetchMemories", st);
    return out;
}

}  // namespace mnemo::detail
