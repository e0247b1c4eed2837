// What a failing server does to a chunk (GrpcKbSource, grpc_kb_source.hpp): the chunk goes to the
// servers of ServerPool::plan one after another, within the chunk's deadline, until one answers;
// a server that serves another bank version is asked which, so that a newer version becomes the
// client's and an older one leaves that server aside until it catches up; only when no server
// answers does the chunk go without memories. And the warnings this gives, once each.
#include <algorithm>
#include <string>

#include "kb/grpc_kb_source.hpp"
#include "mnemo/error.hpp"

namespace mnemo::detail {

namespace {

// Ends a call on a pool's server however the attempt leaves (in_flight drives least-outstanding).
class CallInFlight {
public:
    CallInFlight(ServerPool& pool, size_t i) : pool_(pool), i_(i) { pool_.begin_call(i_); }
    ~CallInFlight() { pool_.end_call(i_); }
    CallInFlight(const CallInFlight&) = delete;
    CallInFlight& operator=(const CallInFlight&) = delete;

private:
    ServerPool& pool_;
    size_t i_;
};

std::string joined(const std::vector<std::string>& errors) {
    std::string out;
    for (const std::string& e : errors) out += (out.empty() ? "" : "; ") + e;
    return out;
}

}  // namespace

bool GrpcKbSource::adopt(uint64_t version) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (version == bank_.version) return false;
        bank_.version = version;
        stats_.bank_version = version;
        stats_.bank_changes++;
        // Record ids belong to a version: what the cache holds means nothing in this one. Under
        // the same lock as bank_, so no chunk pins the new version and finds the old records.
        cache_.reset(version);
    }
    warn(KbEvent::BankChanged, std::to_string(version), servers_named() + ": now serving bank version " + std::to_string(version));
    return true;
}

Attempt GrpcKbSource::attempt(size_t i, const Key& key, Clock::time_point deadline) {
    KbClient& c = pool_->client(i);
    CallInFlight in_flight(*pool_, i);
    Attempt out;
    BankId b = bank();
    const bool short_of_time = deadline - Clock::now() < std::chrono::milliseconds(options_.call_timeout_ms);
    grpc::StatusCode code = grpc::StatusCode::OK;
    // Two rounds at most: the chunk as pinned, then once more after following the server to a
    // newer version.
    for (int round = 0; round < 2; ++round) {
        bool other_version = false;
        try {
            out.answer = options_.single_round_trip ? retrieve_memories(c, key, b, deadline) : retrieve_then_fetch(c, key, b, deadline);
            out.result = Attempt::Result::Answered;
            out.came_back = pool_->answered(i, b.version);
            return out;
        } catch (const KbCallError& e) {
            out.error = e.what();
            code = e.code;
            other_version = e.code == grpc::StatusCode::FAILED_PRECONDITION && round == 0;
        } catch (const std::exception& e) {  // a record that fails its checks, a reply that breaks the protocol
            out.error = e.what();
            code = grpc::StatusCode::UNKNOWN;
        }
        if (!other_version) break;
        // The server serves another version than the one pinned (or other codebooks): which?
        kbv1::InfoReply info;
        try {
            info = c.info(call_ms(deadline), false);
        } catch (const std::exception& e) {
            out.error = e.what();
            break;
        }
        try {
            check_bank(c, info.bank(), /*connecting=*/false);
        } catch (const std::exception& e) {
            out.error = e.what();
            out.result = Attempt::Result::Incompatible;
            out.starts_outage = pool_->failed(i, KbServerState::Incompatible, out.error, Clock::now());
            wake_prober();
            return out;
        }
        take_limits(info);
        const uint64_t version = info.bank().bank_version();
        if (version < b.version) {
            // A node that has not loaded the newest publish yet: not a failure, and no chunk for it
            // until the prober finds it caught up.
            pool_->lagging(i, version, Clock::now());
            wake_prober();
            out.result = Attempt::Result::Behind;
            return out;
        }
        // Newer (or the same: it reloaded between our call and Info): the client's from now on,
        // unless another chunk moved it further meanwhile (then the server refuses once more, and
        // the chunk goes on to the next one).
        if (version > bank().version) adopt(version);
        b = bank();
    }
    out.result = Attempt::Result::Failed;
    // A server given only what was left of the chunk's time (after another one hung) is not
    // blamed for running out of it: it stays as it was, and the next chunk gives it a whole call.
    if (code == grpc::StatusCode::DEADLINE_EXCEEDED && short_of_time) return out;
    out.starts_outage = pool_->failed(i, KbServerState::Down, out.error, Clock::now());
    wake_prober();
    return out;
}

