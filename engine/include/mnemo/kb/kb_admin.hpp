// The knowledge server's admin client: teach a running `mnemo-kb serve` new documents, list what it
// knows, and retire documents (engine/proto/mnemo_kb.proto: AddDocuments, DeleteDocuments, Info;
// docs/kb-protocol.md). Every call needs a token with the admin scope; the server memorizes with
// its own model (`serve --model DIR`) and publishes a new bank version that its next Retrieve uses.
//
// The calls block (run them on a worker thread in a GUI) and throw mnemo::Error in words that name
// the server and the gRPC status. No gRPC type appears here: a build without gRPC has the same
// API, and every call then throws, saying how to build the client in.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mnemo/api.hpp"

namespace mnemo {

struct KbAdminConnection {
    // grpcs://HOST:PORT (TLS) or grpc://HOST:PORT (plaintext: a loopback HOST only).
    std::string url;
    // The bearer token (read_kb_token); it must carry the admin scope.
    std::string token;
    // PEM file of the roots that sign the server's certificate (grpcs://); empty: the system's.
    std::string ca_file;
    // Deadline of a short call (Info pages, DeleteDocuments), and the longest silence tolerated
    // from the server during AddDocuments (it reports progress at least once a second while it
    // memorizes, so a longer gap means it is gone).
    int32_t timeout_ms = 30000;
};

// One document: its id (replaces an earlier document with the same id), its title and source
// (shown with each reference), and its text (UTF-8; the server splits it into references).
struct KbAddDocument {
    std::string doc_id, title, source, text;
    bool title_guessed = false;  // a plain text's first line or a file name: shown, not counted by BM25
};

struct KbAddProgress {
    uint64_t documents_sent = 0, documents_total = 0;
    uint64_t references_done = 0, references_total = 0;
    double references_per_second = 0;  // memorizing rate; 0 until known
    // "sending" (client side, documents_sent counts), then the server's "memorizing" (references_done
    // of references_total; the total is 0 until the texts are cut), "encoding", "publishing", and
    // last "done" (the result follows).
    std::string stage;
};

struct KbAddResult {
    uint64_t bank_version = 0;        // the version published (now served)
    uint64_t documents = 0;           // documents added or replaced by this call
    uint64_t references = 0;          // references memorized for them
    uint64_t replaced_documents = 0;  // documents whose doc_id was already in the bank
    uint64_t resumed_batches = 0;     // batches taken from an interrupted earlier call's checkpoints
    std::vector<std::string> notes;   // the server's notes on the new version (e.g. its codec's fit)
};

struct KbDocumentInfo {
    std::string doc_id;
    uint64_t version = 0;     // the bank version that added it
    uint32_t references = 0;  // its references in the bank
    std::string title, source;
};

// Streams the documents, then reports the server's progress until it publishes. `progress` is
// called on the calling thread (may be empty). Setting *cancel cancels the call: the server drops
// the work and keeps serving the previous version (its finished batches stay checkpointed, so
// sending the same documents again resumes); the function then throws mnemo::Error saying so.
MNEMO_API KbAddResult kb_add_documents(const KbAdminConnection& connection, const std::vector<KbAddDocument>& documents,
                                       const std::function<void(const KbAddProgress&)>& progress,
                                       const std::atomic<bool>* cancel = nullptr);

// The served bank's documents, in the server's order (pages through InfoRequest.list_documents),
// at most `max`.
MNEMO_API std::vector<KbDocumentInfo> kb_list_documents(const KbAdminConnection& connection, size_t max = 1024);

// Retires the documents (admin); returns the new bank version, now served. An unknown doc_id
// throws, naming it, and nothing is retired.
MNEMO_API uint64_t kb_delete_documents(const KbAdminConnection& connection, const std::vector<std::string>& doc_ids);

}  // namespace mnemo
