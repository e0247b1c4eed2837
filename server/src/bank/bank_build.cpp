// build_bank: corpus -> references -> memories (checkpointed batches) -> codec -> records ->
// a published version, in a stream. Two shapes:
//   - the codec is known before memorizing (add: the bank's; build --codec-from): each batch is
//     memorized (or read from its checkpoint), checkpointed, and encoded into the version at once
//     (on a second thread while the next batch is memorized, when memorizing runs on a device);
//   - build trains it: every batch memorized and checkpointed, a uniform sample of their slots
//     kept (bank_codec_sample.hpp), the codec trained on the sample and checkpointed, then the
//     batches read back one at a time, encoded and written segment by segment.
// Either way RAM holds a batch, the sample, one segment and the corpus's token ids, never every
// memory. Memorizing dominates on a device and training the codec on a CPU, so both report
// progress; a re-run resumes from the checkpoints and redoes only what came after the last one.
#include "bank_build.hpp"

#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <future>

#include "bank.hpp"
#include "bank_build_steps.hpp"
#include "bank_codec_fit.hpp"
#include "bank_documents.hpp"
#include "bank_staging.hpp"
#include "bank_writer.hpp"
#include "app/corpus.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/session/session.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::kb {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The process's peak resident set so far (KiB on Linux), for the report: what the streamed stages
// needed, before publishing's index step (which holds the new version's vectors) adds its own.
uint64_t peak_rss_kib() {
    rusage u{};
    return ::getrusage(RUSAGE_SELF, &u) == 0 ? static_cast<uint64_t>(u.ru_maxrss) : 0;
}

// What load_tokenizer() reads in a model folder, so that a bank answers text queries with the
// very tokenizer its references were cut with.
std::vector<std::pair<std::string, std::string>> tokenizer_files(const std::string& model_dir) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const char* name : {"tokenizer.json", "tokenizer.model", "tokenizer_config.json", "config.json"}) {
        const fs::path p = fs::path(model_dir) / name;
        std::error_code ec;
        if (!fs::is_regular_file(p, ec)) continue;
        out.emplace_back(name, read_file_capped(p.string(), kMaxTokenizerFileBytes, "tokenizer file"));
    }
    return out;
}

std::string model_words(const MemoryFolderModel& m) {
    return "'" + printable(m.model_type, 80) + "' (fingerprint " + printable(m.fingerprint, 80) + ")";
}

// The bank must be for the session's model: the type and fingerprint first (the usual mistake,
// named with both sides), then every shape.
void check_same_model(const MemoryFolderModel& bank, const MemoryFolderModel& session, const MemoryCodec& codec,
                      const std::string& bank_where, const std::string& model_dir) {
    if (bank.model_type != session.model_type || bank.fingerprint != session.fingerprint)
        throw Error(bank_where + " holds memories of model " + model_words(bank) + ", but model '" + model_dir + "' is " +
                    model_words(session) + "; memories only fit the model that wrote them");
    check_memory_model(bank, session, &codec, bank_where);
}

// A reused codec (the bank's own, or --codec-from's) ready to encode with.
TrainedCodecs reused_codecs(const Bank& bank) {
    TrainedCodecs c;
    c.codec = bank.codec();
    c.keys = VqCodec::from_codebook(c.codec.keys);
    c.values = VqCodec::from_codebook(c.codec.values);
    return c;
}

}  // namespace