Attempt GrpcKbSource::attempt_pinned(size_t i, const Key& key, const BankId& bank, Clock::time_point deadline) {
    KbClient& c = pool_->client(i);
    CallInFlight in_flight(*pool_, i);
    Attempt out;
    try {
        // The cache holds the client's version, not this one: it gives no have_ids and keeps none
        // of these records (RecordCache ignores another version), so nothing of the two mixes.
        out.answer = options_.single_round_trip ? retrieve_memories(c, key, bank, deadline) : retrieve_then_fetch(c, key, bank, deadline);
        out.result = Attempt::Result::Answered;
        out.came_back = pool_->answered(i, bank.version);
        return out;
    } catch (const std::exception& e) {
        out.error = e.what();
    }
    out.result = Attempt::Result::Failed;
    out.starts_outage = pool_->failed(i, KbServerState::Down, out.error, Clock::now());
    wake_prober();
    return out;
}

Answer GrpcKbSource::answer(const Key& key) {
    const auto start = Clock::now();
    const auto deadline = start + chunk_budget();
    const std::vector<size_t> plan = pool_->plan(start);
    std::vector<std::pair<size_t, std::string>> went_down;  // servers whose outage this chunk started
    std::vector<std::string> errors;
    bool incompatible = true;  // every failure of this chunk was a bank that does not fit
    bool tried = false;
    for (size_t i : plan) {
        if (tried && Clock::now() >= deadline) break;
        const bool failed_before = !errors.empty();
        Attempt a = attempt(i, key, deadline);
        tried = true;
        if (a.result == Attempt::Result::Answered) {
            report_answered(i, a.came_back, went_down, failed_before);
            return std::move(a.answer);
        }
        if (a.result == Attempt::Result::Behind) continue;
        errors.push_back(a.error);
        if (a.result != Attempt::Result::Incompatible) incompatible = false;
        if (a.starts_outage) went_down.emplace_back(i, a.error);
    }
    // No server of the client's version answered (they died, or the bank was rolled back): a
    // server still serving an older version gives the chunk that version's memories, all of them
    // of that version, and that version becomes the client's.
    for (const auto& [i, version] : pool_->behind()) {
        if (tried && Clock::now() >= deadline) break;
        BankId b = bank();
        b.version = version;
        Attempt a = attempt_pinned(i, key, b, deadline);
        tried = true;
        if (a.result == Attempt::Result::Answered) {
            adopt(version);
            report_answered(i, a.came_back, went_down, !errors.empty());
            return std::move(a.answer);
        }
        errors.push_back(a.error);
        incompatible = false;
    }
    if (!tried) {  // every server backing off: answered at once, without a call
        std::lock_guard<std::mutex> lock(mu_);
        stats_.skipped++;
        return {};
    }
    // The servers that went down in this chunk are named by their errors in the one warning.
    report_unanswered(errors.empty() ? servers_named() + ": no server serves bank version " + std::to_string(bank().version)
                                                : joined(errors),
                      incompatible && !errors.empty());
    return {};
}

void GrpcKbSource::report_answered(size_t i, bool came_back, const std::vector<std::pair<size_t, std::string>>& went_down,
                                   bool failed_over) {
    bool recovered = false;
    {
        std::lock_guard<std::mutex> lock(mu_);
        recovered = outage_;
        outage_ = false;
        stats_.state = KbSourceState::Connected;
        if (failed_over) stats_.failovers++;
    }
    for (const auto& [down, error] : went_down) warn(KbEvent::ServerDown, error, error + " — the other servers take its chunks");
    const std::string name = pool_->client(i).name();
    const std::string& url = pool_->client(i).endpoint().name;
    if (recovered) {
        warn(KbEvent::Recovered, url, name + " answers again: memories are back");
    } else if (came_back && pool_->size() > 1) {
        warn(KbEvent::ServerUp, url, name + " answers again");
    }
}

void GrpcKbSource::report_unanswered(const std::string& error, bool incompatible) {
    bool starts = false;
    {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.failures++;
        stats_.last_error = error;
        stats_.state = incompatible ? KbSourceState::Incompatible : KbSourceState::Unavailable;
        starts = !outage_;
        outage_ = true;
        if (starts) stats_.outages++;
    }
    // Within an outage every server has been said to be down already (the one warning).
    if (!starts) return;
    const bool several = pool_->size() > 1;
    std::string message = error;
    if (incompatible) {
        message += " — generating without memories";
    } else {
        message += several ? " — no knowledge server answers: generating without memories until one is back"
                           : " — generating without memories until it is back";
    }
    warn(incompatible ? KbEvent::Incompatible : KbEvent::Outage, error, message);
}

}  // namespace mnemo::detail
