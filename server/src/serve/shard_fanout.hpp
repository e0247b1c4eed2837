// Both sides of a Retrieve over a sharded index (docs/kb-protocol.md, "Shards"), as the service
// runs them inside a call:
//   - the node a client called (fan_out_retrieve): asks every other shard's node for its shard's
//     per-method rankings while it ranks its own shard, checks every answer (the shard it must
//     hold, the same bank version, well-formed rankings) and merges them (shard_merge.hpp) into the
//     hits an unsharded node would answer. Never a partial answer: a shard that fails, is slow or
//     disagrees makes the call UNAVAILABLE, naming the shard, before the client's deadline.
//   - a node asked by another (answer_shard_request): its own shard's rankings, nothing more.
#pragma once

#include <grpcpp/support/status.h>

#include <vector>

#include "bank/bank.hpp"
#include "mnemo_kb.pb.h"
#include "serve/call_io.hpp"
#include "serve/serve_limits.hpp"
#include "serve/shard_peers.hpp"

namespace mnemo::kb {

// `q` is the client's query as the bank takes it (tokens already from the text), `k` its k.
// OK with *hits set, or the status the call ends with (UNAVAILABLE for a shard that failed, the
// call's own state when it was cancelled or ran out of time). Bank errors other than a stop
// propagate as exceptions, as Bank::retrieve's do.
grpc::Status fan_out_retrieve(CallIo& io, const Bank& bank, ShardPeers& peers, const BankQuery& q, uint32_t k, std::vector<BankHit>* hits);

// A shard request (RetrieveRequest.shard): checked (depth, shard count), answered into
// out->shard. QueryStopped and bank errors propagate.
grpc::Status answer_shard_request(const Bank& bank, const v1::RetrieveRequest& req, const BankQuery& q, const ServeLimits& limits,
                                  v1::RetrieveReply* out);

}  // namespace mnemo::kb
