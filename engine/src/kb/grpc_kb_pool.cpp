#include "kb/grpc_kb_pool.hpp"

#include <algorithm>

namespace mnemo::detail {

ServerPool::ServerPool(std::vector<std::unique_ptr<KbClient>> clients, Outage::ms backoff_initial, Outage::ms backoff_max) {
    for (auto& c : clients) servers_.emplace_back(std::move(c), Outage(backoff_initial, backoff_max));
}

std::vector<size_t> ServerPool::plan(Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t n = servers_.size();
    const size_t first = next_++ % n;
    std::vector<size_t> taking, trials;
    for (size_t k = 0; k < n; ++k) {
        const size_t i = (first + k) % n;
        const Server& s = servers_[i];
        if (s.state == KbServerState::Up || s.trial) {
            taking.push_back(i);
        } else if (s.state != KbServerState::Behind && !s.backoff.waiting(now)) {
            trials.push_back(i);
        }
    }
    // Least outstanding first; stable, so equal loads keep the round-robin order.
    std::stable_sort(taking.begin(), taking.end(), [&](size_t a, size_t b) { return servers_[a].in_flight < servers_[b].in_flight; });
    taking.insert(taking.end(), trials.begin(), trials.end());
    return taking;
}

std::vector<std::pair<size_t, uint64_t>> ServerPool::behind() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<size_t, uint64_t>> out;
    for (size_t i = 0; i < servers_.size(); ++i)
        if (servers_[i].state == KbServerState::Behind && servers_[i].version > 0) out.emplace_back(i, servers_[i].version);
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    return out;
}

void ServerPool::begin_call(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    servers_[i].in_flight++;
}

void ServerPool::end_call(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    servers_[i].in_flight--;
}

bool ServerPool::answered(size_t i, uint64_t version) {
    std::lock_guard<std::mutex> lock(mu_);
    Server& s = servers_[i];
    const bool back = s.state != KbServerState::Up;
    s.state = KbServerState::Up;
    s.trial = false;
    s.version = version;
    s.chunks++;
    s.backoff.succeeded();
    return back;
}

bool ServerPool::failed(size_t i, KbServerState state, const std::string& error, Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mu_);
    Server& s = servers_[i];
    const bool starts = s.state == KbServerState::Up;
    s.state = state;
    s.trial = false;
    s.failures++;
    s.last_error = error;
    s.backoff.failed(now);
    return starts;
}

void ServerPool::lagging(size_t i, uint64_t version, Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mu_);
    Server& s = servers_[i];
    s.state = KbServerState::Behind;
    s.trial = false;
    s.version = version;
    s.backoff.failed(now);
}

size_t ServerPool::up() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<size_t>(std::count_if(servers_.begin(), servers_.end(), [](const Server& s) { return s.state == KbServerState::Up; }));
}

KbServerState ServerPool::state(size_t i) const {
    std::lock_guard<std::mutex> lock(mu_);
    return servers_[i].state;
}

std::vector<size_t> ServerPool::due(Clock::time_point now) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<size_t> out;
    for (size_t i = 0; i < servers_.size(); ++i)
        if (servers_[i].state != KbServerState::Up && !servers_[i].trial && !servers_[i].backoff.waiting(now)) out.push_back(i);
    return out;
}

std::optional<ServerPool::Clock::time_point> ServerPool::next_due() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<Clock::time_point> next;
    for (const Server& s : servers_)
        if (s.state != KbServerState::Up && !s.trial && (!next || s.backoff.retry_at() < *next)) next = s.backoff.retry_at();
    return next;
}

void ServerPool::probe_answered(size_t i, uint64_t version, uint64_t client_version, Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mu_);
    Server& s = servers_[i];
    if (s.state == KbServerState::Up) return;  // a chunk got there first
    s.version = version;
    if (version < client_version) {
        s.state = KbServerState::Behind;  // (a Down server that came back with an older bank, too)
        s.backoff.failed(now);
    } else if (s.state == KbServerState::Behind && version == client_version) {
        s.state = KbServerState::Up;  // caught up: it never failed, nothing to try first
        s.backoff.succeeded();
    } else {
        s.trial = true;
    }
}

void ServerPool::probe_failed(size_t i, KbServerState state, const std::string& error, Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mu_);
    Server& s = servers_[i];
    if (s.state == KbServerState::Up) return;
    // A Behind server whose Info fails is down; one whose bank stopped fitting is Incompatible.
    s.state = state;
    s.trial = false;
    s.last_error = error;
    s.backoff.failed(now);
}

std::vector<KbServerStatus> ServerPool::status() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<KbServerStatus> out;
    for (const Server& s : servers_) {
        KbServerStatus st;
        st.url = s.client->endpoint().name;
        st.state = s.state;
        st.bank_version = s.version;
        st.chunks = s.chunks;
        st.failures = s.failures;
        st.last_error = s.last_error;
        out.push_back(std::move(st));
    }
    return out;
}

}  // namespace mnemo::detail
