// The knowledge server's client over gRPC (mnemo/kb/kb_source.hpp, docs/kb-client.md): connecting
// and checking the bank, the prefetch worker, retrieve() with the host record cache, and what a
// failing server does to a chunk. The calls of one chunk are grpc_kb_calls.cpp's.
#include "kb/grpc_kb_source.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <optional>
#include <unordered_map>

#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/memory/retrieval_settings.hpp"

namespace mnemo::detail {
namespace {

// Announced queries kept at once: a prompt's chunks plus a step ahead per sequence; beyond this
// the oldest are dropped (an announcement is only a hint).
constexpr size_t kMaxPending = 64;

// What a hit's texts (text, title, source, doc_id) may take in a reply. A reference is a piece of
// reference_length tokens; titles and sources are names. Generous, but it bounds the reply.
constexpr uint64_t kMaxHitTextBytes = 256 << 10;
// Field tags, lengths, ids and scores around the records and texts of a reply.
constexpr uint64_t kReplyFraming = 64 << 10;

// The largest record any codec could give this model: a slot's token index, and its key and value
// as f32 or as codes of at most 4 coarse bytes + 2 bytes per rotated dimension (16-bit PQ over at
// most 2 d dimensions, vq_codebook_max_bytes's bounds), whichever is larger.
uint64_t largest_record_bytes(const MemorySpec& s) {
    const uint64_t slots = static_cast<uint64_t>(s.memory_layers.size()) * static_cast<uint64_t>(s.kv_heads) *
                           static_cast<uint64_t>(s.tokens_per_head);
    auto vector_bytes = [](int32_t d) { return 4 + 4 * static_cast<uint64_t>(d); };
    return 16 + slots * (4 + vector_bytes(s.head_dim) + vector_bytes(s.value_dim));
}

// The largest reply message this model needs (RetrieveMemories: k hits with their texts and k
// records); what the client lets gRPC receive. Codebook chunks are bounded on their own.
int max_reply_bytes(const MemorySpec& s) {
    const uint64_t k = static_cast<uint64_t>(std::max(s.references_per_chunk, 1));
    const uint64_t bytes = k * (largest_record_bytes(s) + kMaxHitTextBytes) + kReplyFraming;
    return static_cast<int>(std::min<uint64_t>(bytes, INT32_MAX));
}

}  // namespace

GrpcKbSource::GrpcKbSource(const KbSourceOptions& options, const MemoryFolderModel& model)
    : options_(options),
      model_(model),
      url_(detail::parse_kb_url(options.url)),
      cache_(options.cache_records),
      outage_(Outage::ms(options.backoff_initial_ms), Outage::ms(options.backoff_max_ms)) {
    if (options_.connect_timeout_ms <= 0 || options_.call_timeout_ms <= 0)
        throw Error("knowledge server " + url_.url + ": timeouts must be positive");
    client_ = std::make_unique<KbClient>(url_, options_.token, options_.ca_file, max_reply_bytes(model_.spec));
    stats_.url = url_.url;
    // Wait for the first connection (up to the deadline): the server may be starting.
    kbv1::InfoReply info;
    try {
        info = client_->info(options_.connect_timeout_ms, /*wait_for_ready=*/true);
    } catch (const KbCallError& e) {
        if (e.code != grpc::StatusCode::DEADLINE_EXCEEDED && e.code != grpc::StatusCode::UNAVAILABLE) throw;
        throw Error(std::string(e.what()) + " (no answer within " + std::to_string(options_.connect_timeout_ms) +
                    " ms: is `mnemo-kb serve` running there, and does it speak " + (url_.tls ? "TLS, as grpcs://" : "plaintext, as grpc://") +
                    " says?)");
    }
    const kbv1::BankInfo& b = info.bank();
    if (!b.key_codebook_sha256().empty() || !b.value_codebook_sha256().empty()) {
        codec_ = std::make_unique<MemoryCodec>();
        for (int kv = 0; kv < 2; ++kv) {
            const std::string& sha = kv == 0 ? b.key_codebook_sha256() : b.value_codebook_sha256();
            // The codebook decodes the model's keys (head_dim) or values (value_dim): that bounds it.
            const int32_t dim = kv == 0 ? model_.spec.head_dim : model_.spec.value_dim;
            const std::string bytes = client_->codebook(sha, static_cast<uint32_t>(std::max(dim, 0)), kv == 0 ? "keys" : "values",
                                                        options_.connect_timeout_ms, true);
            (kv == 0 ? codec_->keys : codec_->values) =
                parse_vq_codebook(bytes.data(), bytes.size(), client_->name() + ": " + (kv == 0 ? "key" : "value") + " codebook", sha);
        }
    }
    check_bank(b, /*connecting=*/true);
    bank_ = {b.bank_version(), b.key_codebook_sha256(), b.value_codebook_sha256()};
    stats_.bank_version = b.bank_version();
    max_k_ = info.max_k();
    max_have_ids_ = options_.max_have_ids;
    if (info.max_ids_per_request() > 0) max_have_ids_ = std::min<size_t>(max_have_ids_, info.max_ids_per_request());
    if (options_.prefetch) worker_ = std::thread([this] { worker(); });
}

GrpcKbSource::~GrpcKbSource() {
    {
        std::lock_guard<std::mutex> lock(pmu_);
        stop_ = true;
    }
    pcv_.notify_all();
    if (worker_.joinable()) worker_.join();  // its call in flight ends by its deadline
}

void GrpcKbSource::check_bank(const kbv1::BankInfo& b, bool connecting) {
    const std::string where = client_->name() + ": bank version " + std::to_string(b.bank_version());
    // The refusal names the model first: the plain fields, then the full facts.
    if (!b.model_type().empty() && b.model_type() != model_.model_type)
        throw Error(where + " was made for a " + b.model_type() + " model, the loaded model is " + model_.model_type);
    if (!b.model_fingerprint().empty() && b.model_fingerprint() != model_.fingerprint)
        throw Error(where + " was made for another checkpoint (fingerprint " + b.model_fingerprint().substr(0, 12) +
                    "..., the loaded model's is " + model_.fingerprint.substr(0, 12) + "...)");
    const MemoryFolderModel got = memory_model_from_json(json::parse(b.model_json(), where + ": model_json"), where + ": model_json");
    if (!connecting) {
        // The session decodes with the codec it was given when the source was attached.
        const std::string want_k = codec_ ? codec_->keys.sha256 : "", want_v = codec_ ? codec_->values.sha256 : "";
        if (b.key_codebook_sha256() != want_k || b.value_codebook_sha256() != want_v)
            throw Error(where + " uses other codebooks (keys " + b.key_codebook_sha256().substr(0, 12) + "..., values " +
                        b.value_codebook_sha256().substr(0, 12) + "...) than the ones this session decodes with");
    }
    check_memory_model(got, model_, codec_.get(), where);
    const uint64_t want_bytes = memory_record_bytes(model_.spec, codec_.get());
    if (b.record_bytes() != want_bytes)
        throw Error(where + ": records of " + std::to_string(b.record_bytes()) + " bytes, this model and codec need " +
                    std::to_string(want_bytes));
}

void GrpcKbSource::refresh_bank() {
    const kbv1::InfoReply info = client_->info(options_.call_timeout_ms, false);
    const kbv1::BankInfo& b = info.bank();
    try {
        check_bank(b, false);
    } catch (const Error&) {
        std::lock_guard<std::mutex> lock(mu_);
        incompatible_ = true;
        throw;
    }
    bool changed = false;
    {
        std::lock_guard<std::mutex> lock(mu_);
        incompatible_ = false;
        if (b.bank_version() != bank_.version) {
            bank_.version = b.bank_version();
            stats_.bank_version = b.bank_version();
            stats_.bank_changes++;
            changed = true;
        }
    }
    // Record ids belong to a version: drop what an older one sent (same model and codec, so the
    // session goes on).
    if (changed) {
        cache_.clear();
        warn(KbEvent::BankChanged, std::to_string(b.bank_version()),
             client_->name() + ": now serving bank version " + std::to_string(b.bank_version()));
    }
}

std::string GrpcKbSource::describe() const {
    const char* mode = options_.retrieval == KbRetrieval::Vector ? "vector" : options_.retrieval == KbRetrieval::BM25 ? "BM25" : "hybrid";
    std::lock_guard<std::mutex> lock(mu_);
    return client_->name() + " (bank version " + std::to_string(bank_.version) + (codec_ ? ", compressed" : "") + " memories, " +
           mode + " retrieval" +
           relative_cut_suffix(options_.min_relative_score) + ")";
}

void GrpcKbSource::warn(KbEvent event, const std::string& detail, const std::string& message) {
    std::lock_guard<std::mutex> lock(warn_mu_);
    if (options_.on_event) {
        options_.on_event(event, detail);
    } else if (options_.warn) {
        options_.warn(message);
    } else {
        std::fprintf(stderr, "mnemo: %s\n", printable(message).c_str());  // it quotes the server's status text
    }
}

Key GrpcKbSource::key_of(const ChunkQuery& query, int32_t k) const {
    Key key;
    key.seq = query.seq;
    if (options_.retrieval != KbRetrieval::Vector) {
        if (!query.tokens) throw Error(describe() + ": the query has no tokens");
        key.tokens = *query.tokens;
    }
    if (options_.retrieval != KbRetrieval::BM25) {
        if (!query.vector || query.vector->size() != static_cast<size_t>(model_.spec.retrieval_dim))
            throw Error(describe() + ": the query has no retrieval vector of " + std::to_string(model_.spec.retrieval_dim) + " values");
        key.vector = *query.vector;
    }
    key.k = max_k_ > 0 ? std::min<int32_t>(k, static_cast<int32_t>(max_k_)) : k;
    return key;
}

Answer GrpcKbSource::answer(const Key& key) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (outage_.waiting(Clock::now())) {
            stats_.skipped++;
            return {};
        }
    }
    std::string error;
    try {
        bool reinfo = false;
        {
            std::lock_guard<std::mutex> lock(mu_);
            reinfo = incompatible_;
        }
        if (reinfo) refresh_bank();  // retried on the backoff schedule until the bank fits again
        Answer a = request(key);
        bool recovered = false;
        {
            std::lock_guard<std::mutex> lock(mu_);
            recovered = outage_.succeeded();
            stats_.state = KbSourceState::Connected;
        }
        if (recovered) warn(KbEvent::Recovered, "", client_->name() + " answers again: memories are back");
        return a;
    } catch (const std::exception& e) {  // KbCallError, a bad record, a bank for another model
        error = e.what();
    }
    bool starts = false;
    KbSourceState state;
    {
        std::lock_guard<std::mutex> lock(mu_);
        starts = outage_.failed(Clock::now());
        stats_.failures++;
        stats_.last_error = error;
        stats_.state = incompatible_ ? KbSourceState::Incompatible : KbSourceState::Unavailable;
        state = stats_.state;
        if (starts) stats_.outages++;
    }
    if (starts)
        warn(state == KbSourceState::Incompatible ? KbEvent::Incompatible : KbEvent::Outage, error,
             error + (state == KbSourceState::Incompatible ? " — generating without memories"
                                                           : " — generating without memories until it is back"));
    return {};
}

