// The knowledge server's client over gRPC, GrpcKbSource (mnemo/kb/kb_source.hpp, docs/kb-client.md),
// declared for its two files: grpc_kb_source.cpp (connecting and checking the bank, the prefetch
// worker, retrieve(), and what a failing server does to a chunk) and grpc_kb_calls.cpp (one
// chunk's calls: RetrieveMemories, or Retrieve + FetchMemories, and the records they bring).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kb/grpc_kb_client.hpp"
#include "kb/outage.hpp"
#include "kb/record_cache.hpp"
#include "mnemo/kb/kb_source.hpp"

namespace mnemo::detail {

namespace kbv1 = ::mnemo::kb::v1;
using Clock = std::chrono::steady_clock;

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
    std::vector<RetrievedReference> references;
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

class GrpcKbSource final : public KbSource {
public:
    GrpcKbSource(const KbSourceOptions& options, const MemoryFolderModel& model);
    ~GrpcKbSource() override;

    bool wants_vector() const override { return options_.retrieval != KbRetrieval::BM25; }
    bool prefetches() const override { return options_.prefetch; }
    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& query, int32_t k) override;
    void prefetch(const ChunkQuery& query, int32_t k) override;
    std::string describe() const override;
    const MemoryCodec* codec() const override { return codec_.get(); }
    KbSourceStatus status() const override;
    std::vector<RetrievedReference> last_references(int32_t seq) const override;

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
    // Reports an event to on_event, or its message to warn (stderr when neither is set).
    void warn(KbEvent event, const std::string& detail, const std::string& message);
    void worker();

    KbSourceOptions options_;
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
    KbSourceStatus stats_;
    std::map<int32_t, std::vector<RetrievedReference>> last_refs_;
    std::mutex warn_mu_;

    // Prefetch: one worker runs announced queries in order.
    std::mutex pmu_;
    std::condition_variable pcv_;
    // Announced, oldest first (any state; at most 64). A vector, not a deque: clang exports the
    // deque iterator's friend operators instantiated on this internal type from libmnemo
    // (libmnemo.exports_public_api_only fails in the sanitizer build).
    std::vector<std::shared_ptr<Pending>> pending_;
    bool stop_ = false;
    std::thread worker_;
};

}  // namespace mnemo::detail
