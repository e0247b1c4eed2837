#include "serve/kb_service.hpp"

#include <cstdio>
#include <ctime>
#include <unordered_set>

#include "mnemo/error.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "serve/request_checks.hpp"

namespace mnemo::kb {
namespace {

using grpc::Status;
using grpc::StatusCode;
using Clock = std::chrono::system_clock;

constexpr std::string_view kBearer = "Bearer ";

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

// Status of a stream that must stop early, or OK to go on.
Status stream_state(grpc::ServerContext* ctx, Clock::time_point deadline) {
    if (ctx->IsCancelled()) return Status(StatusCode::CANCELLED, "the client cancelled the call");
    if (Clock::now() > deadline) return Status(StatusCode::DEADLINE_EXCEEDED, "the call ran past its deadline or the server's max_call_seconds");
    return Status::OK;
}

void fill_bank_info(const Bank& bank, v1::BankInfo* info) {
    const MemoryFolderModel& m = bank.model();
    info->set_bank_version(bank.version());
    info->set_model_type(m.model_type);
    info->set_model_fingerprint(m.fingerprint);
    info->set_model_json(memory_model_to_json(m).dump());
    info->set_key_codebook_sha256(bank.codec().keys.sha256);
    info->set_value_codebook_sha256(bank.codec().values.sha256);
    info->set_record_bytes(bank.record_bytes());
    info->set_count(bank.count());
    info->set_segments(bank.segments());
    info->set_has_tokenizer(bank.tokenizer() != nullptr);
}

std::string version_prefix(const Bank& bank) { return "bank version " + std::to_string(bank.version()) + ": "; }

}  // namespace

Clock::time_point call_deadline(const grpc::ServerContext& ctx, Clock::time_point start, uint32_t max_call_seconds) {
    const Clock::time_point cap = start + std::chrono::seconds(max_call_seconds);
    return std::min(cap, ctx.deadline());
}

std::string format_request_log(Clock::time_point when, const std::string& peer, const std::string& client, KbMethod method,
                               const Status& status, double ms, const KbService::CallNote& note) {
    const std::time_t t = Clock::to_time_t(when);
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[80];
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                  tm.tm_min, tm.tm_sec, static_cast<int>(millis));
    char head[96];
    std::snprintf(head, sizeof head, " status=%s ms=%.3f", status_code_name(status.error_code()), ms);
    std::string line = std::string(stamp) + " peer=" + (peer.empty() ? "-" : peer) + " client=" + (client.empty() ? "-" : client) +
                       " method=" + method_name(method) + head;
    if (!note.detail.empty()) line += " " + note.detail;
    line += " records=" + std::to_string(note.records) + " bytes=" + std::to_string(note.bytes);
    if (!status.ok()) line += " error=\"" + status.error_message() + "\"";
    return line;
}

KbService::KbService(BankSlot& bank, ServiceConfig config) : bank_(bank), config_(std::move(config)) {
    if (!config_.tokens) throw Error("knowledge service: no token table (TokenTable::anonymous() serves without tokens)");
    if (config_.limits.max_k == 0 || config_.limits.max_ids_per_request == 0 || config_.limits.max_streams_per_client == 0 ||
        config_.limits.max_call_seconds == 0)
        throw Error("knowledge service: every limit must be at least 1");
}

void KbService::log(const std::string& line) const {
    if (config_.log) config_.log(line);
}

Status KbService::authenticate(grpc::ServerContext* ctx, TokenScope needed, const TokenEntry** who) const {
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
    if (!entry->allows(needed))
        return Status(StatusCode::PERMISSION_DENIED, "client '" + entry->name + "' has the " + scope_name(entry->scope) + " scope; this call needs " +
                                                         scope_name(needed));
    return Status::OK;
}

