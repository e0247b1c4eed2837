// The knowledge server's client over gRPC, GrpcKbSource (mnemo/kb/kb_source.hpp, docs/kb-client.md),
// declared for its files: grpc_kb_source.cpp (connecting to the servers and checking the bank, the
// prefetch worker, retrieve()), grpc_kb_failover.cpp (a chunk on one server after another until
// one answers, bank versions, the warnings), grpc_kb_prober.cpp (looking again at servers that are
// not taking chunks) and grpc_kb_calls.cpp (one chunk's calls on one server: RetrieveMemories, or
// Retrieve + FetchMemories, and the records they bring). The servers: grpc_kb_pool.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kb/grpc_kb_client.hpp"
#include "kb/grpc_kb_pool.hpp"
#include "kb/kb_endpoints.hpp"
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

// What one server did with a chunk (grpc_kb_failover.cpp).
struct Attempt {
    enum class Result { Answered, Failed, Incompatible, Behind };
    Result result = Result::Failed;
    Answer answer;
    std::string error;
    bool starts_outage = false;  // the server was Up until this failure
    bool came_back = false;      // answered, and was not Up before
};

class GrpcKbSource final : public KbSource {
public:
    // `resolve` turns a host name into its addresses (kb_endpoints.hpp); tests replace it.
    GrpcKbSource(const KbSourceOptions& options, const MemoryFolderModel& model, const KbResolver& resolve = resolve_host);
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
    // Connecting (grpc_kb_source.cpp): Info of every server at once, the codebooks, the checks.
    void connect(const std::vector<std::string>& urls, const KbResolver& resolve);
    Key key_of(const ChunkQuery& query, int32_t k) const;
    // A server's limits (Info), lowering the client's: every server must accept its requests.
    void take_limits(const kbv1::InfoReply& info);

    // The chunk's answer from the first server that gives one within the chunk's deadline; none
    // when no server does, with the outage's warning (grpc_kb_failover.cpp).
    Answer answer(const Key& key);
    // The chunk on server i, pinned to the client's bank version; a server that serves another
    // version is asked which (Info): a newer one becomes the client's and the chunk is asked again
    // there, an older one leaves the server Behind. Never throws.
    Attempt attempt(size_t i, const Key& key, Clock::time_point deadline);
    // The chunk on server i against `bank`, whatever the client reads (the fallback to a Behind
    // server); a refusal is a failure.
    Attempt attempt_pinned(size_t i, const Key& key, const BankId& bank, Clock::time_point deadline);
    // Makes `version` (checked: same model and codec) the client's: the cache is emptied, since
    // its ids were another version's. False when it already was.
    bool adopt(uint64_t version);
    // Words the end of a chunk: answered by server i, with ServerDown for the servers whose outage
    // it started on the way, then Recovered (after an outage) or ServerUp when i came back; or
    // answered by none, with Outage / Incompatible once per outage.
    void report_answered(size_t i, bool came_back, const std::vector<std::pair<size_t, std::string>>& went_down, bool failed_over);
    void report_unanswered(const std::string& error, bool incompatible);

    // One chunk's calls on one server (grpc_kb_calls.cpp); throw KbCallError or Error. Each call's
    // deadline is call_timeout_ms, or less where the chunk's `deadline` comes first.
    Answer retrieve_memories(KbClient& client, const Key& key, const BankId& bank, Clock::time_point deadline);
    Answer retrieve_then_fetch(KbClient& client, const Key& key, const BankId& bank, Clock::time_point deadline);
    int32_t call_ms(Clock::time_point deadline) const;
    kbv1::RetrieveRequest retrieve_request(const Key& key, const BankId& bank) const;
    std::shared_ptr<const ExplicitMemory> decode(const KbClient& client, const kbv1::MemoryRecord& record, uint32_t id,
                                                 const char* call) const;
    // The bank a server describes, against the model and (once connected) the session's codec.
    // Throws when it is for another model or codec.
    void check_bank(const KbClient& client, const kbv1::BankInfo& bank, bool connecting) const;

    // Looking again at servers that are not Up, on their backoff (grpc_kb_prober.cpp).
    void prober();
    void probe(size_t i);
    void wake_prober();

    // Reports an event to on_event, or its message to warn (stderr when neither is set).
    void warn(KbEvent event, const std::string& detail, const std::string& message);
    void worker();
    BankId bank() const;
    std::string servers_named() const;  // "knowledge server URL" or "knowledge servers URL, URL"
    std::chrono::milliseconds chunk_budget() const;

    KbSourceOptions options_;
    MemoryFolderModel model_;
    std::vector<std::string> urls_;  // as given
    std::unique_ptr<ServerPool> pool_;
    std::unique_ptr<MemoryCodec> codec_;
    std::atomic<size_t> max_have_ids_{0};
    std::atomic<uint32_t> max_k_{0};
    RecordCache cache_;

    // Bank, outage and counters: the session's thread, the worker and the prober share them.
    mutable std::mutex mu_;
    BankId bank_;
    bool outage_ = false;  // no server answered the last chunk that tried; warned once
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

    // The prober sleeps until a server is due, or it is woken (a server went down).
    std::mutex probe_mu_;
    std::condition_variable probe_cv_;
    bool probe_kick_ = false;
    bool probe_stop_ = false;
    std::thread prober_;
};

}  // namespace mnemo::detail
