// `mnemo-kb build` and `add` as a library call, in a stream so that RAM does not grow with the
// corpus: read a corpus, memorize its references with a Session in batches (each batch
// checkpointed durably, so an interrupted run resumes), train the codec on a uniform sample of the
// memories (bank_codec_sample.hpp) or reuse one, then encode the checkpointed batches one at a time
// and write each segment as it fills (bank_writer.hpp). With the codec known from the start (add,
// --codec-from) each batch is encoded right after it is memorized (on a second thread, while the
// next one is memorized, when memorizing runs on a device).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "bank_codec_sample.hpp"
#include "bank_index_writer.hpp"
#include "bank_storage.hpp"
#include "compress.hpp"
#include "mnemo/error.hpp"
#include "app/corpus.hpp"

namespace mnemo {
class Session;
}

namespace mnemo::kb {

struct BankBuildOptions {
    std::shared_ptr<BankStorage> storage;
    std::string corpus;     // a folder of .txt/.md files or a .jsonl file (app/corpus.hpp)
    // Instead of `corpus` (which must then be empty): the documents themselves, as a server's
    // AddDocuments call received them. `corpus_name` names them in errors ("AddDocuments").
    std::vector<app::CorpusDocument> documents;
    std::string corpus_name;
    app::CorpusOptions corpus_options;  // links leading out of a corpus folder (--follow-external-links)
    std::string model_dir;  // the session's model folder: its tokenizer (and tokenizer files)
    bool add = false;       // add to the published version (its codec); else build a new bank
    bool replace = false;   // build: publish a new version even though one exists (--force)
    std::string codec_from; // build: a bank folder whose codec to reuse instead of training
    CompressOptions codec;  // factories, training options, FAISS threads (in/out dirs unused)
    // Build, training a codec: the number of key/value slots (vectors) it trains on, drawn
    // uniformly from the corpus; 0: default_codec_sample (2^20, more for factories whose largest
    // k-means FAISS wants fed more). A corpus with fewer valid slots trains on every one, exactly as
    // without sampling.
    size_t codec_sample = 0;
    uint64_t codec_sample_seed = kCodecSampleSeed;
    size_t batch = 64;      // references per memorize call and per checkpoint
    uint32_t segment_records = 65536;  // records per new segment: the writer holds one in RAM
    // Encode batch i on a second thread while batch i + 1 is memorized (when the codec is known
    // before memorizing: add, --codec-from). Auto: when the session's backend is not the CPU, so
    // that FAISS gets the cores memorizing on a device leaves idle; on the CPU both stages already
    // use every core, and overlapping them did not pay on 2 cores (docs/benchmarks.md, "Build
    // throughput"). Off: one after the other, on this thread.
    enum class Overlap { Auto, On, Off };
    Overlap overlap_encode = Overlap::Auto;
    // Stage ("memorize", "encode", "write"), done and total units; called often, may be empty.
    std::function<void(const std::string& stage, uint64_t done, uint64_t total)> progress;
    std::function<void(const std::string&)> note;  // one line per step; may be empty
    // Asked before each batch is memorized, and before the version is written; true stops the
    // build with BuildCancelled, publishing nothing (finished batches stay checkpointed, so the
    // same documents resume). May be empty.
    std::function<bool()> cancelled;
};

// What build_bank throws when BankBuildOptions::cancelled said stop.
class BuildCancelled : public Error {
public:
    using Error::Error;
};

struct BankBuildReport {
    uint64_t version = 0;
    uint64_t documents = 0;
    uint64_t references = 0;  // new records
    uint64_t tokens = 0;
    uint64_t total_records = 0;   // record ids of the new version, retired ones included
    uint64_t replaced_documents = 0;  // add: documents of the bank this corpus replaced
    uint64_t retired_records = 0;     // add: their records, retired by this version
    uint64_t retired_total = 0;       // retired records of the new version (before `compact`)
    uint64_t batches = 0;
    uint64_t resumed_batches = 0;  // read back from checkpoints instead of memorized
    std::string key_factory, value_factory;
    std::string keys_sha256, values_sha256;
    bool codec_trained = false;
    bool codec_resumed = false;       // trained by an interrupted run, read from its checkpoint
    uint64_t codec_sample = 0;        // the sample's size asked for (trained builds)
    uint64_t corpus_vectors = 0;      // valid key/value slots of the corpus (trained builds)
    uint64_t training_vectors = 0;    // the slots the codec trained on: min(sample, corpus)
    uint64_t segments_written = 0;    // new segments
    uint64_t record_bytes = 0, record_bytes_f32 = 0;
    uint64_t bytes_written = 0;
    CodecFit codec_fit;  // how well the codec reconstructs this run's new records (compress.hpp)
    // What the codec had on the corpus it was trained on (this build's, or the bank's it came
    // from): the manifest's fit; none for a codec of a bank built before fits were recorded.
    std::optional<CodecFitFigures> trained_fit;
    // memorize: the memorizing pass (add, --codec-from: with the encoding that overlaps it);
    // train: the codec; write: encoding the checkpoints and writing the version after training
    // (add, --codec-from: what is left after memorizing, and publishing). encode: the time spent
    // encoding and appending records, whichever thread and stage it fell in.
    double memorize_seconds = 0, train_seconds = 0, write_seconds = 0, total_seconds = 0, encode_seconds = 0;
    // The process's peak RSS (getrusage, KiB) when every record was written, before publishing
    // (whose index step reads the new version's vectors and tokens back).
    uint64_t peak_rss_before_publish_kib = 0;
    std::vector<std::string> notes;
    // The stored retrieval indexes of the new version (bank_index_writer.hpp): kIndexFlat or
    // kIndexIvfFlat, and what building them did (IVF: lists, training, recall@10).
    std::string index_kind;
    IndexWriteReport index;
    double ratio() const { return record_bytes ? static_cast<double>(record_bytes_f32) / static_cast<double>(record_bytes) : 0; }
};

// add: a corpus document whose doc_id is a live document of the bank replaces it (its records are
// retired in the new version; a replacing document without text is refused).
// Throws mnemo::Error: no memory model, a bank for another model (naming both), an existing bank
// without `replace` (build) or no bank (add), a codec that does not match its files, a corpus
// without text, too few training vectors (or a codec_sample below what the factory needs).
BankBuildReport build_bank(Session& session, const BankBuildOptions& o);

}  // namespace mnemo::kb