template <class Body>
Status KbService::run_call(KbMethod method, grpc::ServerContext* ctx, TokenScope needed, Body&& body) {
    const auto start_wall = Clock::now();
    const auto start = std::chrono::steady_clock::now();
    counters_.request(method);
    CallSlot slot(counters_);
    CallNote note;
    const TokenEntry* who = nullptr;
    Status status = authenticate(ctx, needed, &who);
    if (status.ok() && !slot.take(who, config_.limits.max_streams_per_client))
        status = Status(StatusCode::RESOURCE_EXHAUSTED, "client '" + who->name + "' already has " +
                                                            std::to_string(config_.limits.max_streams_per_client) +
                                                            " calls in flight (max_streams_per_client)");
    if (status.ok()) {
        try {
            status = body(call_deadline(*ctx, start_wall, config_.limits.max_call_seconds), note);
        } catch (const std::exception& e) {
            status = Status(StatusCode::INTERNAL, e.what());
        }
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

Status KbService::Info(grpc::ServerContext* ctx, const v1::InfoRequest*, v1::InfoReply* reply) {
    return run_call(KbMethod::Info, ctx, TokenScope::Read, [&](Clock::time_point, CallNote& note) {
        const std::shared_ptr<const Bank> bank = bank_.current();
        fill_bank_info(*bank, reply->mutable_bank());
        reply->set_server_version(config_.server_version);
        for (const auto& [name, value] : counters_.snapshot()) (*reply->mutable_counters())[name] = value;
        reply->set_max_k(config_.limits.max_k);
        reply->set_max_ids_per_request(config_.limits.max_ids_per_request);
        reply->set_max_streams_per_client(config_.limits.max_streams_per_client);
        reply->set_max_receive_message_bytes(config_.limits.max_receive_bytes);
        reply->set_max_call_seconds(config_.limits.max_call_seconds);
        note.bytes = reply->ByteSizeLong();
        return Status::OK;
    });
}

Status KbService::Health(grpc::ServerContext* ctx, const v1::HealthRequest*, v1::HealthReply* reply) {
    return run_call(KbMethod::Health, ctx, TokenScope::Read, [&](Clock::time_point, CallNote&) {
        const std::shared_ptr<const Bank> bank = bank_.current();
        reply->set_status(bank ? v1::HealthReply::SERVING : v1::HealthReply::NOT_SERVING);
        if (bank) reply->set_bank_version(bank->version());
        return Status::OK;
    });
}

Status KbService::retrieve_into(grpc::ServerContext*, const Bank& bank, const v1::RetrieveRequest& req, v1::RetrieveReply* reply,
                                CallNote& note) const {
    Status st = check_retrieve(req, shape_of(bank), config_.limits);
    if (!st.ok()) return st;
    std::vector<float> vector(req.vector().begin(), req.vector().end());
    std::vector<int32_t> tokens(req.tokens().begin(), req.tokens().end());
    if (!req.text().empty()) {
        tokens = bank.tokenizer()->encode(req.text(), false);
        if (tokens.empty() && vector.empty()) return Status(StatusCode::INVALID_ARGUMENT, "the text gives no tokens and there is no vector");
    }
    BankQuery q;
    q.vector = vector.empty() ? nullptr : &vector;
    q.tokens = tokens.empty() ? nullptr : &tokens;
    q.k = static_cast<int32_t>(req.k());
    q.sources.assign(req.filter().sources().begin(), req.filter().sources().end());
    q.source_prefix = req.filter().source_prefix();
    q.min_relative_score = req.min_relative_score();
    std::vector<BankHit> hits;
    try {
        hits = bank.retrieve(q);
    } catch (const std::exception& e) {
        return Status(StatusCode::INTERNAL, version_prefix(bank) + "retrieval failed: " + e.what());
    }
    for (const BankHit& h : hits) {
        v1::Hit* out = reply->add_hits();
        out->set_id(h.id);
        out->set_score(h.score);
        const BankReference& ref = bank.reference(h.id);
        out->set_doc_id(ref.doc_id);
        if (!req.omit_texts()) {
            out->set_text(ref.text);
            out->set_title(ref.title);
            out->set_source(ref.source);
        }
    }
    reply->set_bank_version(bank.version());
    note.detail = "k=" + std::to_string(req.k()) + " query=" + (vector.empty() ? "" : "v") + (tokens.empty() ? "" : "t") +
                  " hits=" + std::to_string(hits.size());
    return Status::OK;
}

Status KbService::Retrieve(grpc::ServerContext* ctx, const v1::RetrieveRequest* req, v1::RetrieveReply* reply) {
    return run_call(KbMethod::Retrieve, ctx, TokenScope::Read, [&](Clock::time_point, CallNote& note) {
        const std::shared_ptr<const Bank> bank = bank_.current();
        Status st = retrieve_into(ctx, *bank, *req, reply, note);
        if (st.ok()) note.bytes = reply->ByteSizeLong();
        return st;
    });
}

Status KbService::FetchMemories(grpc::ServerContext* ctx, const v1::FetchRequest* req, grpc::ServerWriter<v1::MemoryRecord>* writer) {
    return run_call(KbMethod::FetchMemories, ctx, TokenScope::Read, [&](Clock::time_point deadline, CallNote& note) {
        const std::shared_ptr<const Bank> bank = bank_.current();
        note.detail = "ids=" + std::to_string(req->ids_size());
        Status st = check_fetch(*req, shape_of(*bank), config_.limits);
        if (!st.ok()) return st;
        v1::MemoryRecord msg;
        for (const uint32_t id : req->ids()) {
            st = stream_state(ctx, deadline);
            if (!st.ok()) return st;
            msg.set_id(id);
            try {
                msg.set_record(bank->record(id));
            } catch (const std::exception& e) {
                return Status(StatusCode::DATA_LOSS, version_prefix(*bank) + e.what());
            }
            const size_t size = msg.ByteSizeLong();
            if (!writer->Write(msg)) return Status(StatusCode::CANCELLED, "the client went away during the stream");
            ++note.records;
            note.bytes += size;
        }
        return Status::OK;
    });
}

Status KbService::RetrieveMemories(grpc::ServerContext* ctx, const v1::RetrieveRequest* req, v1::RetrieveMemoriesReply* reply) {
    return run_call(KbMethod::RetrieveMemories, ctx, TokenScope::Read, [&](Clock::time_point, CallNote& note) {
        const std::shared_ptr<const Bank> bank = bank_.current();
        Status st = retrieve_into(ctx, *bank, *req, reply->mutable_retrieval(), note);
        if (!st.ok()) return st;
        const std::unordered_set<uint32_t> have(req->have_ids().begin(), req->have_ids().end());
        for (const v1::Hit& h : reply->retrieval().hits()) {
            if (have.count(h.id())) continue;
            v1::MemoryRecord* rec = reply->add_records();
            rec->set_id(h.id());
            try {
                rec->set_record(bank->record(h.id()));
            } catch (const std::exception& e) {
                return Status(StatusCode::DATA_LOSS, version_prefix(*bank) + e.what());
            }
            ++note.records;
        }
        note.bytes = reply->ByteSizeLong();
        return Status::OK;
    });
}

Status KbService::GetCodebook(grpc::ServerContext* ctx, const v1::CodebookRequest* req, grpc::ServerWriter<v1::CodebookChunk>* writer) {
    return run_call(KbMethod::GetCodebook, ctx, TokenScope::Read, [&](Clock::time_point deadline, CallNote& note) {
        const std::shared_ptr<const Bank> bank = bank_.current();
        Status st = check_codebook(*req, shape_of(*bank));
        if (!st.ok()) return st;
        std::string sha = req->sha256();
        for (char& c : sha) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const std::vector<uint8_t>* bytes = bank->codebook_bytes(sha);
        if (bytes == nullptr) return Status(StatusCode::NOT_FOUND, version_prefix(*bank) + "no codebook " + sha);
        const size_t chunk = req->chunk_bytes() == 0 ? ServeLimits::kDefaultCodebookChunk : req->chunk_bytes();
        v1::CodebookChunk msg;
        size_t offset = 0;
        do {
            st = stream_state(ctx, deadline);
            if (!st.ok()) return st;
            const size_t n = std::min(chunk, bytes->size() - offset);
            msg.set_offset(offset);
            msg.set_total_bytes(bytes->size());
            msg.set_data(reinterpret_cast<const char*>(bytes->data()) + offset, n);
            if (!writer->Write(msg)) return Status(StatusCode::CANCELLED, "the client went away during the stream");
            note.bytes += msg.ByteSizeLong();
            offset += n;
        } while (offset < bytes->size());
        note.detail = "codebook_bytes=" + std::to_string(bytes->size());
        return Status::OK;
    });
}

ReloadOutcome KbService::reload_bank() {
    try {
        const ReloadOutcome out = bank_.reload();
        if (out.changed()) {
            counters_.reload(true);
            log("reload: " + bank_.describe() + ": now serving version " + std::to_string(out.version) + " (was " +
                std::to_string(out.previous_version) + ")");
        }
        return out;
    } catch (const std::exception& e) {
        counters_.reload(false);
        const uint64_t kept = bank_.current()->version();
        // Always said, even with --log-quiet: the operator must learn that a publish did not load.
        const std::string line = "reload failed: " + std::string(e.what()) + "; still serving version " + std::to_string(kept);
        if (config_.log) {
            log(line);
        } else {
            std::fprintf(stderr, "mnemo-kb serve: %s\n", line.c_str());
        }
        throw Error(line);
    }
}

Status KbService::Reload(grpc::ServerContext* ctx, const v1::ReloadRequest*, v1::ReloadReply* reply) {
    return run_call(KbMethod::Reload, ctx, TokenScope::Admin, [&](Clock::time_point, CallNote& note) {
        ReloadOutcome out;
        try {
            out = reload_bank();
        } catch (const std::exception& e) {
            return Status(StatusCode::FAILED_PRECONDITION, e.what());
        }
        reply->set_previous_version(out.previous_version);
        reply->set_bank_version(out.version);
        note.detail = "version=" + std::to_string(out.version);
        return Status::OK;
    });
}

}  // namespace mnemo::kb
