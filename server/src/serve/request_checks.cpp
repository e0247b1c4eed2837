#include "serve/request_checks.hpp"

#include <cmath>

#include "bank/bank.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/memory/retrieval_settings.hpp"

namespace mnemo::kb {
namespace {

using grpc::Status;
using grpc::StatusCode;

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool same_hash(const std::string& asked, const std::string& have) {
    if (asked.size() != have.size()) return false;
    for (size_t i = 0; i < asked.size(); ++i)
        if (lower(asked[i]) != lower(have[i])) return false;
    return true;
}

bool is_hex64(const std::string& s) {
    if (s.size() != 64) return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (lower(c) >= 'a' && lower(c) <= 'f'))) return false;
    return true;
}

// Hashes and versions are echoed in errors: they are public facts, and the client needs them to
// see which side is stale. Only the first 16 characters of a hash, to keep log lines short, and
// escaped: an asked "hash" is whatever the client sent, and the error reaches the log.
std::string short_hash(const std::string& h) { return printable(h.size() > 16 ? h.substr(0, 16) : h) + (h.size() > 16 ? "..." : ""); }

// The bank version and codec a client pinned (RetrieveRequest and FetchRequest share them).
Status check_pins(uint64_t version, const std::string& key_sha, const std::string& value_sha, const BankShape& bank) {
    if (version != 0 && version != bank.version)
        return Status(StatusCode::FAILED_PRECONDITION, "bank_version " + std::to_string(version) + " was asked, the server has version " +
                                                           std::to_string(bank.version) + " (ids may have changed: call Info again)");
    if (!key_sha.empty() && !same_hash(key_sha, bank.key_codebook_sha256))
        return Status(StatusCode::FAILED_PRECONDITION, "key_codebook_sha256 " + short_hash(key_sha) + " was asked, the bank's keys use " +
                                                           short_hash(bank.key_codebook_sha256));
    if (!value_sha.empty() && !same_hash(value_sha, bank.value_codebook_sha256))
        return Status(StatusCode::FAILED_PRECONDITION, "value_codebook_sha256 " + short_hash(value_sha) +
                                                           " was asked, the bank's values use " + short_hash(bank.value_codebook_sha256));
    return Status::OK;
}

}  // namespace

BankShape shape_of(const Bank& bank) {
    BankShape s;
    s.version = bank.version();
    s.retrieval_dim = static_cast<uint32_t>(bank.model().spec.retrieval_dim);
    s.count = bank.count();
    // The call holds its bank for its whole life (kb_service.cpp), so the reference stays valid.
    if (bank.retired_count() > 0) s.retired = [&bank](uint32_t id) { return bank.retired(id); };
    s.has_tokenizer = bank.tokenizer() != nullptr;
    s.key_codebook_sha256 = bank.codec().keys.sha256;
    s.value_codebook_sha256 = bank.codec().values.sha256;
    return s;
}

Status check_retrieve(const v1::RetrieveRequest& req, const BankShape& bank, const ServeLimits& limits) {
    if (req.k() == 0 || req.k() > limits.max_k)
        return Status(StatusCode::INVALID_ARGUMENT, "k is " + std::to_string(req.k()) + "; this server answers 1.." + std::to_string(limits.max_k));
    if (!std::isfinite(req.min_relative_score()) || req.min_relative_score() < 0 || req.min_relative_score() > 1)
        return Status(StatusCode::INVALID_ARGUMENT, "min_relative_score is " + std::to_string(req.min_relative_score()) +
                                                        "; it must be in [0, 1] (a fraction of the best hit's score; 0: no cut)");
    if (req.min_references() > kMaxMinReferences)
        return Status(StatusCode::INVALID_ARGUMENT, "min_references is " + std::to_string(req.min_references()) + "; it must be in [0, " +
                                                        std::to_string(kMaxMinReferences) + "] (how many of the best hits the cut always keeps)");
    if (req.text().size() > ServeLimits::kMaxTextBytes)
        return Status(StatusCode::INVALID_ARGUMENT, "text has " + std::to_string(req.text().size()) + " bytes; this server takes at most " +
                                                        std::to_string(ServeLimits::kMaxTextBytes) + " (a chunk's text)");
    // decode_request already refused these; checked again so the checks hold for any request.
    if (!is_valid_utf8(req.text())) return Status(StatusCode::INVALID_ARGUMENT, "text is not valid UTF-8");
    if (static_cast<uint32_t>(req.filter().sources_size()) > ServeLimits::kMaxFilterSources)
        return Status(StatusCode::INVALID_ARGUMENT, "filter.sources has " + std::to_string(req.filter().sources_size()) +
                                                        " entries; this server takes at most " +
                                                        std::to_string(ServeLimits::kMaxFilterSources) + " (use source_prefix for more)");
    for (int i = 0; i < req.filter().sources_size(); ++i)
        if (!is_valid_utf8(req.filter().sources(i)))
            return Status(StatusCode::INVALID_ARGUMENT, "filter.sources[" + std::to_string(i) + "] is not valid UTF-8");
    if (!is_valid_utf8(req.filter().source_prefix())) return Status(StatusCode::INVALID_ARGUMENT, "filter.source_prefix is not valid UTF-8");
    if (req.tokens_size() > 0 && !req.text().empty())
        return Status(StatusCode::INVALID_ARGUMENT, "both tokens and text were given; send at most one of them");
    if (req.vector_size() == 0 && req.tokens_size() == 0 && req.text().empty())
        return Status(StatusCode::INVALID_ARGUMENT, "no query: give a vector, tokens or text");
    if (req.vector_size() > 0) {
        if (static_cast<uint32_t>(req.vector_size()) != bank.retrieval_dim)
            return Status(StatusCode::INVALID_ARGUMENT, "vector has " + std::to_string(req.vector_size()) + " values; the bank's retrieval_dim is " +
                                                            std::to_string(bank.retrieval_dim));
        for (int i = 0; i < req.vector_size(); ++i)
            if (!std::isfinite(req.vector(i)))
                return Status(StatusCode::INVALID_ARGUMENT, "vector[" + std::to_string(i) + "] is " +
                                                                (std::isnan(req.vector(i)) ? "NaN" : "infinite") + "; every value must be finite");
    }
    for (int i = 0; i < req.tokens_size(); ++i)
        if (req.tokens(i) < 0)
            return Status(StatusCode::INVALID_ARGUMENT, "tokens[" + std::to_string(i) + "] is " + std::to_string(req.tokens(i)) +
                                                            "; token ids are >= 0");
    if (!req.text().empty() && !bank.has_tokenizer)
        return Status(StatusCode::FAILED_PRECONDITION, "text was given but this bank holds no tokenizer; send the chunk's tokens instead");
    return check_pins(req.bank_version(), req.key_codebook_sha256(), req.value_codebook_sha256(), bank);
}

