// What one `mnemo-kb serve` accepts (flags of the same names; InfoReply reports them). Requests
// beyond a limit fail with INVALID_ARGUMENT (sizes) or RESOURCE_EXHAUSTED (concurrency); a call
// running past max_call_seconds ends with DEADLINE_EXCEEDED. docs/kb-protocol.md, "Limits".
#pragma once

#include <cstdint>

namespace mnemo::kb {

struct ServeLimits {
    uint32_t max_k = 64;                         // RetrieveRequest.k in 1..max_k
    uint32_t max_ids_per_request = 256;          // FetchRequest.ids
    uint32_t max_streams_per_client = 16;        // calls in flight per token name (any method)
    uint32_t max_receive_bytes = 4u << 20;       // a request message (gRPC's own limit)
    uint32_t max_call_seconds = 60;              // a call's time on the server, whatever its deadline
    // AddDocuments (docs/kb-protocol.md): documents and text bytes one call may send, and its own
    // time cap (it memorizes, which takes far longer than a retrieval).
    uint32_t max_add_documents = 10000;
    uint64_t max_add_bytes = 256ull << 20;
    uint32_t max_add_seconds = 3600;
    static constexpr uint32_t kMaxCodebookChunk = 4u << 20;      // CodebookRequest.chunk_bytes
    static constexpr uint32_t kDefaultCodebookChunk = 1u << 20;  // ... when it is 0
    // Request sizes whose cost grows with the request rather than the bank: a source filter is a
    // hash set of its sources, a text is tokenized whole before anything can stop it. A chunk's
    // query is 64 tokens; these leave room for any honest client.
    static constexpr uint32_t kMaxFilterSources = 1024;  // RetrieveRequest.filter.sources entries
    static constexpr uint32_t kMaxTextBytes = 64u << 10;  // RetrieveRequest.text
    // InfoRequest.list_documents: a page of a bank's documents (InfoRequest.doc_ids is bounded by
    // max_ids_per_request).
    static constexpr uint32_t kMaxListDocuments = 1024;
    // AddDocuments/DeleteDocuments: a doc_id (a file path or a JSONL id), a title or source.
    static constexpr uint32_t kMaxDocIdBytes = 1024;
    static constexpr uint32_t kMaxTitleBytes = 4096;
};

}  // namespace mnemo::kb
