// The knowledge server's client, `KbSource` (`mnemo-kb serve`, engine/proto/mnemo_kb.proto): a
// MemorySource that asks the server for each chunk's explicit memories, fetches the compressed
// records it does not hold yet, and hands them to the engine to decode on its device
// (docs/kb-client.md). It may be given several servers over one bank: chunks are spread over
// them, and a chunk whose server fails is asked again of another one.
//
// What it promises the session:
//   - the same memories, in the same order, as an in-process FolderMemorySource over the bank's
//     records would give (the server ranks; the client only transports and checks);
//   - the network off the critical path: prefetch() starts the next chunk's retrieval on a worker
//     thread, and an LRU cache of decoded records means a record crosses the network once;
//   - no hang and no crash: every call has a deadline; a failure (timeout, refused connection,
//     bad token, server restart) sends the chunk to the next server that answers, within the
//     chunk's deadline; only when none does it get no memories, with one warning per outage,
//     retries with exponential backoff, and a message when a server answers again;
//   - never a chunk of two bank versions: a chunk's calls go to one server and pin the version
//     the client reads, so a server serving another one refuses rather than mixing record ids.
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
    Outage,        // no server answers: chunks get no memories until one is back (detail: the error)
    Recovered,     // a call worked again after an outage: memories are back (detail: the server's URL)
    BankChanged,   // the servers serve a new bank version, same model and codec (detail: the version)
    Incompatible,  // the servers now serve a bank for another model or codec (detail: the error)
    // With several servers only: one stopped answering and the others take its chunks, so the
    // memories go on (detail: its error, which names it); then it answers again (detail: its URL).
    ServerDown,
    ServerUp,
};

struct KbSourceOptions {
    // grpcs://HOST:PORT (TLS) or grpc://HOST:PORT (plaintext: a loopback HOST only). A TLS host
    // name with several addresses is one server per address.
    std::string url;
    // Several servers over one bank (`mnemo-kb serve` nodes): all grpcs:// or all grpc://, the
    // same token and CA for each. Set this or `url`, not both.
    std::vector<std::string> urls;
    // The bearer token sent with every call (read_kb_token); empty sends none.
    std::string token;
    // PEM file of the roots that sign the server's certificate (grpcs://); empty: the system's.
    std::string ca_file;
    KbRetrieval retrieval = KbRetrieval::Vector;
    // References scoring below this fraction of the chunk's best are left out, but never the best
    // min_references (the server cuts; count_near_best in mnemo/memory/retrieval_settings.hpp). 0: none.
    double min_relative_score = 0;
    uint32_t min_references = 0;
    int32_t connect_timeout_ms = 2000;  // Info and the codebooks when connecting
    int32_t call_timeout_ms = 2000;     // every call while generating
    // A chunk's calls together, on every server it tries (failover) and for a changed bank; 0:
    // twice call_timeout_ms (a server that never answers, then a whole call on another one).
    int32_t chunk_timeout_ms = 0;
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
    Connected,     // the last chunk was answered
    Unavailable,   // no server answers (outage): chunks get no memories, retried with backoff
    Incompatible,  // the servers now serve a bank for another model or codec: no memories
};

// One server of a KbSource, as the client sees it.
enum class KbServerState {
    Up,            // takes chunks
    Down,          // its last call failed: no chunks until a probe finds it answering again
    Behind,        // answers, but serves an older bank version than the client reads (it has not
                   // picked up the newest publish yet): no chunks until it has
    Incompatible,  // serves a bank for another model or codec
};

struct KbServerStatus {
    std::string url;               // as given, or "URL (ADDRESS)" for one address of a host name
    KbServerState state = KbServerState::Up;
    uint64_t bank_version = 0;     // the version it last said it serves (0: not known yet)
    uint64_t chunks = 0;           // chunks it answered
    uint64_t failures = 0;         // calls that failed on it (each sent its chunk elsewhere)
    std::string last_error;
};

struct KbSourceStatus {
    std::string url;                 // the servers' URLs, ", " between them
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
    uint64_t outages = 0;            // times no server answered any more
    uint64_t bank_changes = 0;       // new bank versions picked up
    uint64_t failovers = 0;          // chunks answered by another server after theirs failed
    std::vector<KbServerStatus> servers;  // one per server (address), in the order given

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
        d.failovers -= before.failovers;
        if (before.servers.size() == d.servers.size())
            for (size_t i = 0; i < d.servers.size(); ++i) {
                d.servers[i].chunks -= before.servers[i].chunks;
                d.servers[i].failures -= before.servers[i].failures;
            }
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

// Connects (Info of every server at once, then both codebooks from one that serves the newest
// version, verified by SHA-256) and checks the bank against the session's model: a bank made for
// another model or with codebooks that do not decode it is refused, naming the server and the
// field. Servers that do not answer within connect_timeout_ms are left for later (a ServerDown
// warning each) as long as one does. Throws mnemo::Error when none can be reached, a server
// refuses the token, a URL is malformed or the list mixes schemes, plaintext is asked for a host
// that is not a loopback address, or this build has no gRPC.
MNEMO_API std::shared_ptr<KbSource> connect_kb(const KbSourceOptions& options, const MemoryFolderModel& model);

// Checks a list of server URLs as connect_kb will (each URL's form, one scheme for all, no server
// twice) without connecting; throws mnemo::Error naming the URLs at fault. For a program that
// wants to refuse a bad `--kb` list before it loads a model.
MNEMO_API void check_kb_urls(const std::vector<std::string>& urls);

// The token in a token file, surrounding whitespace trimmed; an empty or unreadable file throws.
MNEMO_API std::string read_kb_token(const std::string& path);

}  // namespace mnemo