void GrpcKbSource::prefetch(const ChunkQuery& query, int32_t k) {
    if (!options_.prefetch) return;
    auto p = std::make_shared<Pending>();
    p->key = key_of(query, k);
    {
        std::lock_guard<std::mutex> lock(pmu_);
        for (const auto& q : pending_)
            if (q->key == p->key) return;  // announced already
        while (pending_.size() >= kMaxPending) {
            // Drop the oldest that the worker is not running (announced, never asked).
            auto victim = std::find_if(pending_.begin(), pending_.end(), [](const auto& q) { return q->state != Pending::State::Running; });
            if (victim == pending_.end()) break;
            pending_.erase(victim);
        }
        pending_.push_back(std::move(p));
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.prefetches++;
    }
    pcv_.notify_all();
}

void GrpcKbSource::worker() {
    std::unique_lock<std::mutex> lock(pmu_);
    for (;;) {
        std::shared_ptr<Pending> next;
        pcv_.wait(lock, [&] {
            if (stop_) return true;
            for (const auto& p : pending_)
                if (p->state == Pending::State::Queued) return true;
            return false;
        });
        if (stop_) return;
        for (const auto& p : pending_)
            if (p->state == Pending::State::Queued) {
                next = p;
                break;
            }
        next->state = Pending::State::Running;
        lock.unlock();
        Answer a = answer(next->key);
        lock.lock();
        next->answer = std::move(a);
        next->state = Pending::State::Done;
        pcv_.notify_all();
    }
}

