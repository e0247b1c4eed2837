// Fuzz target: arbitrary bytes as the request stream of an AddDocuments call
// (engine/proto/mnemo_kb.proto), decoded and assembled as `mnemo-kb serve` does
// (server/src/serve/request_decode.hpp, then AddDocumentsInput in add_documents_input.hpp). The
// input is a sequence of frames, each a little-endian u16 length and that many bytes: one request
// message each. Decoding may fail, but only with INVALID_ARGUMENT and a message, agreeing with
// protobuf's own parse; so may assembling. When the whole stream is accepted, what reaches the
// memorizer must keep every promise of docs/kb-protocol.md: at most max_add_documents documents
// and max_add_bytes of text, doc_ids non-empty, bounded, without control characters and unique,
// texts valid UTF-8 and not blank, titles and sources bounded. Anything else is a bug.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <unordered_set>

#include <google/protobuf/stubs/logging.h>

#include "mnemo/io/printable.hpp"
#include "serve/add_documents_input.hpp"
#include "serve/request_decode.hpp"

namespace {

using grpc::StatusCode;
using namespace mnemo::kb;

void check_accepted(std::vector<mnemo::app::CorpusDocument> docs, const ServeLimits& limits) {
    if (docs.empty() || docs.size() > limits.max_add_documents) std::abort();
    std::unordered_set<std::string> ids;
    uint64_t bytes = 0;
    for (const auto& d : docs) {
        if (!check_doc_id(d.doc_id, "fuzz").ok()) std::abort();
        if (!ids.insert(d.doc_id).second) std::abort();
        if (!mnemo::is_valid_utf8(d.text) || d.text.find_first_not_of(" \t\r\n") == std::string::npos) std::abort();
        if (d.title.empty() || d.source.empty()) std::abort();  // defaulted to the doc_id
        if (d.title.size() > ServeLimits::kMaxTitleBytes || d.source.size() > ServeLimits::kMaxTitleBytes) std::abort();
        bytes += d.text.size();
    }
    if (bytes > limits.max_add_bytes) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
    (void)quiet;
    ServeLimits limits;
    limits.max_add_documents = 4;
    limits.max_add_bytes = 256;
    AddDocumentsInput input(limits);
    size_t at = 0;
    while (at + 2 <= size) {
        const size_t n = std::min<size_t>(data[at] | (static_cast<size_t>(data[at + 1]) << 8), size - at - 2);
        const char* msg = reinterpret_cast<const char*>(data + at + 2);
        at += 2 + n;
        v1::AddDocumentsRequest reference, m;
        const bool parsed = reference.ParseFromArray(msg, static_cast<int>(n));
        const grpc::Status s = decode_request(std::string_view(msg, n), m);
        if (s.ok() != parsed) std::abort();
        if (!s.ok()) {
            if (s.error_code() != StatusCode::INVALID_ARGUMENT || s.error_message().empty()) std::abort();
            return 0;  // the server ends the call here
        }
        const grpc::Status a = input.add(m);
        if (!a.ok()) {
            if (a.error_code() != StatusCode::INVALID_ARGUMENT || a.error_message().empty()) std::abort();
            return 0;
        }
        if (input.bytes() > limits.max_add_bytes || input.documents() > limits.max_add_documents) std::abort();
    }
    const grpc::Status f = input.finish();
    if (!f.ok()) {
        if (f.error_code() != StatusCode::INVALID_ARGUMENT || f.error_message().empty()) std::abort();
        return 0;
    }
    check_accepted(input.take(), limits);
    return 0;
}
