// A bank: one published, immutable version of a knowledge server's memories (server/README.md,
// docs/kb-storage.md). What `mnemo-kb build` and `add` write and what `serve` reads:
//   - compressed memory records (mnemo/memory/memory_record.hpp), fixed stride, in append-only
//     segment files; record id = global number, segment by id range, offset by stride;
//   - the key and value codebooks (canonical bytes, by SHA-256);
//   - the retrieval index: every record's retrieval vector (searched with FAISS, inner product:
//     exact for a small bank, a stored IVF-Flat index for a large one) and BM25 over the
//     references' token ids (stored as an inverted index); hybrid = reciprocal rank fusion
//     (server/README.md, "Retrieval index");
//   - the reference texts with their title, source, document id and document version;
//   - retired records: references of documents that were replaced or deleted, still stored in
//     their segments until `compact`, never retrieved or served (bank_retired.hpp);
//   - optionally the model's tokenizer (text queries);
//   - a manifest naming all of the above with hashes, the model facts and fingerprint, counts and
//     the version; the pointer "CURRENT" names the published manifest.
// A Bank object is one version, opened once and then only read: every const method is safe from
// any number of threads at once, without a lock (the server swaps whole Bank objects on reload).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bank_documents.hpp"
#include "bank_ranking.hpp"
#include "bank_storage.hpp"
#include "mnemo/error.hpp"
#include "mnemo/memory/memory_record.hpp"

namespace mnemo {
class Tokenizer;
}

namespace mnemo::kb {

struct BankReference {
    std::string text;
    std::string title;
    std::string source;
    std::string doc_id;
    // The bank version in which this document's text was added (`build`/`add`); 0 when a bank
    // written before document versions does not say (server/README.md, "Document versions").
    uint64_t doc_version = 0;
    std::vector<int32_t> tokens;  // the model's token ids of `text` (what BM25 counts)
    // The title's token ids, which BM25 counts with `tokens` (mnemo/memory/retrieval_terms.hpp);
    // empty in banks written before they were kept (their references are counted by text alone).
    std::vector<int32_t> title_tokens;
};

struct BankQuery {
    const std::vector<float>* vector = nullptr;   // retrieval_dim floats, finite; nullptr: none
    const std::vector<int32_t>* tokens = nullptr;  // BM25 terms; nullptr or empty: none
    int32_t k = 0;                                  // >= 1
    std::vector<std::string> sources;               // filter: source equals one of these (empty: any)
    std::string source_prefix;                      // filter: source starts with this (empty: any)
    double min_relative_score = 0;                  // drop hits below this fraction of the best (0: none)
    uint32_t min_references = 0;                    // ... but never the best this many (count_near_best)
    // Asked every few thousand references while a retrieval passes over the bank; true stops it
    // with QueryStopped (the server's call ran past its deadline or was cancelled). Empty: never.
    std::function<bool()> should_stop;
};

// Thrown by Bank::retrieve when BankQuery::should_stop said so.
struct QueryStopped : Error {
    QueryStopped() : Error("the retrieval was stopped before it finished") {}
};

// How Bank::open loads a version's retrieval indexes (server/README.md, "Retrieval index").
//
// SHARDS (for `serve --shard I/N` and its fan-out; bank_ranking.hpp says how to merge): with
// shards > 1 the opened bank retrieves only the live records whose id % shards == shard: its
// vector index, BM25 postings and retrieval vectors hold only those, while texts, references,
// records and documents stay whole (reference(id), record(id) and documents() answer for every
// id; vector(id) only for the shard's own ids). Every shard scores with the WHOLE bank's BM25
// statistics (N, average length, document frequencies) and the stored IVF quantizer, so a
// record's score is the same in every shard and in the unsharded bank; merging the shards'
// vector_ranking / bm25_ranking (merge_rankings) and fusing at the caller (fuse_rankings) gives
// exactly the unsharded ranking. A shard's retrieve() itself ranks (and fuses) only its records.
struct BankOpenOptions {
    uint32_t shard = 0;   // in [0, shards)
    uint32_t shards = 1;  // >= 1; 1: the whole bank
    // Inverted lists an IVF index probes per query (more: better recall, slower); 0: the default,
    // default_nprobe(lists) (bank_vector_index.hpp: a sixteenth of the lists, at least 32). A
    // flat (exact) index ignores it.
    uint32_t nprobe = 0;
};

class Bank {
public:
    // Opens the version CURRENT names and checks it: manifest fields, every file's SHA-256 and
    // size, the codebooks, the vectors' finiteness, the stored indexes (before FAISS or the BM25
    // reader parses them). Records are checked (CRC) when read. A version without stored indexes
    // (written before them) builds them here, as every version did before.
    // mnemo::Error names the storage, the file and the field.
    static std::shared_ptr<const Bank> open(std::shared_ptr<BankStorage> storage, const BankOpenOptions& options = {});
    // The version CURRENT names now, without opening it (cheap: for reload polling).
    static uint64_t current_version(const BankStorage& storage);
    virtual ~Bank() = default;