Status check_fetch(const v1::FetchRequest& req, const BankShape& bank, const ServeLimits& limits) {
    if (req.ids_size() == 0) return Status(StatusCode::INVALID_ARGUMENT, "no ids; ask for 1.." + std::to_string(limits.max_ids_per_request));
    if (static_cast<uint32_t>(req.ids_size()) > limits.max_ids_per_request)
        return Status(StatusCode::INVALID_ARGUMENT, std::to_string(req.ids_size()) + " ids; this server sends at most " +
                                                        std::to_string(limits.max_ids_per_request) + " per request");
    Status pins = check_pins(req.bank_version(), req.key_codebook_sha256(), req.value_codebook_sha256(), bank);
    if (!pins.ok()) return pins;
    for (int i = 0; i < req.ids_size(); ++i)
        if (req.ids(i) >= bank.count)
            return Status(StatusCode::NOT_FOUND, "ids[" + std::to_string(i) + "] = " + std::to_string(req.ids(i)) + " is not in bank version " +
                                                     std::to_string(bank.version) + " (" + std::to_string(bank.count) + " records)");
    if (bank.retired)
        for (int i = 0; i < req.ids_size(); ++i)
            if (bank.retired(req.ids(i)))
                return Status(StatusCode::NOT_FOUND, "ids[" + std::to_string(i) + "] = " + std::to_string(req.ids(i)) + " is retired in bank version " +
                                                         std::to_string(bank.version) + " (its document was replaced or deleted; retrieve again)");
    return Status::OK;
}

Status check_info(const v1::InfoRequest& req, const ServeLimits& limits) {
    if (static_cast<uint32_t>(req.doc_ids_size()) > limits.max_ids_per_request)
        return Status(StatusCode::INVALID_ARGUMENT, "doc_ids has " + std::to_string(req.doc_ids_size()) + " entries; this server describes at most " +
                                                        std::to_string(limits.max_ids_per_request) + " per request");
    if (req.list_documents() > ServeLimits::kMaxListDocuments)
        return Status(StatusCode::INVALID_ARGUMENT, "list_documents is " + std::to_string(req.list_documents()) + "; this server lists at most " +
                                                        std::to_string(ServeLimits::kMaxListDocuments) + " per request (page with list_after)");
    // decode_request already refused these; checked again so the checks hold for any request.
    for (int i = 0; i < req.doc_ids_size(); ++i)
        if (!is_valid_utf8(req.doc_ids(i))) return Status(StatusCode::INVALID_ARGUMENT, "doc_ids[" + std::to_string(i) + "] is not valid UTF-8");
    if (!is_valid_utf8(req.list_after())) return Status(StatusCode::INVALID_ARGUMENT, "list_after is not valid UTF-8");
    return Status::OK;
}

Status check_codebook(const v1::CodebookRequest& req, const BankShape& bank) {
    if (!is_hex64(req.sha256())) return Status(StatusCode::INVALID_ARGUMENT, "sha256 is not 64 hex digits");
    if (req.chunk_bytes() > ServeLimits::kMaxCodebookChunk)
        return Status(StatusCode::INVALID_ARGUMENT, "chunk_bytes " + std::to_string(req.chunk_bytes()) + " is above " +
                                                        std::to_string(ServeLimits::kMaxCodebookChunk));
    if (!same_hash(req.sha256(), bank.key_codebook_sha256) && !same_hash(req.sha256(), bank.value_codebook_sha256))
        return Status(StatusCode::NOT_FOUND, "no codebook " + short_hash(req.sha256()) + " in bank version " + std::to_string(bank.version) +
                                                 " (call Info for its hashes)");
    return Status::OK;
}

const char* status_code_name(grpc::StatusCode code) {
    switch (code) {
        case StatusCode::OK: return "OK";
        case StatusCode::CANCELLED: return "CANCELLED";
        case StatusCode::UNKNOWN: return "UNKNOWN";
        case StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
        case StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
        case StatusCode::NOT_FOUND: return "NOT_FOUND";
        case StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
        case StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
        case StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
        case StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
        case StatusCode::ABORTED: return "ABORTED";
        case StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
        case StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
        case StatusCode::INTERNAL: return "INTERNAL";
        case StatusCode::UNAVAILABLE: return "UNAVAILABLE";
        case StatusCode::DATA_LOSS: return "DATA_LOSS";
        case StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
        default: return "UNKNOWN";
    }
}

}  // namespace mnemo::kb
