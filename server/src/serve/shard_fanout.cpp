#include "serve/shard_fanout.hpp"

#include <algorithm>

#include "mnemo/io/printable.hpp"
#include "serve/request_checks.hpp"

namespace mnemo::kb {
namespace {

using grpc::Status;
using grpc::StatusCode;
using Clock = std::chrono::system_clock;

// The peers must be done a little before the client's deadline, so that the client reads which
// shard failed rather than its own DEADLINE_EXCEEDED: a quarter of the time left, at most this.
constexpr std::chrono::milliseconds kAnswerMargin{100};

ShardRankings local_rankings(const Bank& bank, const BankQuery& q, uint32_t depth) {
    ShardRankings r;
    r.shard = bank.shard();
    r.bank_version = bank.version();
    if (q.vector) r.vector = bank.vector_ranking(q, depth);
    if (q.tokens && !q.tokens->empty()) r.bm25 = bank.bm25_ranking(q, depth);
    return r;
}

// What a peer is asked: the client's query with its text already tokenized, no pins (the reply's
// version is compared instead, which names both), nothing the peer should cut or send.
v1::RetrieveRequest peer_request(const BankQuery& q, uint32_t k, uint32_t depth, uint32_t shards) {
    v1::RetrieveRequest r;
    if (q.vector) r.mutable_vector()->Add(q.vector->begin(), q.vector->end());
    if (q.tokens) r.mutable_tokens()->Add(q.tokens->begin(), q.tokens->end());
    r.set_k(k);
    for (const std::string& s : q.sources) r.mutable_filter()->add_sources(s);
    r.mutable_filter()->set_source_prefix(q.source_prefix);
    r.set_omit_texts(true);
    r.mutable_shard()->set_depth(depth);
    r.mutable_shard()->set_shards(shards);
    return r;
}

Clock::time_point peer_deadline(Clock::time_point call_deadline) {
    const Clock::time_point now = Clock::now();
    if (call_deadline <= now) return call_deadline;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(call_deadline - now);
    return call_deadline - std::min(kAnswerMargin, left / 4);
}

std::string shard_name(const ShardSpec& s) { return "shard " + s.describe(); }

}  // namespace

Status fan_out_retrieve(CallIo& io, const Bank& bank, ShardPeers& peers, const BankQuery& q, uint32_t k, std::vector<BankHit>* hits) {
    const ShardSpec self{bank.shard(), bank.shards()};
    const bool by_vector = q.vector != nullptr;
    const bool by_tokens = q.tokens != nullptr && !q.tokens->empty();
    const uint32_t depth = shard_depth(k, by_vector, by_tokens);
    const v1::RetrieveRequest request = peer_request(q, k, depth, self.shards);

    std::vector<ShardRankings> parts(1 + peers.size());
    bool stopped = false;
    const std::vector<ShardPeers::Answer> answers = peers.ask_all(
        request, peer_deadline(io.deadline()), [&io] { return io.should_stop(); },
        [&] {
            try {
                parts[0] = local_rankings(bank, q, depth);
            } catch (const QueryStopped&) {
                stopped = true;
            }
        });
    if (stopped || io.should_stop()) {
        const Status state = io.state();
        return state.ok() ? Status(StatusCode::CANCELLED, "the retrieval was stopped") : state;
    }
    double slowest_ms = 0;
    for (size_t i = 0; i < answers.size(); ++i) {
        const ShardPeers::Answer& a = answers[i];
        const ShardSpec want = peers.expected(i);
        slowest_ms = std::max(slowest_ms, a.ms);
        // The client learns which shard; the log also learns which node, and gRPC's own words
        // (which name the peer's address).
        const auto unavailable = [&](const std::string& why) {
            io.note().server_error = shard_name(want) + " at " + printable(peers.url(i), 200) + ": " + why;
            if (!a.status.ok()) io.note().server_error += " (" + printable(a.status.error_message(), 300) + ")";
            return Status(StatusCode::UNAVAILABLE, "bank version " + std::to_string(bank.version()) + ": " + shard_name(want) +
                                                       " of the index did not answer: " + why +
                                                       "; no partial result is returned (retry, or ask another node)");
        };
        if (!a.status.ok()) {
            if (a.status.error_code() == StatusCode::DEADLINE_EXCEEDED)
                return unavailable("its node took longer than " + std::to_string(static_cast<long long>(a.ms)) + " ms");
            if (a.status.error_code() == StatusCode::UNAVAILABLE) return unavailable("UNAVAILABLE: its node is down or unreachable");
            // The peer's own refusal (scope, shard count, a limit): its message is one for clients.
            return unavailable(std::string(status_code_name(a.status.error_code())) + ": " + printable(a.status.error_message(), 300));
        }
        if (!a.reply.has_shard())
            return unavailable("its node answered without shard rankings (a mnemo-kb older than shards, or not a node of this index)");
        // The version first: ids of another version are no ids of this one.
        if (a.reply.shard().bank_version() != bank.version())
            return unavailable("its node serves bank version " + std::to_string(a.reply.shard().bank_version()) + ", this node (" +
                               shard_name(self) + ") version " + std::to_string(bank.version()) +
                               ": every shard must serve the same version (a reload under way?)");
        const std::string problem = read_shard_reply(a.reply.shard(), want, depth, bank, &parts[i + 1]);
        if (!problem.empty()) return unavailable("its node's answer is unusable: " + problem);
    }
    *hits = merge_shard_rankings(parts, k, by_vector, by_tokens, q.min_relative_score, q.min_references);
    io.note().detail += "shards=" + std::to_string(self.shards) + " slowest_shard_ms=" + std::to_string(static_cast<long long>(slowest_ms)) + " ";
    return Status::OK;
}

Status answer_shard_request(const Bank& bank, const v1::RetrieveRequest& req, const BankQuery& q, const ServeLimits& limits,
                            v1::RetrieveReply* out) {
    const ShardSpec self{bank.shard(), bank.shards()};
    const uint32_t max_depth = max_shard_depth(limits.max_k);
    if (req.shard().depth() == 0 || req.shard().depth() > max_depth)
        return Status(StatusCode::INVALID_ARGUMENT, "shard.depth is " + std::to_string(req.shard().depth()) + "; this node answers 1.." +
                                                        std::to_string(max_depth));
    if (req.shard().shards() != self.shards)
        return Status(StatusCode::FAILED_PRECONDITION, "this node holds shard " + self.describe() + ", the asking node's index has " +
                                                           std::to_string(req.shard().shards()) + " shards");
    to_proto(local_rankings(bank, q, req.shard().depth()), self, out->mutable_shard());
    out->set_bank_version(bank.version());
    return Status::OK;
}

}  // namespace mnemo::kb
