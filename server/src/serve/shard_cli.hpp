// `mnemo-kb serve`'s options of a sharded index (docs/kb-protocol.md, "Shards"): which shard this
// node holds and how it reaches the other shards' nodes. Header-only: the argument parser is the
// program's (app/common), not the serve library's.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "app/args.hpp"
#include "bank/bank.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/kb/kb_source.hpp"
#include "serve/shard_peers.hpp"

namespace mnemo::kb {

struct ShardCli {
    std::string shard;  // "I/N"
    std::vector<std::string> peers;
    std::string token_file, ca_file;
    int32_t timeout_ms = 5000;

    void add_to(app::ArgParser& p) {
        p.string_opt("--shard", "I/N", "hold shard I of an index cut in N (the live records with id % N == I) and answer clients by "
                                       "asking the other shards' nodes (--shard-peer) and merging their top k",
                     &shard)
            .list_opt("--shard-peer", "URL", "another shard's node, grpcs://HOST:PORT or grpc://HOST:PORT (loopback only); one per other "
                                             "shard, in shard order, this node's own left out",
                      &peers)
            .string_opt("--shard-peer-token-file", "FILE", "the token this node sends its peers (a shard-scope token of theirs)", &token_file)
            .string_opt("--shard-peer-ca", "FILE", "PEM CA that signed the peers' certificates (default: the system's roots)", &ca_file)
            .int_opt("--shard-peer-timeout-ms", "N", "longest wait for a peer's answer, within the client's deadline (default 5000)",
                     &timeout_ms, 1, 3600 * 1000);
    }

    ShardSpec spec() const { return shard.empty() ? ShardSpec{} : parse_shard_spec(shard); }

    // The options given together, or a usage error that says what is missing.
    void check() const {
        const bool any_peer_option = !peers.empty() || !token_file.empty() || !ca_file.empty();
        if (shard.empty() && any_peer_option) throw app::UsageError("--shard-peer and its options need --shard I/N");
        if (!shard.empty()) {
            ShardSpec s;
            try {
                s = spec();
            } catch (const Error& e) {
                throw app::UsageError(e.what());
            }
            if (s.shards > 1 && peers.size() != s.shards - 1)
                throw app::UsageError("--shard " + s.describe() + " needs " + std::to_string(s.shards - 1) +
                                      " --shard-peer (the other shards' nodes, in shard order), got " + std::to_string(peers.size()));
            if (s.shards == 1 && !peers.empty()) throw app::UsageError("--shard 0/1 is the whole index: it has no peers");
        }
    }

    void apply(BankOpenOptions& open) const {
        const ShardSpec s = spec();
        open.shard = s.shard;
        open.shards = s.shards;
    }

    // The peers of a sharded node (nullptr when not sharded): token and CA read now, so a wrong
    // file stops the start rather than every client's call.
    std::shared_ptr<ShardPeers> connect() const {
        const ShardSpec s = spec();
        if (!s.sharded()) return nullptr;
        ShardPeerOptions o;
        o.urls = peers;
        if (!token_file.empty()) o.token = read_kb_token(token_file);
        if (!ca_file.empty()) {
            try {
                o.ca_pem = read_file_capped(ca_file, kMaxSmallFileBytes, "--shard-peer-ca");
            } catch (const std::exception& e) {
                throw Error("--shard-peer-ca: " + printable(e.what()));
            }
            if (o.ca_pem.find("-----BEGIN") == std::string::npos) throw Error("--shard-peer-ca '" + printable(ca_file) + "' is not PEM");
        }
        o.timeout = std::chrono::milliseconds(timeout_ms);
        return std::make_shared<ShardPeers>(s, std::move(o));
    }
};

}  // namespace mnemo::kb
