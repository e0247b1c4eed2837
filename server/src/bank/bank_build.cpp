// build_bank: corpus -> references -> memories (checkpointed batches) -> codec -> records ->
// a published version. Memorizing dominates on a device and training the codec on a CPU, so both
// report progress; everything after the last checkpoint is quick and simply redone on a re-run.
#include "bank_build.hpp"

#include <chrono>
#include <filesystem>

#include "bank.hpp"
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

double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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

}  // namespace

BankBuildReport build_bank(Session& session, const BankBuildOptions& o) {
    const auto t_start = std::chrono::steady_clock::now();
    if (!o.storage) throw Error("build: no bank storage");
    BankStorage& st = *o.storage;
    const std::string bank_where = "bank " + st.describe();
    auto note = [&](const std::string& line) {
        if (o.note) o.note(line);
    };
    if (!session.reads_memories())
        throw Error("model '" + o.model_dir + "' (" + printable(session.summary().model_type) + ") does not read explicit memories");
    if (o.batch == 0) throw Error("build: the batch size must be positive");
    const MemoryFolderModel model = memory_folder_model(session);
    const MemorySpec& spec = model.spec;

    // The codec and the base version, checked before any memorizing is spent.
    std::optional<BankManifest> base;
    std::shared_ptr<const Bank> reuse;  // the bank whose codec is reused
    std::optional<BankManifest> reuse_manifest;  // its manifest (the factories' names)
    if (o.add) {
        if (!o.codec_from.empty()) throw Error("add: the codec is the bank's own; --codec-from is for build");
        if (!read_current_manifest(st)) throw Error(bank_where + ": no bank yet to add to (run `mnemo-kb build` first)");
        reuse = Bank::open(o.storage);  // every hash checked: a damaged codec is refused here
        base = read_current_manifest(st);
        reuse_manifest = base;
        check_same_model(reuse->model(), model, reuse->codec(), bank_where, o.model_dir);
    } else {
        if (const auto cur = read_current_manifest(st); cur && !o.replace)
            throw Error(bank_where + " already has version " + std::to_string(cur->version) +
                        " (use `mnemo-kb add` to add to it, or --force to publish a new version with only this corpus)");
        if (!o.codec_from.empty()) {
            const std::string w = "bank folder '" + o.codec_from + "'";
            const std::shared_ptr<BankStorage> from = open_folder_storage(o.codec_from, false);
            reuse = Bank::open(from);
            reuse_manifest = read_current_manifest(*from);
            check_same_model(reuse->model(), model, reuse->codec(), w, o.model_dir);
        }
    }

    const std::unique_ptr<Tokenizer> tok = load_tokenizer(o.model_dir);
    if (!o.corpus.empty() && !o.documents.empty()) throw Error("build: give a corpus path or documents, not both");
    const std::string corpus_words = o.corpus.empty() ? printable(o.corpus_name.empty() ? "documents" : o.corpus_name)
                                                      : "corpus '" + printable(o.corpus) + "'";
    std::vector<app::CorpusDocument> read;  // a corpus path's documents; given documents are not copied
    if (!o.corpus.empty()) read = app::read_corpus(o.corpus, o.corpus_options);
    const std::vector<app::CorpusDocument>& docs = o.corpus.empty() ? o.documents : read;
    const std::vector<app::CorpusReference> refs = app::cut_references(docs, *tok, spec.reference_length);
    if (refs.empty()) throw Error(corpus_words + " holds no text");
    BankBuildReport r;
    r.documents = docs.size();
    r.references = refs.size();
    std::vector<std::vector<int32_t>> tokens;
    tokens.reserve(refs.size());
    for (const app::CorpusReference& ref : refs) {
        tokens.push_back(ref.tokens);
        r.tokens += ref.tokens.size();
    }
    note(corpus_words + ": " + std::to_string(docs.size()) + " documents, " + std::to_string(refs.size()) + " references, " +
         std::to_string(r.tokens) + " tokens");
    // add: a document whose doc_id the bank holds replaces it (its live records are retired in
    // the new version). Known before any memorizing is spent, so a refusal costs nothing.
    std::vector<uint32_t> retire;
    if (o.add) {
        std::vector<bool> has_text(docs.size(), false);
        for (const app::CorpusReference& ref : refs) has_text[ref.document] = true;
        for (size_t d = 0; d < docs.size(); ++d) {
            const BankDocument* old = reuse->documents().find(docs[d].doc_id);
            if (!old) continue;
            if (!has_text[d])
                throw Error(corpus_words + ": document '" + printable(docs[d].doc_id, 200) +
                            "' has no text, so it would replace version " + std::to_string(old->version) +
                            " of that document with nothing; use `mnemo-kb delete` to retire a document");
            retire.insert(retire.end(), old->ids.begin(), old->ids.end());
            ++r.replaced_documents;
        }
        r.retired_records = retire.size();
        if (r.replaced_documents)
            note("replacing " + std::to_string(r.replaced_documents) + " documents of version " + std::to_string(reuse->version()) + " (" +
                 std::to_string(retire.size()) + " records retired)");
    }

    // Memorize, batch by batch, each checkpointed before the next starts.
    const std::string key = staging_key(model.fingerprint, o.batch, tokens);
    for (const std::string& name : st.list())  // another corpus's checkpoints can never be used
        if (name.rfind("staging-", 0) == 0 && name.rfind(staging_prefix(key), 0) != 0) st.remove_blob(name);
    const auto t_mem = std::chrono::steady_clock::now();
    std::vector<WrittenMemory> memories;
    memories.reserve(refs.size());
    r.batches = (refs.size() + o.batch - 1) / o.batch;
    if (o.progress) o.progress("memorize", 0, refs.size());
    auto stop_if_cancelled = [&] {
        if (o.cancelled && o.cancelled())
            throw BuildCancelled(bank_where + ": cancelled; nothing was published (" + std::to_string(r.resumed_batches) +
                                 " batches resumed, finished batches stay checkpointed)");
    };
    for (size_t b = 0; b < r.batches; ++b) {
        stop_if_cancelled();
        const size_t first = b * o.batch, last = std::min(refs.size(), first + o.batch);
        const std::string blob = staging_blob(key, b);
        std::optional<std::vector<WrittenMemory>> batch;
        if (std::optional<std::string> bytes = st.read_blob(blob)) {
            batch = decode_staged_batch(*bytes, spec, last - first);
            if (batch) ++r.resumed_batches;
            else st.remove_blob(blob);  // damaged: memorized again
        }
        if (!batch) {
            batch = session.write_memories(std::vector<std::vector<int32_t>>(tokens.begin() + static_cast<long>(first),
                                                                              tokens.begin() + static_cast<long>(last)));
            if (batch->size() != last - first)
                throw Error("the session wrote " + std::to_string(batch->size()) + " memories for " + std::to_string(last - first) + " references");
            st.write_blob(blob, encode_staged_batch(*batch, spec));
        }
        for (WrittenMemory& w : *batch) memories.push_back(std::move(w));
        if (o.progress) o.progress("memorize", last, refs.size());
    }
    r.memorize_seconds = since(t_mem);
    if (r.resumed_batches) note("resumed: " + std::to_string(r.resumed_batches) + " of " + std::to_string(r.batches) + " batches read from checkpoints");

    // The codec: the bank's own (add), another bank's (--codec-from), or trained on these memories.
    const auto t_train = std::chrono::steady_clock::now();
    TrainedCodecs codecs;
    if (reuse) {
        codecs.codec = reuse->codec();
        codecs.keys = VqCodec::from_codebook(codecs.codec.keys);
        codecs.values = VqCodec::from_codebook(codecs.codec.values);
        r.key_factory = reuse_manifest->key_factory;
        r.value_factory = reuse_manifest->value_factory;
    } else {
        note("training the codec on " + std::to_string(memories.size()) + " memories");
        CompressReport cr;
        codecs = train_memory_codecs(memories, spec, o.codec, cr);
        r.key_factory = cr.keys.factory;
        r.value_factory = cr.values.factory;
        r.notes = cr.notes;
        r.codec_trained = true;
    }
    r.train_seconds = since(t_train);
    r.keys_sha256 = codecs.codec.keys.sha256;
    r.values_sha256 = codecs.codec.values.sha256;

    // Encode and write. Ids continue the base version's.
    const auto t_write = std::chrono::steady_clock::now();
    if (o.progress) o.progress("encode", 0, memories.size());
    NewBankRecords rec;
    rec.memories = encode_memories(std::move(memories), spec, *codecs.keys, *codecs.values, codecs.codec);
    if (o.progress) o.progress("encode", rec.memories.size(), rec.memories.size());
    std::vector<BankDocumentRef> doc_refs;
    doc_refs.reserve(docs.size());
    for (const app::CorpusDocument& d : docs) doc_refs.push_back({d.doc_id, d.title, d.source, d.metadata_json});
    for (const app::CorpusReference& ref : refs) {
        rec.tokens.push_back(ref.tokens);
        rec.texts.push_back(ref.text);
        rec.documents.push_back(&doc_refs[ref.document]);
    }
    BankVersionSpec vs;
    vs.base = base;
    vs.model = model;
    vs.codec = &codecs.codec;
    vs.key_factory = r.key_factory;
    vs.value_factory = r.value_factory;
    vs.tokenizer_files = tokenizer_files(o.model_dir);
    vs.segment_records = o.segment_records;
    vs.retire = std::move(retire);
    stop_if_cancelled();  // the last moment nothing is written yet
    const WrittenVersion wv = write_bank_version(st, vs, rec);
    if (o.progress) o.progress("write", 1, 1);
    remove_staging(st);  // only now: a crash before publishing resumes from the checkpoints
    r.write_seconds = since(t_write);

    r.version = wv.manifest.version;
    r.total_records = wv.manifest.count;
    for (const IdRange& x : wv.manifest.retired) r.retired_total += x.count;
    r.record_bytes = wv.manifest.record_bytes;
    r.record_bytes_f32 = memory_record_bytes(spec, nullptr);
    r.bytes_written = wv.bytes_written;
    r.total_seconds = since(t_start);
    return r;
}

}  // namespace mnemo::kb
