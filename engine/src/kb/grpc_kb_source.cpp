// The knowledge server's client over gRPC (mnemo/kb/kb_source.hpp, docs/kb-client.md): connecting
// to the servers and checking the bank, the prefetch worker, retrieve() with the host record
// cache. What a failing server does to a chunk is grpc_kb_failover.cpp's, the calls of one chunk
// grpc_kb_calls.cpp's.
#include "kb/grpc_kb_source.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <optional>
#include <thread>
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

GrpcKbSource::GrpcKbSource(const KbSourceOptions& options, const MemoryFolderModel& model, const KbResolver& resolve)
    : options_(options), model_(model), cache_(options.cache_records) {
    if (!options_.url.empty() && !options_.urls.empty())
        throw Error("knowledge server: give one URL (url) or a list (urls), not both");
    urls_ = options_.urls.empty() ? std::vector<std::string>{options_.url} : options_.urls;
    if (options_.connect_timeout_ms <= 0 || options_.call_timeout_ms <= 0 || options_.chunk_timeout_ms < 0)
        throw Error(servers_named() + ": timeouts must be positive");
    connect(urls_, resolve);
    if (options_.prefetch) worker_ = std::thread([this] { worker(); });
    prober_ = std::thread([this] { prober(); });
}

void GrpcKbSource::connect(const std::vector<std::string>& urls, const KbResolver& resolve) {
    const std::vector<KbEndpoint> endpoints = kb_endpoints(parse_kb_urls(urls), resolve);
    std::vector<std::unique_ptr<KbClient>> clients;
    for (const KbEndpoint& e : endpoints)
        clients.push_back(std::make_unique<KbClient>(e, options_.token, options_.ca_file, max_reply_bytes(model_.spec)));
    pool_ = std::make_unique<ServerPool>(std::move(clients), Outage::ms(options_.backoff_initial_ms), Outage::ms(options_.backoff_max_ms));
    stats_.url = urls.front();
    for (size_t i = 1; i < urls.size(); ++i) stats_.url += ", " + urls[i];

    // Every server's Info at once. One server: wait up to the deadline for its connection (it may
    // be starting). Several: first without waiting, so that a server whose connection is refused
    // (down) fails at once instead of holding the start for the whole deadline while the others
    // answer; only when none answers, wait for them all as for one.
    const size_t n = pool_->size();
    std::vector<std::optional<kbv1::InfoReply>> infos(n);
    std::vector<std::string> errors(n);
    std::vector<grpc::StatusCode> codes(n, grpc::StatusCode::OK);
    const auto connect_deadline = Clock::now() + std::chrono::milliseconds(options_.connect_timeout_ms);
    auto ask_all = [&](bool wait_for_ready) {
        auto ask = [&](size_t i) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(connect_deadline - Clock::now()).count();
            try {
                infos[i] = pool_->client(i).info(static_cast<int32_t>(std::max<int64_t>(left, 1)), wait_for_ready);
                codes[i] = grpc::StatusCode::OK;
            } catch (const KbCallError& e) {
                errors[i] = e.what();
                codes[i] = e.code;
            }
        };
        if (n == 1) return ask(0);
        std::vector<std::thread> askers;
        for (size_t i = 0; i < n; ++i) askers.emplace_back(ask, i);
        for (std::thread& t : askers) t.join();
    };
    auto transport_failure = [](grpc::StatusCode c) { return c == grpc::StatusCode::DEADLINE_EXCEEDED || c == grpc::StatusCode::UNAVAILABLE; };
    ask_all(/*wait_for_ready=*/n == 1);
    if (n > 1 && std::none_of(infos.begin(), infos.end(), [](const auto& i) { return i.has_value(); }) &&
        std::all_of(codes.begin(), codes.end(), transport_failure))
        ask_all(/*wait_for_ready=*/true);
    // A server that answers with a refusal (a token it does not know, a limit) is misconfigured:
    // said now, rather than discovered chunk by chunk. One that does not answer is left for later.
    size_t newest = n;
    for (size_t i = 0; i < n; ++i) {
        if (infos[i]) {
            if (newest == n || infos[i]->bank().bank_version() > infos[newest]->bank().bank_version()) newest = i;
        } else if (!transport_failure(codes[i])) {
            throw Error(errors[i]);
        }
    }
    if (newest == n) {
        std::string all;
        for (size_t i = 0; i < n; ++i) all += (i ? "; " : "") + errors[i];
        const bool tls = pool_->client(0).url().tls;
        throw Error(all + " (no answer within " + std::to_string(options_.connect_timeout_ms) + " ms: is `mnemo-kb serve` running there, and does it speak " +
                    (tls ? "TLS, as grpcs://" : "plaintext, as grpc://") + " says?)");
    }

    // The codebooks of the newest version, from any server that serves it (verified by their SHA-256).
    const kbv1::BankInfo& b = infos[newest]->bank();
    if (!b.key_codebook_sha256().empty() || !b.value_codebook_sha256().empty()) {
        std::string failure;
        for (size_t i = 0; i < n && !codec_; ++i) {
            if (!infos[i] || infos[i]->bank().bank_version() != b.bank_version()) continue;
            try {
                KbClient& c = pool_->client(i);
                auto codec = std::make_unique<MemoryCodec>();
                for (int kv = 0; kv < 2; ++kv) {
                    const std::string& sha = kv == 0 ? b.key_codebook_sha256() : b.value_codebook_sha256();
                    // The codebook decodes the model's keys (head_dim) or values (value_dim): that bounds it.
                    const int32_t dim = kv == 0 ? model_.spec.head_dim : model_.spec.value_dim;
                    const std::string bytes = c.codebook(sha, static_cast<uint32_t>(std::max(dim, 0)), kv == 0 ? "keys" : "values",
                                                         options_.connect_timeout_ms, true);
                    (kv == 0 ? codec->keys : codec->values) =
                        parse_vq_codebook(bytes.data(), bytes.size(), c.name() + ": " + (kv == 0 ? "key" : "value") + " codebook", sha);
                }
                codec_ = std::move(codec);
            } catch (const KbCallError& e) {
                failure = e.what();  // another server of this version may send them
            }
        }
        if (!codec_) throw Error(failure);
    }
    check_bank(pool_->client(newest), b, /*connecting=*/true);
    bank_ = {b.bank_version(), b.key_codebook_sha256(), b.value_codebook_sha256()};
    cache_.reset(bank_.version);
    stats_.bank_version = b.bank_version();
    max_have_ids_ = options_.max_have_ids;
    const auto now = Clock::now();
    for (size_t i = 0; i < n; ++i) {
        if (!infos[i]) continue;
        // Servers of one bank: the same model and codec, whatever version each has loaded yet.
        if (i != newest) check_bank(pool_->client(i), infos[i]->bank(), /*connecting=*/false);
        take_limits(*infos[i]);
        if (infos[i]->bank().bank_version() < bank_.version) pool_->lagging(i, infos[i]->bank().bank_version(), now);
    }
    for (size_t i = 0; i < n; ++i) {
        if (infos[i]) continue;
        pool_->failed(i, KbServerState::Down, errors[i], now);
        warn(KbEvent::ServerDown, errors[i], errors[i] + " — the other servers take its chunks");
    }
}

