// Fuzz target: arbitrary bytes as a knowledge-server request (engine/proto/mnemo_kb.proto), decoded
// as `mnemo-kb serve` decodes them (server/src/serve/request_decode.hpp: a schema-less pass that
// names a non-UTF-8 string field, then protobuf's parse) and checked by the server's request checks
// (server/src/serve/request_checks.hpp) against a small bank's shape, exactly as the server does
// before a bank sees a request. The first byte's top bit says whether the bank has a tokenizer,
// the rest is the message. Decoding may fail, but only with INVALID_ARGUMENT and a message, and it
// must agree with protobuf's own parse (same verdict, same message); a decoded request must get
// either OK or one of the codes the protocol promises for that call, and an OK request must really
// be within the bank's shape and the limits (the bank relies on it). A crash, a sanitizer report
// or any other outcome is a bug.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <google/protobuf/stubs/logging.h>

#include "mnemo/io/printable.hpp"
#include "serve/request_checks.hpp"
#include "serve/request_decode.hpp"

namespace {

using grpc::StatusCode;
using namespace mnemo::kb;

BankShape fuzz_bank(bool tokenizer) {
    BankShape s;
    s.version = 3;
    s.retrieval_dim = 4;
    s.count = 100;
    s.retired = [](uint32_t id) { return id % 7 == 3; };  // some records of replaced documents
    s.has_tokenizer = tokenizer;
    s.key_codebook_sha256 = std::string(64, 'a');
    s.value_codebook_sha256 = std::string(64, 'b');
    return s;
}

void check_retrieve_once(const v1::RetrieveRequest& r, const BankShape& bank, const ServeLimits& limits) {
    const grpc::Status s = check_retrieve(r, bank, limits);
    const StatusCode c = s.error_code();
    if (c != StatusCode::OK && c != StatusCode::INVALID_ARGUMENT && c != StatusCode::FAILED_PRECONDITION) std::abort();
    if (!s.ok() && s.error_message().empty()) std::abort();
    if (!s.ok()) return;
    if (r.k() == 0 || r.k() > limits.max_k) std::abort();
    if (r.vector_size() == 0 && r.tokens_size() == 0 && r.text().empty()) std::abort();
    if (r.tokens_size() > 0 && !r.text().empty()) std::abort();
    if (!r.text().empty() && !bank.has_tokenizer) std::abort();
    if (r.vector_size() != 0 && static_cast<uint32_t>(r.vector_size()) != bank.retrieval_dim) std::abort();
    for (float v : r.vector())
        if (!std::isfinite(v)) std::abort();
    for (int32_t t : r.tokens())
        if (t < 0) std::abort();
    if (r.bank_version() != 0 && r.bank_version() != bank.version) std::abort();
    if (r.text().size() > ServeLimits::kMaxTextBytes || !mnemo::is_valid_utf8(r.text())) std::abort();
    if (static_cast<uint32_t>(r.filter().sources_size()) > ServeLimits::kMaxFilterSources) std::abort();
}

// decode_request against protobuf's own parse of the same bytes: the server's decoder refuses
// exactly what protobuf refuses (malformed, or a string field that is not UTF-8), with
// INVALID_ARGUMENT and a message, and otherwise yields the same message. Returns whether it
// decoded.
template <class Message>
bool decode_agrees(const void* data, int n, Message& out) {
    Message reference;
    const bool parsed = reference.ParseFromArray(data, n);
    const grpc::Status s = decode_request(std::string_view(static_cast<const char*>(data), static_cast<size_t>(n)), out);
    if (s.ok() != parsed) std::abort();
    if (!s.ok() && (s.error_code() != StatusCode::INVALID_ARGUMENT || s.error_message().empty())) std::abort();
    if (s.ok() && out.SerializeAsString() != reference.SerializeAsString()) std::abort();
    return s.ok();
}

void check_fetch_once(const v1::FetchRequest& r, const BankShape& bank, const ServeLimits& limits) {
    const grpc::Status s = check_fetch(r, bank, limits);
    const StatusCode c = s.error_code();
    if (c != StatusCode::OK && c != StatusCode::INVALID_ARGUMENT && c != StatusCode::FAILED_PRECONDITION && c != StatusCode::NOT_FOUND)
        std::abort();
    if (!s.ok()) return;
    if (r.ids_size() == 0 || static_cast<uint32_t>(r.ids_size()) > limits.max_ids_per_request) std::abort();
    for (uint32_t id : r.ids())
        if (id >= bank.count || bank.retired(id)) std::abort();
}

void check_info_once(const v1::InfoRequest& r, const ServeLimits& limits) {
    const grpc::Status s = check_info(r, limits);
    if (s.error_code() != StatusCode::OK && s.error_code() != StatusCode::INVALID_ARGUMENT) std::abort();
    if (!s.ok() && s.error_message().empty()) std::abort();
    if (!s.ok()) return;
    if (static_cast<uint32_t>(r.doc_ids_size()) > limits.max_ids_per_request) std::abort();
    if (r.list_documents() > ServeLimits::kMaxListDocuments) std::abort();
    for (const std::string& id : r.doc_ids())
        if (!mnemo::is_valid_utf8(id)) std::abort();
}

void check_codebook_once(const v1::CodebookRequest& r, const BankShape& bank) {
    const grpc::Status s = check_codebook(r, bank);
    const StatusCode c = s.error_code();
    if (c != StatusCode::OK && c != StatusCode::INVALID_ARGUMENT && c != StatusCode::NOT_FOUND) std::abort();
    if (s.ok() && (r.sha256().size() != 64 || r.chunk_bytes() > ServeLimits::kMaxCodebookChunk)) std::abort();
    if (status_code_name(c)[0] == '\0') std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // protobuf logs every string field that is not UTF-8 (the parse then fails, as it should).
    static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
    (void)quiet;
    if (size == 0) return 0;
    const uint8_t kind = data[0];
    const void* msg = data + 1;
    const int n = static_cast<int>(std::min<size_t>(size - 1, 1 << 20));
    ServeLimits limits;
    limits.max_k = 8;
    limits.max_ids_per_request = 16;
    const BankShape bank = fuzz_bank((kind & 0x80) != 0);
    // Every message type gets every input: a request of one type sent as another is what a
    // confused or hostile client does.
    v1::RetrieveRequest retrieve;
    if (decode_agrees(msg, n, retrieve)) check_retrieve_once(retrieve, bank, limits);
    v1::FetchRequest fetch;
    if (decode_agrees(msg, n, fetch)) check_fetch_once(fetch, bank, limits);
    v1::CodebookRequest codebook;
    if (decode_agrees(msg, n, codebook)) check_codebook_once(codebook, bank);
    v1::InfoRequest info;
    if (decode_agrees(msg, n, info)) check_info_once(info, limits);
    return 0;
}
