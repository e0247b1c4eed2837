// The other nodes of a sharded index, as one node asks them (docs/kb-protocol.md, "Shards"): a
// gRPC channel per peer (TLS with the CA given, or plaintext to a loopback address only, as the
// device's client allows), the node's bearer token on every call, and every peer asked at once
// within one deadline. A small client of its own: the engine's (engine/src/kb) lives inside
// libmnemo and is not exported, and a node needs only this one call.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mnemo_kb.grpc.pb.h"
#include "serve/shard_merge.hpp"

namespace mnemo::kb {

struct ShardPeerOptions {
    // The other shards' nodes, grpcs://HOST:PORT or grpc://HOST:PORT (loopback only), in shard
    // order with this node's own left out: for shard 1 of 3, the nodes of shards 0 and 2.
    std::vector<std::string> urls;
    std::string token;   // sent as "authorization: Bearer <token>"; it needs the shard scope there
    std::string ca_pem;  // the CA that signed the peers' certificates (PEM); empty: the system's roots
    // The longest a node waits for a peer, however far the client's deadline is.
    std::chrono::milliseconds timeout{5000};
};

class ShardPeers {
public:
    // Checks the URLs (scheme, host, port; plaintext only to loopback) and their number (one per
    // other shard), and starts connecting. Throws mnemo::Error naming the URL and the fault.
    ShardPeers(ShardSpec self, ShardPeerOptions options);
    ~ShardPeers();

    size_t size() const { return peers_.size(); }
    // The shard peer `i` must hold, and its URL (for logs).
    ShardSpec expected(size_t i) const;
    const std::string& url(size_t i) const;
    std::chrono::milliseconds timeout() const { return options_.timeout; }

    struct Answer {
        grpc::Status status;
        v1::RetrieveReply reply;
        double ms = 0;  // how long it took
    };
    // Sends `request` to every peer at once, runs `local` on this thread meanwhile, then waits for
    // every answer. Each peer call ends by `deadline`; when `should_stop` turns true (the client
    // cancelled) the calls still running are cancelled. Returns only once every call has ended, so
    // nothing outlives it. An exception from `local` is rethrown after that.
    std::vector<Answer> ask_all(const v1::RetrieveRequest& request, std::chrono::system_clock::time_point deadline,
                                const std::function<bool()>& should_stop, const std::function<void()>& local);

private:
    struct Peer;
    ShardSpec self_;
    ShardPeerOptions options_;
    std::vector<std::unique_ptr<Peer>> peers_;
};

}  // namespace mnemo::kb
