// The checks every request passes before the bank sees it, as pure functions of the request, the
// shape of the bank serving it and the limits: no server, no network, so the fuzz target
// (tests/fuzz/fuzz_kb_request.cpp) and the tests call them directly. Each returns OK or the exact
// status the protocol promises (engine/proto/mnemo_kb.proto, docs/kb-protocol.md): first the
// request's own faults (INVALID_ARGUMENT), then what depends on the bank's state
// (FAILED_PRECONDITION for a version or codec the client pinned, NOT_FOUND for ids and hashes it
// does not hold).
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <functional>
#include <string>

#include "mnemo_kb.pb.h"
#include "serve/serve_limits.hpp"

namespace mnemo::kb {

class Bank;

// What validation needs to know about a bank.
struct BankShape {
    uint64_t version = 0;
    uint32_t retrieval_dim = 0;
    uint64_t count = 0;  // ids are 0..count-1
    std::function<bool(uint32_t)> retired;  // ids of replaced or deleted documents; empty: none
    bool has_tokenizer = false;
    std::string key_codebook_sha256;
    std::string value_codebook_sha256;
};

BankShape shape_of(const Bank& bank);

grpc::Status check_retrieve(const v1::RetrieveRequest& req, const BankShape& bank, const ServeLimits& limits);
grpc::Status check_fetch(const v1::FetchRequest& req, const BankShape& bank, const ServeLimits& limits);
grpc::Status check_codebook(const v1::CodebookRequest& req, const BankShape& bank);
grpc::Status check_info(const v1::InfoRequest& req, const ServeLimits& limits);

// The canonical status names ("INVALID_ARGUMENT"), for logs and counters.
const char* status_code_name(grpc::StatusCode code);

}  // namespace mnemo::kb