void GrpcKbSource::take_limits(const kbv1::InfoReply& info) {
    if (info.max_k() > 0) {
        uint32_t k = max_k_.load();
        while ((k == 0 || info.max_k() < k) && !max_k_.compare_exchange_weak(k, info.max_k())) {
        }
    }
    if (info.max_ids_per_request() > 0) {
        size_t ids = max_have_ids_.load();
        while (info.max_ids_per_request() < ids && !max_have_ids_.compare_exchange_weak(ids, info.max_ids_per_request())) {
        }
    }
}

GrpcKbSource::~GrpcKbSource() {
    {
        std::lock_guard<std::mutex> lock(pmu_);
        stop_ = true;
    }
    pcv_.notify_all();
    {
        std::lock_guard<std::mutex> lock(probe_mu_);
        probe_stop_ = true;
    }
    probe_cv_.notify_all();
    if (worker_.joinable()) worker_.join();  // its call in flight ends by its deadline
    if (prober_.joinable()) prober_.join();  // likewise
}

BankId GrpcKbSource::bank() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bank_;
}

std::string GrpcKbSource::servers_named() const {
    std::string names;
    for (const std::string& u : urls_) names += (names.empty() ? "" : ", ") + u;
    return (urls_.size() > 1 ? "knowledge servers " : "knowledge server ") + names;
}

std::chrono::milliseconds GrpcKbSource::chunk_budget() const {
    return std::chrono::milliseconds(options_.chunk_timeout_ms > 0 ? options_.chunk_timeout_ms : 2 * options_.call_timeout_ms);
}

void GrpcKbSource::check_bank(const KbClient& client, const kbv1::BankInfo& b, bool connecting) const {
    const std::string where = client.name() + ": bank version " + std::to_string(b.bank_version());
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

std::string GrpcKbSource::describe() const {
    const char* mode = options_.retrieval == KbRetrieval::Vector ? "vector" : options_.retrieval == KbRetrieval::BM25 ? "BM25" : "hybrid";
    const size_t addresses = pool_->size();
    std::lock_guard<std::mutex> lock(mu_);
    return servers_named() + (addresses > urls_.size() ? " (" + std::to_string(addresses) + " addresses)" : "") + " (bank version " +
           std::to_string(bank_.version) + (codec_ ? ", compressed" : "") + " memories, " + mode + " retrieval" +
           relative_cut_suffix(options_.min_relative_score, options_.min_references) + ")";
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
    const uint32_t max_k = max_k_.load();
    key.k = max_k > 0 ? std::min<int32_t>(k, static_cast<int32_t>(max_k)) : k;
    return key;
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
                // Running: its calls end by the chunk's deadline (failovers and a bank refresh
                // included), so this wait ends; the bound is only a guard against a bug hanging
                // generation.
                const auto limit = chunk_budget() + std::chrono::milliseconds(1000);
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
                    stats_.last_error = servers_named() + ": a prefetched retrieval did not finish in time";
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
    std::vector<KbServerStatus> servers = pool_->status();
    std::lock_guard<std::mutex> lock(mu_);
    KbSourceStatus s = stats_;
    s.servers = std::move(servers);
    return s;
}

std::vector<RetrievedReference> GrpcKbSource::last_references(int32_t seq) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = last_refs_.find(seq);
    return it == last_refs_.end() ? std::vector<RetrievedReference>{} : it->second;
}

}  // namespace mnemo::detail

namespace mnemo {
std::shared_ptr<KbSource> connect_kb(const KbSourceOptions& options, const MemoryFolderModel& model) {
    const std::string server = "knowledge server " + (options.urls.empty() ? options.url : options.urls.front());
    check_min_relative_score(options.min_relative_score, server);
    check_min_references(options.min_references, server);
    return std::make_shared<detail::GrpcKbSource>(options, model);
}

}  // namespace mnemo
