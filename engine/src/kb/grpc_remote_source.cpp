// RemoteMemorySource over gRPC (mnemo/memory/remote_memory.hpp, docs/kb-client.md): connecting
// and checking the bank, one chunk's retrieval (RetrieveMemories, or Retrieve + FetchMemories),
// the host record cache, the prefetch worker, and what a failing server does to a chunk.
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "kb/grpc_kb_client.hpp"
#include "kb/outage.hpp"
#include "kb/record_cache.hpp"
#include "mnemo/error.hpp"
#include "mnemo/memory/retrieval_settings.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/memory/remote_memory.hpp"

namespace mnemo {

namespace {

using detail::KbCallError;
using detail::KbClient;
using detail::Outage;
using detail::RecordCache;
namespace kbv1 = ::mnemo::kb::v1;
using Clock = std::chrono::steady_clock;

// Announced queries kept at once: a prompt's chunks plus a step ahead per sequence; beyond this
// the oldest are dropped (an announcement is only a hint).
constexpr size_t kMaxPending = 64;

// A chunk's query as prefetch() and retrieve() compare it: equal keys, equal answers.
struct Key {
    int32_t seq = -1;
    std::vector<int32_t> tokens;
    std::vector<float> vector;
    int32_t k = 0;
    bool operator==(const Key&) const = default;
};

struct Answer {
    std::vector<std::shared_ptr<const ExplicitMemory>> memories;
    std::vector<RecalledReference> references;
};

struct Pending {
    enum class State { Queued, Running, Done };
    Key key;
    State state = State::Queued;
    Answer answer;
};

// Which bank the client reads: sent with every request, so the server refuses (FAILED_PRECONDITION)
// rather than mixing records of two versions.
struct BankId {
    uint64_t version = 0;
    std::string key_sha, value_sha;
};

class GrpcRemoteSource final : public RemoteMemorySource {
public:
    GrpcRemoteSource(const RemoteMemoryOptions& options, const MemoryFolderModel& model);
    ~GrpcRemoteSource() override;

    bool wants_vector() const override { return options_.retrieval != RemoteRetrieval::BM25; }
    bool prefetches() const override { return options_.prefetch; }
    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& query, int32_t k) override;
    void prefetch(const ChunkQuery& query, int32_t k) override;
    std::string describe() const override;
    const MemoryCodec* codec() const override { return codec_.get(); }
    RemoteMemoryStatus status() const override;
    std::vector<RecalledReference> last_references(int32_t seq) const override;

private:
    Key key_of(const ChunkQuery& query, int32_t k) const;
    // The chunk's answer; a failure gives none, with the outage's warning and backoff.
    Answer answer(const Key& key);
    // One attempt (throws KbCallError or Error).
    Answer request(const Key& key);
    Answer retrieve_memories(const Key& key, const BankId& bank);
    Answer retrieve_then_fetch(const Key& key, const BankId& bank);
    kbv1::RetrieveRequest retrieve_request(const Key& key, const BankId& bank) const;
    std::shared_ptr<const ExplicitMemory> decode(const kbv1::MemoryRecord& record, uint32_t id, const char* call) const;
    // The bank the server serves now, checked against the model and our codec. Throws when it is
    // for another model or codec (state Incompatible).
    void refresh_bank();
    void check_bank(const kbv1::BankInfo& bank, bool connecting);
    void warn(const std::string& message);
    void worker();

    RemoteMemoryOptions options_;
    MemoryFolderModel model_;
    detail::KbUrl url_;
    std::unique_ptr<KbClient> client_;
    std::unique_ptr<MemoryCodec> codec_;
    size_t max_have_ids_ = 0;
    uint32_t max_k_ = 0;
    RecordCache cache_;

    // Bank, outage and counters: the session's thread and the worker share them.
    mutable std::mutex mu_;
    BankId bank_;
    Outage outage_;
    bool incompatible_ = false;
    RemoteMemoryStatus stats_;
    std::map<int32_t, std::vector<RecalledReference>> last_refs_;
    std::mutex warn_mu_;