    virtual uint64_t version() const = 0;
    virtual const MemoryFolderModel& model() const = 0;
    virtual const MemoryCodec& codec() const = 0;
    // The canonical bytes of the keys' or values' codebook with this SHA-256, or nullptr.
    virtual const std::vector<uint8_t>* codebook_bytes(const std::string& sha256) const = 0;
    // Record ids are 0..count()-1, retired ones included; count() - retired_count() are served.
    virtual uint64_t count() const = 0;
    virtual uint64_t record_bytes() const = 0;
    virtual uint32_t segments() const = 0;
    // The bank's tokenizer (for text queries), or nullptr when the bank holds none.
    virtual const Tokenizer* tokenizer() const = 0;

    // Whether record `id` is retired in this version (its document was replaced or deleted):
    // retrieve() never returns it, record() refuses it. False for ids >= count().
    virtual bool retired(uint32_t id) const = 0;
    virtual uint64_t retired_count() const = 0;
    // The live documents (doc_id, version, live record ids), sorted by doc_id.
    virtual const BankDocuments& documents() const = 0;

    // Best first, at most q.k; equal scores go to the lower id. Retired records are not in the
    // indexes at all (BM25's document count and average length are the live records'), so a
    // version ranks exactly as its compacted successor does, ids aside. Vector only: inner product.
    // Tokens only: BM25 (references sharing no term are not returned). Both: reciprocal rank
    // fusion of the two rankings, sum 1 / (60 + rank), rank from 1. Throws mnemo::Error on a
    // vector of the wrong length or with a non-finite value, QueryStopped when q.should_stop says
    // so. The source filter costs one hash lookup per reference, whatever the number of sources.
    virtual std::vector<BankHit> retrieve(const BankQuery& q) const = 0;
    // Record `id`'s bytes as stored (CRC checked here too: a damaged record is an error, never
    // served). Throws mnemo::Error when id >= count() or the record is retired.
    virtual std::string record(uint32_t id) const = 0;
    // Several records, in the order asked, with record()'s checks and errors: what a Fetch sends.
    // The bank reads them in one batch from its store (on RADOS, all in flight at once instead of
    // one round trip after another).
    virtual std::vector<std::string> records(const std::vector<uint32_t>& ids) const {
        std::vector<std::string> out;
        out.reserve(ids.size());
        for (const uint32_t id : ids) out.push_back(record(id));
        return out;
    }
    // Reference `id`'s text and document, retired ones included (compact and tools read them).
    virtual const BankReference& reference(uint32_t id) const = 0;
    // Record `id`'s retrieval vector (model().spec.retrieval_dim floats). Throws when id >= count()
    // (and, in a shard, for an id outside the shard).
    virtual const float* vector(uint32_t id) const = 0;

    // The two rankings retrieve() fuses, each on its own and before the relative cut: by inner
    // product with q.vector (q.tokens ignored), or by BM25 of q.tokens (q.vector ignored; empty
    // tokens: no hits). Best first, at most `depth`, equal scores to the lower id, q.sources and
    // q.source_prefix applied, q.k and q.min_relative_score ignored; the same errors as
    // retrieve(). A fan-out over shards merges and fuses these (bank_ranking.hpp). The default
    // asks retrieve() for one method at a time, which is the same thing for an unsharded bank.
    virtual std::vector<BankHit> vector_ranking(const BankQuery& q, size_t depth) const;
    virtual std::vector<BankHit> bm25_ranking(const BankQuery& q, size_t depth) const;
    // This bank's shard (BankOpenOptions): 0 of 1 for a whole bank.
    virtual uint32_t shard() const { return 0; }
    virtual uint32_t shards() const { return 1; }
    // The vector index in words, for logs and `serve`'s start line: "IVF-Flat, 4096 lists, nprobe
    // 32, stored" / "flat (exact), built at open: version 3 has no stored index".
    virtual std::string index_description() const { return "flat (exact)"; }
};

}  // namespace mnemo::kb