std::vector<std::shared_ptr<const ExplicitMemory>> GrpcKbSource::retrieve(const ChunkQuery& query, int32_t k) {
    const Key key = key_of(query, k);
    {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.retrievals++;
    }
    std::optional<Answer> got;
    if (options_.prefetch) {
        std::unique_lock<std::mutex> lock(pmu_);
        auto it = std::find_if(pending_.begin(), pending_.end(), [&](const auto& p) { return p->key == key; });
        if (it != pending_.end()) {
            std::shared_ptr<Pending> p = *it;
            if (p->state == Pending::State::Queued) {
                pending_.erase(it);  // not started: ask it here, now
            } else {
                // Running: its calls carry deadlines (a bank refresh may add a second and a third),
                // so this wait ends; the bound is only a guard against a bug hanging generation.
                const auto limit = std::chrono::milliseconds(3 * options_.call_timeout_ms + 1000);
                const bool done = pcv_.wait_for(lock, limit, [&] { return p->state == Pending::State::Done; });
                auto again = std::find(pending_.begin(), pending_.end(), p);
                if (again != pending_.end()) pending_.erase(again);
                got = done ? std::move(p->answer) : Answer{};  // not done: no memories, rather than a second wait
                lock.unlock();
                std::lock_guard<std::mutex> slock(mu_);
                if (done) {
                    stats_.prefetch_hits++;
                } else {
                    stats_.failures++;
                    stats_.last_error = client_->name() + ": a prefetched retrieval did not finish in time";
                }
            }
        }
    }
    if (!got) got = answer(key);
    std::vector<RetrievedReference> refs = got->references;
    if (got->memories.empty()) refs.clear();  // a failed chunk retrieved nothing
    {
        std::lock_guard<std::mutex> lock(mu_);
        last_refs_[query.seq] = std::move(refs);
    }
    return std::move(got->memories);
}

KbSourceStatus GrpcKbSource::status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
}

std::vector<RetrievedReference> GrpcKbSource::last_references(int32_t seq) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = last_refs_.find(seq);
    return it == last_refs_.end() ? std::vector<RetrievedReference>{} : it->second;
}

}  // namespace mnemo::detail

namespace mnemo {
std::shared_ptr<KbSource> connect_kb(const KbSourceOptions& options, const MemoryFolderModel& model) {
    check_min_relative_score(options.min_relative_score, "knowledge server " + options.url);
    return std::make_shared<detail::GrpcKbSource>(options, model);
}

}  // namespace mnemo