    // Prefetch: one worker runs announced queries in order.
    std::mutex pmu_;
    std::condition_variable pcv_;
    std::deque<std::shared_ptr<Pending>> pending_;  // announced, oldest first (any state)
    bool stop_ = false;
    std::thread worker_;
};

GrpcRemoteSource::GrpcRemoteSource(const RemoteMemoryOptions& options, const MemoryFolderModel& model)
    : options_(options),
      model_(model),
      url_(detail::parse_kb_url(options.url)),
      cache_(options.cache_records),
      outage_(Outage::ms(options.backoff_initial_ms), Outage::ms(options.backoff_max_ms)) {
    if (options_.connect_timeout_ms <= 0 || options_.call_timeout_ms <= 0)
        throw Error("knowledge server " + url_.url + ": timeouts must be positive");
    client_ = std::make_unique<KbClient>(url_, options_.token, options_.ca_file);
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
            const std::string bytes = client_->codebook(sha, options_.connect_timeout_ms, true);
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

GrpcRemoteSource::~GrpcRemoteSource() {
    {
        std::lock_guard<std::mutex> lock(pmu_);
        stop_ = true;
    }
    pcv_.notify_all();
    if (worker_.joinable()) worker_.join();  // its call in flight ends by its deadline
}

void GrpcRemoteSource::check_bank(const kbv1::BankInfo& b, bool connecting) {
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

void GrpcRemoteSource::refresh_bank() {
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
        warn(client_->name() + ": now serving bank version " + std::to_string(b.bank_version()));
    }
}

std::string GrpcRemoteSource::describe() const {
    const char* mode = options_.retrieval == RemoteRetrieval::Vector ? "vector" : options_.retrieval == RemoteRetrieval::BM25 ? "BM25" : "hybrid";
    std::lock_guard<std::mutex> lock(mu_);
    return client_->name() + " (bank version " + std::to_string(bank_.version) + (codec_ ? ", compressed" : "") + " memories, " +
           mode + " retrieval" +
           relative_cut_suffix(options_.min_relative_score) + ")";
}

void GrpcRemoteSource::warn(const std::string& message) {
    std::lock_guard<std::mutex> lock(warn_mu_);
    if (options_.warn) {
        options_.warn(message);
    } else {
        std::fprintf(stderr, "mnemo: %s\n", message.c_str());
    }
}

Key GrpcRemoteSource::key_of(const ChunkQuery& query, int32_t k) const {
    Key key;
    key.seq = query.seq;
    if (options_.retrieval != RemoteRetrieval::Vector) {
        if (!query.tokens) throw Error(describe() + ": the query has no tokens");
        key.tokens = *query.tokens;
    }
    if (options_.retrieval != RemoteRetrieval::BM25) {
        if (!query.vector || query.vector->size() != static_cast<size_t>(model_.spec.retrieval_dim))
            throw Error(describe() + ": the query has no retrieval vector of " + std::to_string(model_.spec.retrieval_dim) + " values");
        key.vector = *query.vector;
    }
    key.k = max_k_ > 0 ? std::min<int32_t>(k, static_cast<int32_t>(max_k_)) : k;
    return key;
}

kbv1::RetrieveRequest GrpcRemoteSource::retrieve_request(const Key& key, const BankId& bank) const {
    kbv1::RetrieveRequest req;
    for (float x : key.vector) req.add_vector(x);
    for (int32_t t : key.tokens) req.add_tokens(t);
    req.set_k(static_cast<uint32_t>(key.k));
    req.set_bank_version(bank.version);
    req.set_key_codebook_sha256(bank.key_sha);
    req.set_value_codebook_sha256(bank.value_sha);
    req.set_omit_texts(!options_.texts);
    req.set_min_relative_score(options_.min_relative_score);
    return req;
}

std::shared_ptr<const ExplicitMemory> GrpcRemoteSource::decode(const kbv1::MemoryRecord& record, uint32_t id, const char* call) const {
    const std::string where = client_->name() + ": " + call + ": record " + std::to_string(id);
    if (record.id() != id) throw Error(where + ": the server sent record " + std::to_string(record.id()) + " in its place");
    const std::string& bytes = record.record();
    return decode_memory_record(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), id, model_.spec, codec_.get(), where);
}

namespace {

std::vector<RecalledReference> references_of(const google::protobuf::RepeatedPtrField<kbv1::Hit>& hits, size_t k) {
    std::vector<RecalledReference> out;
    for (const kbv1::Hit& h : hits) {
        if (out.size() == k) break;
        out.push_back({h.id(), h.score(), h.text(), h.title(), h.source()});
    }
    return out;
}

}  // namespace

Answer GrpcRemoteSource::retrieve_memories(const Key& key, const BankId& bank) {
    kbv1::RetrieveRequest req = retrieve_request(key, bank);
    // The records we hold (most recent first): the server leaves them out. The pointers keep them
    // alive for this answer even if the cache evicts them meanwhile.
    std::unordered_map<uint32_t, std::shared_ptr<const ExplicitMemory>> held;
    for (auto& [id, mem] : cache_.recent(max_have_ids_)) {
        req.add_have_ids(id);
        held.emplace(id, std::move(mem));
    }
    const kbv1::RetrieveMemoriesReply reply = client_->retrieve_memories(req, options_.call_timeout_ms);
    Answer a;
    a.references = references_of(reply.retrieval().hits(), static_cast<size_t>(key.k));
    std::unordered_map<uint32_t, const kbv1::MemoryRecord*> sent;
    for (const kbv1::MemoryRecord& r : reply.records()) sent.emplace(r.id(), &r);
    uint64_t hits = 0, misses = 0, bytes = 0;
    for (const RecalledReference& ref : a.references) {
        if (auto s = sent.find(ref.id); s != sent.end()) {
            auto mem = decode(*s->second, ref.id, "RetrieveMemories");
            cache_.put(ref.id, mem);
            a.memories.push_back(std::move(mem));
            bytes += s->second->record().size();
            ++misses;
        } else if (auto h = held.find(ref.id); h != held.end()) {
            cache_.put(ref.id, h->second);  // touch (and keep, if it was evicted meanwhile)
            a.memories.push_back(h->second);
            ++hits;
        } else {
            throw Error(client_->name() + ": RetrieveMemories returned hit " + std::to_string(ref.id) +
                        " without its record, and it is not one the client holds");
        }
    }
    std::lock_guard<std::mutex> lock(mu_);
    stats_.calls++;
    stats_.cache_hits += hits;
    stats_.cache_misses += misses;
    stats_.records_fetched += misses;
    stats_.record_bytes += bytes;
    stats_.reply_bytes += reply.ByteSizeLong();
    return a;
}

Answer GrpcRemoteSource::retrieve_then_fetch(const Key& key, const BankId& bank) {
    const kbv1::RetrieveReply reply = client_->retrieve(retrieve_request(key, bank), options_.call_timeout_ms);
    uint64_t reply_bytes = reply.ByteSizeLong();
    Answer a;
    a.references = references_of(reply.hits(), static_cast<size_t>(key.k));
    a.memories.resize(a.references.size());
    kbv1::FetchRequest fetch;
    std::vector<size_t> slot;  // answer position of each fetched id
    for (size_t i = 0; i < a.references.size(); ++i) {
        if (auto mem = cache_.get(a.references[i].id)) {
            a.memories[i] = std::move(mem);
        } else {
            fetch.add_ids(a.references[i].id);
            slot.push_back(i);
        }
    }
    uint64_t bytes = 0;
    if (!slot.empty()) {
        fetch.set_bank_version(bank.version);
        fetch.set_key_codebook_sha256(bank.key_sha);
        fetch.set_value_codebook_sha256(bank.value_sha);
        const std::vector<kbv1::MemoryRecord> records = client_->fetch(fetch, options_.call_timeout_ms, &reply_bytes);
        if (records.size() != slot.size())
            throw Error(client_->name() + ": FetchMemories sent " + std::to_string(records.size()) + " records, " +
                        std::to_string(slot.size()) + " were asked for");
        for (size_t j = 0; j < slot.size(); ++j) {
            auto mem = decode(records[j], fetch.ids(static_cast<int>(j)), "FetchMemories");
            cache_.put(mem->id, mem);
            a.memories[slot[j]] = std::move(mem);
            bytes += records[j].record().size();
        }
    }
    std::lock_guard<std::mutex> lock(mu_);
    stats_.calls += slot.empty() ? 1 : 2;
    stats_.cache_hits += a.references.size() - slot.size();
    stats_.cache_misses += slot.size();
    stats_.records_fetched += slot.size();
    stats_.record_bytes += bytes;
    stats_.reply_bytes += reply_bytes;
    return a;
}

Answer GrpcRemoteSource::request(const Key& key) {
    BankId bank;
    {
        std::lock_guard<std::mutex> lock(mu_);
        bank = bank_;
    }
    auto once = [&] { return options_.single_round_trip ? retrieve_memories(key, bank) : retrieve_then_fetch(key, bank); };
    try {
        return once();
    } catch (const KbCallError& e) {
        if (e.code != grpc::StatusCode::FAILED_PRECONDITION) throw;
    }
    // The bank changed under us (or its codebooks did): look at what is served now and, when it
    // still fits the session, ask again against it.
    refresh_bank();
    {
        std::lock_guard<std::mutex> lock(mu_);
        bank = bank_;
    }
    return once();
}

Answer GrpcRemoteSource::answer(const Key& key) {
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
            stats_.state = RemoteState::Connected;
        }
        if (recovered) warn(client_->name() + " answers again: memories are back");
        return a;
    } catch (const std::exception& e) {  // KbCallError, a bad record, a bank for another model
        error = e.what();
    }
    bool starts = false;
    RemoteState state;
    {
        std::lock_guard<std::mutex> lock(mu_);
        starts = outage_.failed(Clock::now());
        stats_.failures++;
        stats_.last_error = error;
        stats_.state = incompatible_ ? RemoteState::Incompatible : RemoteState::Unavailable;
        state = stats_.state;
        if (starts) stats_.outages++;
    }
    if (starts)
        warn(error + (state == RemoteState::Incompatible ? " — generating without memories"
                                                         : " — generating without memories until it is back"));
    return {};
}

void GrpcRemoteSource::prefetch(const ChunkQuery& query, int32_t k) {
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

void GrpcRemoteSource::worker() {
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

std::vector<std::shared_ptr<const ExplicitMemory>> GrpcRemoteSource::retrieve(const ChunkQuery& query, int32_t k) {
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
    std::vector<RecalledReference> refs = got->references;
    if (got->memories.empty()) refs.clear();  // a failed chunk recalled nothing
    {
        std::lock_guard<std::mutex> lock(mu_);
        last_refs_[query.seq] = std::move(refs);
    }
    return std::move(got->memories);
}

RemoteMemoryStatus GrpcRemoteSource::status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
}

std::vector<RecalledReference> GrpcRemoteSource::last_references(int32_t seq) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = last_refs_.find(seq);
    return it == last_refs_.end() ? std::vector<RecalledReference>{} : it->second;
}

}  // namespace

std::shared_ptr<RemoteMemorySource> connect_knowledge_server(const RemoteMemoryOptions& options, const MemoryFolderModel& model) {
    check_min_relative_score(options.min_relative_score, "knowledge server " + options.url);
    return std::make_shared<GrpcRemoteSource>(options, model);
}

}  // namespace mnemo