BankBuildReport build_bank(Session& session, const BankBuildOptions& o) {
    const auto t_start = Clock::now();
    if (!o.storage) throw Error("build: no bank storage");
    BankStorage& st = *o.storage;
    const std::string bank_where = "bank " + st.describe();
    auto note = [&](const std::string& line) {
        if (o.note) o.note(line);
    };
    if (!session.reads_memories())
        throw Error("model '" + o.model_dir + "' (" + printable(session.summary().model_type) + ") does not read explicit memories");
    if (o.batch == 0) throw Error("build: the batch size must be positive");
    if (o.segment_records == 0) throw Error("build: segment_records must be positive");
    const MemoryFolderModel model = memory_folder_model(session);
    const MemorySpec& spec = model.spec;
    BankBuildReport r;

    // The codec and the base version, checked before any memorizing is spent.
    std::optional<BankManifest> base;
    std::shared_ptr<const Bank> bank;  // add: the bank added to
    TrainedCodecs codecs;
    CompressReport cr;
    if (o.add) {
        if (!o.codec_from.empty()) throw Error("add: the codec is the bank's own; --codec-from is for build");
        if (!read_current_manifest(st)) throw Error(bank_where + ": no bank yet to add to (run `mnemo-kb build` first)");
        bank = Bank::open(o.storage);  // every hash checked: a damaged codec is refused here
        base = read_current_manifest(st);
        check_same_model(bank->model(), model, bank->codec(), bank_where, o.model_dir);
        codecs = reused_codecs(*bank);
        r.key_factory = base->key_factory;
        r.value_factory = base->value_factory;
        r.trained_fit = base->codec_fit;
    } else {
        if (const auto cur = read_current_manifest(st); cur && !o.replace)
            throw Error(bank_where + " already has version " + std::to_string(cur->version) +
                        " (use `mnemo-kb add` to add to it, or --force to publish a new version with only this corpus)");
        if (!o.codec_from.empty()) {
            const std::string w = "bank folder '" + o.codec_from + "'";
            const std::shared_ptr<BankStorage> from = open_folder_storage(o.codec_from, false);
            const std::shared_ptr<const Bank> other = Bank::open(from);
            const std::optional<BankManifest> m = read_current_manifest(*from);
            check_same_model(other->model(), model, other->codec(), w, o.model_dir);
            codecs = reused_codecs(*other);
            r.key_factory = m->key_factory;
            r.value_factory = m->value_factory;
            r.trained_fit = m->codec_fit;
        } else {
            codecs = make_memory_codecs(spec, o.codec, cr);  // a bad factory fails here, before memorizing
            r.key_factory = cr.keys.factory;
            r.value_factory = cr.values.factory;
            r.codec_sample = o.codec_sample ? o.codec_sample : default_codec_sample(*codecs.keys, *codecs.values);
            const size_t need = std::max(codecs.keys->min_training_vectors(), codecs.values->min_training_vectors());
            if (o.codec_sample && o.codec_sample < need)
                throw Error("a codec sample of " + std::to_string(o.codec_sample) + " vectors is too small: codecs '" + r.key_factory +
                            "' / '" + r.value_factory + "' need at least " + std::to_string(need) + " (FAISS recommends " +
                            std::to_string(default_codec_sample(*codecs.keys, *codecs.values)) + ")");
        }
    }
    const bool train = !o.add && o.codec_from.empty();

    // The corpus, cut document by document; only token ids stay.
    const std::unique_ptr<Tokenizer> tok = load_tokenizer(o.model_dir);
    if (!o.corpus.empty() && !o.documents.empty()) throw Error("build: give a corpus path or documents, not both");
    const std::string corpus_words = o.corpus.empty() ? printable(o.corpus_name.empty() ? "documents" : o.corpus_name)
                                                      : "corpus '" + printable(o.corpus) + "'";
    BuildCorpus corpus;
    if (!o.corpus.empty()) {
        std::vector<app::CorpusDocument> read = app::read_corpus(o.corpus, o.corpus_options);
        corpus = cut_build_corpus(read.size(), [&](size_t i) { return std::move(read[i]); }, *tok, spec.reference_length);
    } else {
        corpus = cut_build_corpus(o.documents.size(), [&](size_t i) { return o.documents[i]; }, *tok, spec.reference_length);
    }
    if (corpus.references.empty()) throw Error(corpus_words + " holds no text");
    r.documents = corpus.documents.size();
    r.references = corpus.references.size();
    r.tokens = corpus.tokens;
    note(corpus_words + ": " + std::to_string(r.documents) + " documents, " + std::to_string(r.references) + " references, " +
         std::to_string(r.tokens) + " tokens");
    // add: a document whose doc_id the bank holds replaces it (its live records are retired in
    // the new version). Known before any memorizing is spent, so a refusal costs nothing.
    std::vector<uint32_t> retire;
    if (o.add) {
        for (size_t d = 0; d < corpus.documents.size(); ++d) {
            const BankDocument* old = bank->documents().find(corpus.documents[d].doc_id);
            if (!old) continue;
            if (!corpus.has_text[d])
                throw Error(corpus_words + ": document '" + printable(corpus.documents[d].doc_id, 200) +
                            "' has no text, so it would replace version " + std::to_string(old->version) +
                            " of that document with nothing; use `mnemo-kb delete` to retire a document");
            retire.insert(retire.end(), old->ids.begin(), old->ids.end());
            ++r.replaced_documents;
        }
        r.retired_records = retire.size();
        if (r.replaced_documents)
            note("replacing " + std::to_string(r.replaced_documents) + " documents of version " + std::to_string(base->version) + " (" +
                 std::to_string(retire.size()) + " records retired)");
        bank.reset();  // its index and texts are not needed any more; the codec was copied
    }

    // Checkpoints: another corpus's can never be used, nor another codec's.
    const std::string key = staging_key(model.fingerprint, o.batch, corpus.references.size(),
                                        [&](size_t i) -> const std::vector<int32_t>& { return corpus.references[i].tokens; });
    const std::string codec_blob = train ? staging_codec_blob(key, r.key_factory, r.value_factory, o.codec.train.opq_iterations,
                                                              o.codec.train.kmeans_iterations, r.codec_sample, o.codec_sample_seed)
                                         : std::string();
    const std::string codec_prefix = staging_prefix(key) + "codec-";
    for (const std::string& name : st.list())
        if (name.rfind("staging-", 0) == 0 &&
            (name.rfind(staging_prefix(key), 0) != 0 || (name.rfind(codec_prefix, 0) == 0 && name != codec_blob)))
            st.remove_blob(name);
    BatchMemories batches(session, st, key, spec, corpus, o.batch);
    r.batches = batches.batches();
    auto stop_if_cancelled = [&] {
        if (o.cancelled && o.cancelled())
            throw BuildCancelled(bank_where + ": cancelled; nothing was published (" + std::to_string(r.resumed_batches) +
                                 " batches resumed, finished batches stay checkpointed)");
    };
    auto memorize = [&](size_t b) {
        bool resumed = false;
        std::vector<WrittenMemory> m = batches.get(b, &resumed);
        if (resumed) ++r.resumed_batches;
        return m;
    };
    double encode_seconds = 0;  // written by whichever thread encodes, one batch at a time
    auto encode_into = [&](BankVersionStream& stream, size_t b, std::vector<WrittenMemory>&& m) {
        const auto t0 = Clock::now();
        append_encoded_batch(stream, codecs, spec, corpus, *tok, batches.range(b), std::move(m), o.codec.threads, r.codec_fit);
        encode_seconds += since(t0);
    };

    BankVersionSpec vs;
    vs.base = base;
    vs.model = model;
    vs.codec = &codecs.codec;
    vs.key_factory = r.key_factory;
    vs.value_factory = r.value_factory;
    vs.tokenizer_files = tokenizer_files(o.model_dir);
    vs.segment_records = o.segment_records;
    vs.retire = std::move(retire);
    std::optional<BankVersionStream> stream;
    // A cancelled build removes the segments it wrote (a killed one leaves them to the next try).
    auto drop_segments = [&] {
        if (!stream) return;
        for (const std::string& name : stream->segment_blobs()) {
            try {
                st.remove_blob(name);
            } catch (const std::exception&) {
                // Left as garbage: the next attempt at this version replaces it.
            }
        }
    };
    const uint64_t n = corpus.references.size();
    // Build, training: every batch memorized (or read back) with a uniform sample of their slots
    // kept, then the codec trained on the sample, or read from an interrupted run's checkpoint.
    // The sample is freed on return, before encoding starts.
    auto train_on_a_sample = [&] {
        const auto t_mem = Clock::now();
        CodecSample sample(spec, r.codec_sample, o.codec_sample_seed);
        if (o.progress) o.progress("memorize", 0, n);
        for (size_t b = 0; b < r.batches; ++b) {
            stop_if_cancelled();
            for (const WrittenMemory& w : memorize(b)) sample.add(w.memory);
            if (o.progress) o.progress("memorize", batches.range(b).last, n);
        }
        r.memorize_seconds = since(t_mem);
        if (r.resumed_batches) note("resumed: " + std::to_string(r.resumed_batches) + " of " + std::to_string(r.batches) + " batches read from checkpoints");
        r.corpus_vectors = sample.offered();
        r.training_vectors = sample.size();
        if (sample.offered() <= sample.capacity())
            note("the corpus's " + std::to_string(sample.offered()) + " key/value vectors are no more than the codec sample of " +
                 std::to_string(sample.capacity()) + ": the codec trains on every one");
        else
            note("the codec trains on a uniform sample of " + std::to_string(sample.size()) + " of the corpus's " +
                 std::to_string(sample.offered()) + " key/value vectors");

        // The codec: from the checkpoint of an interrupted run, or trained now and checkpointed.
        const auto t_train = Clock::now();
        std::optional<MemoryCodec> saved;
        if (std::optional<std::string> bytes = st.read_blob(codec_blob)) saved = decode_staged_codec(*bytes);
        if (saved) {
            codecs.keys = VqCodec::from_codebook(saved->keys);
            codecs.values = VqCodec::from_codebook(saved->values);
            codecs.codec = std::move(*saved);
            r.codec_resumed = true;
            note("the codec read from the checkpoint of an interrupted build (trained on the same sample)");
        } else {
            if (st.exists(codec_blob)) st.remove_blob(codec_blob);  // damaged: trained again
            note("training the codec on " + std::to_string(sample.size()) + " vectors");
            train_memory_codecs_on(codecs, sample.keys().data(), sample.values().data(), sample.size(), o.codec, cr);
            st.write_blob(codec_blob, encode_staged_codec(codecs.codec));
        }
        r.notes = cr.notes;
        r.codec_trained = true;
        r.train_seconds = since(t_train);
    };
    try {
        if (!train) {
            // Each batch encoded once memorized; with `overlap`, on a second thread while the next
            // batch is memorized (its future is awaited before the next is handed over, so the
            // stream sees the batches in order and from one thread at a time).
            const auto t_mem = Clock::now();
            const bool overlap = o.overlap_encode == BankBuildOptions::Overlap::On ||
                                 (o.overlap_encode == BankBuildOptions::Overlap::Auto && session.summary().backend != "cpu");
            stream.emplace(st, std::move(vs));
            std::future<void> encoding;
            if (o.progress) o.progress("memorize", 0, n);
            for (size_t b = 0; b < r.batches; ++b) {
                stop_if_cancelled();
                std::vector<WrittenMemory> m = memorize(b);
                if (encoding.valid()) encoding.get();
                if (overlap)
                    encoding = std::async(std::launch::async, [&, b, m = std::move(m)]() mutable { encode_into(*stream, b, std::move(m)); });
                else
                    encode_into(*stream, b, std::move(m));
                if (o.progress) o.progress("memorize", batches.range(b).last, n);
            }
            if (encoding.valid()) encoding.get();
            r.memorize_seconds = since(t_mem);
            if (r.resumed_batches) note("resumed: " + std::to_string(r.resumed_batches) + " of " + std::to_string(r.batches) + " batches read from checkpoints");
            if (o.progress) o.progress("encode", n, n);
        } else {
            train_on_a_sample();
            // The batches again, one at a time: encoded, appended, each segment written when full.
            const auto t_write = Clock::now();
            stream.emplace(st, std::move(vs));
            if (o.progress) o.progress("encode", 0, n);
            for (size_t b = 0; b < r.batches; ++b) {
                stop_if_cancelled();
                bool from_checkpoint = false;
                std::vector<WrittenMemory> m = batches.get(b, &from_checkpoint);
                encode_into(*stream, b, std::move(m));
                if (o.progress) o.progress("encode", batches.range(b).last, n);
            }
            r.write_seconds = since(t_write);
        }
        stop_if_cancelled();  // the last moment nothing is published yet
    } catch (const BuildCancelled&) {
        drop_segments();
        throw;
    }
    // The codec's fit: measured now when this build trained it, else the one it came with (add:
    // the stream keeps the base's; --codec-from: the other bank's), and compared with what was
    // just encoded.
    const CodecFitFigures encoded_fit = codec_fit_figures(r.codec_fit, r.references);
    if (train) r.trained_fit = encoded_fit;
    if (!o.add) stream->set_codec_fit(r.trained_fit);
    if (!train && r.trained_fit)
        if (std::optional<std::string> drift = codec_drift_note(*r.trained_fit, encoded_fit)) r.notes.push_back(std::move(*drift));
    r.peak_rss_before_publish_kib = peak_rss_kib();
    const auto t_publish = Clock::now();
    const WrittenVersion wv = stream->publish();
    if (o.progress) o.progress("write", 1, 1);
    remove_staging(st);  // only now: a crash before publishing resumes from the checkpoints
    r.write_seconds += since(t_publish);
    r.encode_seconds = encode_seconds;
    r.keys_sha256 = codecs.codec.keys.sha256;
    r.values_sha256 = codecs.codec.values.sha256;
    r.segments_written = wv.manifest.segments.size() - (base ? base->segments.size() : 0);
    r.version = wv.manifest.version;
    r.total_records = wv.manifest.count;
    for (const IdRange& x : wv.manifest.retired) r.retired_total += x.count;
    r.record_bytes = wv.manifest.record_bytes;
    r.record_bytes_f32 = memory_record_bytes(spec, nullptr);
    r.bytes_written = wv.bytes_written;
    r.index = wv.index;
    if (wv.manifest.index) r.index_kind = wv.manifest.index->vectors_kind;
    r.total_seconds = since(t_start);
    return r;
}

}  // namespace mnemo::kb
