// Looking again at the servers that take no chunks (GrpcKbSource, grpc_kb_source.hpp): a thread
// that sleeps until one of them is due (ServerPool's backoff) and asks it for Info. Chunks never
// wait for a server that is down while another one answers; the probe finds when it is back. Info
// rather than Health: it also says whether the bank still fits the model, and the server's limits
// (for a server that was down when the client connected, the first it says).
#include "kb/grpc_kb_source.hpp"

namespace mnemo::detail {

void GrpcKbSource::wake_prober() {
    {
        std::lock_guard<std::mutex> lock(probe_mu_);
        probe_kick_ = true;
    }
    probe_cv_.notify_all();
}

void GrpcKbSource::prober() {
    std::unique_lock<std::mutex> lock(probe_mu_);
    while (!probe_stop_) {
        const std::vector<size_t> due = pool_->due(Clock::now());
        if (due.empty()) {
            auto woken = [this] { return probe_stop_ || probe_kick_; };
            if (const auto next = pool_->next_due()) {
                probe_cv_.wait_until(lock, *next, woken);
            } else {
                probe_cv_.wait(lock, woken);
            }
            probe_kick_ = false;
            continue;
        }
        lock.unlock();
        for (size_t i : due) probe(i);
        lock.lock();
    }
}

void GrpcKbSource::probe(size_t i) {
    KbClient& c = pool_->client(i);
    // A server that failed is dialled anew (KbClient::redial: gRPC's reconnect backoff would keep
    // the old channel off a restarted server for seconds); one that is only behind or serves
    // another bank answers on the channel it has.
    if (pool_->state(i) == KbServerState::Down) c.redial();
    kbv1::InfoReply info;
    try {
        // Not waiting for the channel: a probe of a server still down fails at once, and gRPC's
        // own reconnect (250 ms doubling to 4 s) has the channel ready soon after it is back.
        info = c.info(options_.call_timeout_ms, /*wait_for_ready=*/false);
    } catch (const std::exception& e) {
        pool_->probe_failed(i, KbServerState::Down, e.what(), Clock::now());
        return;
    }
    try {
        check_bank(c, info.bank(), /*connecting=*/false);
    } catch (const std::exception& e) {
        pool_->probe_failed(i, KbServerState::Incompatible, e.what(), Clock::now());
        return;
    }
    take_limits(info);
    pool_->probe_answered(i, info.bank().bank_version(), bank().version, Clock::now());
}

}  // namespace mnemo::detail
