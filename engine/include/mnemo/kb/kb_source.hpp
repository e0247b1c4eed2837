// The knowledge server's client, `KbSource` (`mnemo-kb serve`, engine/proto/mnemo_kb.proto): a
// MemorySource that asks the server for each chunk's explicit memories, fetches the compressed
// records it does not hold yet, and hands them to the engine to decode on its device
// (docs/kb-client.md).
//
// What it promises the session:
//   - the same memories, in the same order, as an in-process FolderMemorySource over the bank's
//     records would give (the server ranks; the client only transports and checks);
//   - the network off the critical path: prefetch() starts the next chunk's retrieval on a worker
//     thread, and an LRU cache of decoded records means a record crosses the network once;
//   - no hang and no crash: every call has a deadline; a failure (timeout, refused connection,
//     bad token, server restart) gives that chunk no memories, one warning per outage, retries
//     with exponential backoff, and a message when the server answers again.
// The status getters are thread-safe (a GUI may poll them while the session generates).
//
// No gRPC type appears here: a build without gRPC has the same API, and connect_kb then throws,
// saying how to build the client in.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mnemo/api.hpp"
#include "mnemo/memory/explicit_memory.hpp"
#include "mnemo/memory/memory_record.hpp"

namespace mnemo {

// What a chunk's query sends: its retrieval vector (cosine), its tokens (BM25 on the server), or
// both (the server fuses the two rankings by reciprocal rank).
enum class KbRetrieval { Vector, BM25, Hybrid };
// "vector" | "bm25" | "hybrid"; anything else throws mnemo::Error.
MNEMO_API KbRetrieval kb_retrieval_from_name(const std::string& name);

// What the client's warnings are about, for a program that words them itself (a window shows a
// recovery as good news, an outage as a warning).
enum class KbEvent {
    Outage,        // calls stopped working: chunks get no memories until it is back (detail: the error)
    Recovered,     // a call worked again after an outage: memories are back
    BankChanged,   // the server serves a new bank version, same model and codec (detail: the version)
    Incompatible,  // the server now serves a bank for another model or codec (detail: the error)
};

struct KbSourceOptions {
    // grpcs://HOST:PORT (TLS) or grpc://HOST:PORT (plaintext: a loopback HOST only).
    std::string url;
    // The bearer token sent with every call (read_kb_token); empty sends none.
    std::string token;
    // PEM file of the roots that sign the server's certificate (grpcs://); empty: the system's.
    std::string ca_file;
    KbRetrieval retrieval = KbRetrieval::Vector;
    // References scoring below this fraction of the chunk's best are left out (the server cuts;
    // mnemo/memory/retrieval_settings.hpp). 0: none.
    double min_relative_score = 0;
    int32_t connect_timeout_ms = 2000;  // Info and the codebooks when connecting
    int32_t call_timeout_ms = 2000;     // every call while generating
    size_t cache_records = 4096;        // decoded records kept on the host (LRU)
    size_t max_have_ids = 512;          // cached ids sent per RetrieveMemories (most recent first)
    bool prefetch = true;               // start announced queries on a worker thread
    bool single_round_trip = true;      // RetrieveMemories; false: Retrieve, then FetchMemories
    bool texts = true;                  // ask for the references' texts (last_references)
    int32_t backoff_initial_ms = 250;   // after a failure, no call for this long,
    int32_t backoff_max_ms = 8000;      // doubling up to this
    // Warnings (an outage, a recovery, a bank change); empty: "mnemo: ..." lines on stderr.
    // Called from the session's thread or the prefetch worker, never both at once.
    std::function<void(const std::string&)> warn;
    // The same warnings as events: when set, it is called instead of `warn`, with the event and
    // its detail (the failed call's error, or the new bank version), from the same threads.
    std::function<void(KbEvent, const std::string& detail)> on_event;
};

enum class KbSourceState {
    Connected,     // the last call worked
    Unavailable,   // calls fail (outage): chunks get no memories, retried with backoff
    Incompatible,  // the server now serves a bank for another model or codec: no memories
};

struct KbSourceStatus {
    std::string url;
    KbSourceState state = KbSourceState::Connected;
    uint64_t bank_version = 0;
    std::string last_error;          // empty until a call fails
    uint64_t retrievals = 0;         // chunks asked (retrieve())
    uint64_t calls = 0;              // network calls made for chunks
    uint64_t records_fetched = 0;    // records received
    uint64_t record_bytes = 0;       // their bytes
    uint64_t reply_bytes = 0;        // every reply's bytes (records, hits, texts)
    uint64_t cache_hits = 0;         // retrieved memories already on the host
    uint64_t cache_misses = 0;       // retrieved memories fetched
    uint64_t failures = 0;           // chunks that got no memories because a call failed
    uint64_t skipped = 0;            // chunks answered empty while backing off (no call)
    uint64_t prefetches = 0;         // queries announced and started ahead
    uint64_t prefetch_hits = 0;      // retrieve() answered by a prefetched result
    uint64_t outages = 0;            // times the server stopped answering
    uint64_t bank_changes = 0;       // new bank versions picked up

    // The counters that grew since `before` (an earlier status of the same source); the state,
    // url, version and last error are this one's.
    KbSourceStatus since(const KbSourceStatus& before) const {
        KbSourceStatus d = *this;
        d.retrievals -= before.retrievals;
        d.calls -= before.calls;
        d.records_fetched -= before.records_fetched;
        d.record_bytes -= before.record_bytes;
        d.reply_bytes -= before.reply_bytes;
        d.cache_hits -= before.cache_hits;
        d.cache_misses -= before.cache_misses;
        d.failures -= before.failures;
        d.skipped -= before.skipped;
        d.prefetches -= before.prefetches;
        d.prefetch_hits -= before.prefetch_hits;
        d.outages -= before.outages;
        d.bank_changes -= before.bank_changes;
        return d;
    }
};

class MNEMO_API KbSource : public MemorySource {
public:
    // prefetches() is KbSourceOptions::prefetch.
    virtual KbSourceStatus status() const = 0;
    // The retrieved references of the last chunk retrieve() answered for sequence `seq`, best
    // first, with the text, title, source and score the server sent (empty when none, or when
    // that chunk got no memories; `chunk` is 0). RetrievalRecorder keeps them for every chunk.
    virtual std::vector<RetrievedReference> last_references(int32_t seq) const = 0;
};

// Connects (Info, then both codebooks, verified by SHA-256) and checks the bank against the
// session's model: a bank made for another model or with codebooks that do not decode it is
// refused, naming the server and the field. Throws mnemo::Error when the server cannot be
// reached within connect_timeout_ms, the URL is malformed, plaintext is asked for a host that is
// not a loopback address, or this build has no gRPC.
MNEMO_API std::shared_ptr<KbSource> connect_kb(const KbSourceOptions& options, const MemoryFolderModel& model);

// The token in a token file, surrounding whitespace trimmed; an empty or unreadable file throws.
MNEMO_API std::string read_kb_token(const std::string& path);

}  // namespace mnemo
