// An AddDocuments call's documents as they arrive (engine/proto/mnemo_kb.proto): message by
// message, each document's text reassembled from its pieces, every rule of docs/kb-protocol.md
// ("AddDocuments") checked as early as it can be, so a refused call has read no more than it had
// to and memorized nothing. Pure (no server, no network): the tests and the fuzz target
// (tests/fuzz/fuzz_kb_add_documents.cpp) feed it directly.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "app/corpus.hpp"
#include "mnemo_kb.pb.h"
#include "serve/serve_limits.hpp"

namespace mnemo::kb {

// The rules a doc_id follows in AddDocuments and DeleteDocuments: 1..kMaxDocIdBytes bytes, no
// control characters (C0, DEL). OK, or INVALID_ARGUMENT whose message starts with `where`.
grpc::Status check_doc_id(std::string_view doc_id, const std::string& where);

class AddDocumentsInput {
public:
    explicit AddDocumentsInput(const ServeLimits& limits) : limits_(limits) {}

    // The next request message. INVALID_ARGUMENT naming the document (index and doc_id) and the
    // field; after an error the input is unusable.
    grpc::Status add(const v1::AddDocumentsRequest& m);
    // The client half-closed: the last document is checked too, and the count against
    // total_documents when the client announced it.
    grpc::Status finish();

    size_t documents() const { return docs_.size(); }
    uint64_t announced() const { return announced_; }
    uint64_t bytes() const { return bytes_; }
    std::vector<app::CorpusDocument> take() { return std::move(docs_); }

private:
    grpc::Status close_document();
    std::string where(size_t index) const;

    ServeLimits limits_;
    std::vector<app::CorpusDocument> docs_;
    std::unordered_set<std::string> ids_;
    uint64_t bytes_ = 0;
    uint64_t announced_ = 0;
    bool open_ = false;  // the last document may still get pieces
};

}  // namespace mnemo::kb
