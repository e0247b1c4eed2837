// The servers of one KbSource and what the client knows of each (grpc_kb_source.hpp): whether it
// takes chunks, the bank version it serves, its backoff, its calls in flight and its counters;
// and which servers a chunk tries, in what order. Thread-safe: the session's thread, the
// prefetch worker and the prober all use it. It makes no call itself.
//
// A server is Up (takes chunks), Down (a call failed), Behind (serves an older bank version than
// the client reads: a node that has not picked up the newest publish yet) or Incompatible (serves
// a bank for another model or codec). A server that is not Up is looked at again after its
// backoff (250 ms doubling to 8 s by default) by the prober, with an Info call: one that answers
// with the client's version is Up again at once if it was only Behind; one that was Down or
// Incompatible gets a trial chunk (probe_ok), and only an answered chunk makes it Up, so a server
// whose Info works but whose retrievals fail does not flap between warnings.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kb/grpc_kb_client.hpp"
#include "kb/outage.hpp"
#include "mnemo/kb/kb_source.hpp"

namespace mnemo::detail {

class ServerPool {
public:
    using Clock = std::chrono::steady_clock;

    ServerPool(std::vector<std::unique_ptr<KbClient>> clients, Outage::ms backoff_initial, Outage::ms backoff_max);

    size_t size() const { return servers_.size(); }
    // The clients never change after construction: no lock.
    KbClient& client(size_t i) const { return *servers_[i].client; }

    // The servers a chunk tries, in order: those taking chunks (Up, or with a trial earned by a
    // probe), fewest calls in flight first, ties in round-robin order (which advances per chunk);
    // then those Down or Incompatible whose backoff has passed (an inline trial, reached only when
    // the first ones fail: with every server down this is the call after the backoff). Behind
    // servers and servers backing off are left out.
    std::vector<size_t> plan(Clock::time_point now);
    // A Behind server that answered with a version, the newest first: what a chunk falls back to
    // when no server of the client's version answers (they died; the bank was rolled back).
    std::vector<std::pair<size_t, uint64_t>> behind() const;

    void begin_call(size_t i);
    void end_call(size_t i);
    // A chunk's calls on i worked against `version`: i is Up. True when it was not (it is back).
    bool answered(size_t i, uint64_t version);
    // A call on i failed (`state`: Down, or Incompatible when its bank does not fit). True when i
    // was Up (its outage starts now: the caller tells the user).
    bool failed(size_t i, KbServerState state, const std::string& error, Clock::time_point now);
    // i serves `version`, older than the client's: no chunks until it catches up.
    void lagging(size_t i, uint64_t version, Clock::time_point now);
    // Servers Up now.
    size_t up() const;
    KbServerState state(size_t i) const;

    // The prober's side. Servers not Up, with no trial pending, whose backoff has passed.
    std::vector<size_t> due(Clock::time_point now) const;
    // When the next one will be due; nullopt when none is waiting.
    std::optional<Clock::time_point> next_due() const;
    // i answered Info with `version` (its bank fits the model). `client_version`: what the client
    // reads now. Behind and at the client's version: Up. Older: still Behind. Otherwise (Down or
    // Incompatible, or newer): a trial chunk.
    void probe_answered(size_t i, uint64_t version, uint64_t client_version, Clock::time_point now);
    // Info failed, or its bank does not fit (Incompatible): backoff doubles; no new warning.
    void probe_failed(size_t i, KbServerState state, const std::string& error, Clock::time_point now);

    std::vector<KbServerStatus> status() const;

private:
    struct Server {
        Server(std::unique_ptr<KbClient> c, Outage b) : client(std::move(c)), backoff(b) {}
        std::unique_ptr<KbClient> client;
        KbServerState state = KbServerState::Up;
        Outage backoff;
        bool trial = false;        // not Up, but its last probe answered: worth a chunk
        uint64_t version = 0;      // last seen (0: not yet)
        int in_flight = 0;
        uint64_t chunks = 0, failures = 0;
        std::string last_error;
    };

    mutable std::mutex mu_;
    std::vector<Server> servers_;
    size_t next_ = 0;  // round robin
};

}  // namespace mnemo::detail
