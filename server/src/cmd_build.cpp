// `mnemo-kb build CORPUS -m MODEL_DIR -o BANK` and the command line it shares with `add`
// (build_cli.hpp): flags, session, progress display, summary.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "app/args.hpp"
#include "app/json_writer.hpp"
#include "bank/bank_build.hpp"
#include "build_cli.hpp"
#include "commands.hpp"
#include "store_cli.hpp"
#include "mnemo/error.hpp"
#include "mnemo/session/session.hpp"

namespace mnemo::kb {
namespace {

// A one-line bar with rate and ETA on a terminal; on a pipe or file, a plain line per tenth.
class Progress {
public:
    Progress() : tty_(::isatty(2) != 0) {}
    ~Progress() { end_line(); }

    void update(const std::string& stage, uint64_t done, uint64_t total) {
        const auto now = std::chrono::steady_clock::now();
        if (stage != stage_) {
            end_line();
            stage_ = stage;
            start_ = now;
            last_tenth_ = -1;
        }
        const double secs = std::chrono::duration<double>(now - start_).count();
        const double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
        const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0;
        const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1;
        if (tty_) {
            constexpr int kWidth = 30;
            const int fill = static_cast<int>(frac * kWidth);
            std::fprintf(stderr, "\r%-9s [%s%s] %llu/%llu %5.1f%%  %.1f/s  ETA %.0fs   ", stage.c_str(), std::string(fill, '#').c_str(),
                         std::string(kWidth - fill, '.').c_str(), static_cast<unsigned long long>(done),
                         static_cast<unsigned long long>(total), 100 * frac, rate, eta);
            std::fflush(stderr);
            open_ = true;
            return;
        }
        const int tenth = static_cast<int>(frac * 10);
        if (tenth == last_tenth_) return;
        last_tenth_ = tenth;
        std::fprintf(stderr, "mnemo-kb: %s %llu/%llu (%.0f%%, %.1f/s, ETA %.0f s)\n", stage.c_str(), static_cast<unsigned long long>(done),
                     static_cast<unsigned long long>(total), 100 * frac, rate, eta);
    }
    void line(const std::string& text) {
        end_line();
        std::fprintf(stderr, "mnemo-kb: %s\n", text.c_str());
    }

private:
    void end_line() {
        if (open_) std::fputc('\n', stderr);
        open_ = false;
    }
    bool tty_;
    bool open_ = false;
    std::string stage_;
    std::chrono::steady_clock::time_point start_;
    int last_tenth_ = -1;
};

std::string report_json(const std::string& bank, const BankBuildReport& r) {
    app::JsonWriter j;
    j.begin_object()
        .key("bank").value(bank)
        .key("version").value(r.version)
        .key("documents").value(r.documents)
        .key("references").value(r.references)
        .key("tokens").value(r.tokens)
        .key("total_records").value(r.total_records)
        .key("replaced_documents").value(r.replaced_documents)
        .key("retired_records").value(r.retired_records)
        .key("retired_total").value(r.retired_total)
        .key("batches").value(r.batches)
        .key("resumed_batches").value(r.resumed_batches)
        .key("codec_trained").value(r.codec_trained)
        .key("codec_resumed").value(r.codec_resumed)
        .key("codec_sample").value(r.codec_sample)
        .key("corpus_vectors").value(r.corpus_vectors)
        .key("training_vectors").value(r.training_vectors)
        .key("segments_written").value(r.segments_written)
        .key("peak_rss_before_publish_kib").value(r.peak_rss_before_publish_kib)
        .key("key_factory").value(r.key_factory)
        .key("value_factory").value(r.value_factory)
        .key("keys_sha256").value(r.keys_sha256)
        .key("values_sha256").value(r.values_sha256)
        .key("record_bytes").value(r.record_bytes)
        .key("record_bytes_f32").value(r.record_bytes_f32)
        .key("ratio").value(r.ratio())
        .key("bytes_written").value(r.bytes_written)
        .key("seconds").begin_object()
            .key("memorize").value(r.memorize_seconds)
            .key("train").value(r.train_seconds)
            .key("write").value(r.write_seconds)
            .key("encode").value(r.encode_seconds)
            .key("total").value(r.total_seconds)
            .end_object()
        .key("notes").array(r.notes);
    // The codec's reconstruction error on this run's new records, and on the records it was
    // trained with (server/README.md, "Codec fit"); null for a bank built before it was recorded.
    j.key("codec_error").begin_object()
        .key("keys").value(r.codec_fit.keys.relative_sq())
        .key("values").value(r.codec_fit.values.relative_sq())
        .end_object();
    j.key("codec_trained_error");
    if (r.trained_fit)
        j.begin_object()
            .key("keys").value(r.trained_fit->keys)
            .key("values").value(r.trained_fit->values)
            .key("records").value(r.trained_fit->records)
            .end_object();
    else
        j.null();
    // The stored retrieval index (server/README.md, "Retrieval index"); recall only for IVF.
    j.key("index").begin_object()
        .key("kind").value(r.index_kind)
        .key("lists").value(static_cast<uint64_t>(r.index.lists))
        .key("trained").value(r.index.ivf_trained)
        .key("incremental_bm25").value(r.index.incremental_bm25)
        .key("vectors_added").value(r.index.vectors_added)
        .key("seconds").value(r.index.seconds)
        .key("train_seconds").value(r.index.train_seconds);
    if (r.index.recall_at_10 >= 0) j.key("recall_at_10").value(r.index.recall_at_10).key("recall_nprobe").value(static_cast<uint64_t>(r.index.recall_nprobe));
    else j.key("recall_at_10").null();
    j.end_object().end_object();
    return j.str();
}

}  // namespace

int run_bank_command(int argc, char** argv, bool add) {
    BankBuildOptions o;
    SessionOptions so;
    std::string bank, factory;
    bool json = false, verbose = false;
    int32_t threads = 0, batch = 64, segment_records = 65536, codec_sample = 0;
    const char* name = add ? "add" : "build";
    app::ArgParser p(name,
                     add ? "mnemo-kb add BANK CORPUS -m MODEL_DIR [options]   (or: mnemo-kb add CORPUS --store LOCATION -m MODEL_DIR ...; CORPUS before the options)"
                         : "mnemo-kb build CORPUS -m MODEL_DIR -o BANK [options]",
                     add ? "Memorize CORPUS with the bank's model and codec and publish a new version of BANK holding its old "
                           "records and the new ones. A document whose id the bank already holds replaces it: the old "
                           "document's records are retired in the new version. Says how well the codec reconstructs the "
                           "new memories, and notes when markedly worse than those it was trained on (a rebuild would serve "
                           "them better). CORPUS: a folder of .txt/.md files or a .jsonl file (server/README.md)."
                         : "Memorize every reference of CORPUS with the model, train the VQ codec on the memories (or reuse "
                           "one with --codec-from), and publish a bank in BANK for `mnemo-kb serve`. CORPUS: a folder of "
                           ".txt/.md files or a .jsonl file (server/README.md). An interrupted build resumes from its "
                           "checkpoints when run again.");
    p.string_opt("-m,--model", "DIR", "the Memory3 model folder (required)", &so.model_dir)
        .string_opt("--backend", "NAME", "backend that memorizes (default: cpu)", &so.backend)
        .int_opt("--device", "I", "device index within the backend (default: 0)", &so.device, 0, 1 << 16)
        .int_opt("--threads", "N", "threads for the backend and FAISS (default: their own choice)", &threads, 1, 4096)
        .int_opt("--batch", "N", "references per memorize batch and checkpoint (default: 64)", &batch, 1, 1 << 20)
        .int_opt("--segment-records", "N", "records per new segment file; the builder holds one segment in RAM (default: 65536)",
                 &segment_records, 1, 1 << 30)
        .flag("--follow-external-links", "read linked files that lie outside the CORPUS folder (refused by default)",
              &o.corpus_options.follow_external_links)
        .flag("--json", "print the summary as one JSON object on stdout", &json)
        .flag("--verbose", "FAISS's own warnings on stderr", &verbose);
    if (!add) {
        p.string_opt("-o,--out", "BANK", "the bank folder (required; made when missing)", &bank)
            .string_opt("--factory", "F", "the codec of keys and values", &factory)
            .string_opt("--key-factory", "F", "the codec of keys (default: the paper's, adapted)", &o.codec.key_factory)
            .string_opt("--value-factory", "F", "the codec of values (default: the paper's, adapted)", &o.codec.value_factory)
            .int_opt("--codec-sample", "N",
                       "train the codec on N key/value vectors drawn uniformly from the corpus (default: 1048576, more "
                       "when the factory's largest k-means needs 39 per centroid; a smaller corpus trains on all of its vectors)",
                       &codec_sample, 1, 1 << 30)
            .string_opt("--codec-from", "BANK2", "reuse the codec of this bank (same model) instead of training one", &o.codec_from)
            .int_opt("--opq-iterations", "N", "OPQ training rounds (default: FAISS's 50)", &o.codec.train.opq_iterations, 1, 100000)
            .int_opt("--kmeans-iterations", "N", "k-means iterations (default: FAISS's 25)", &o.codec.train.kmeans_iterations, 1, 100000)
            .flag("--force", "publish a new version with only this corpus even if BANK already has one", &o.replace);
    }
    StoreCli store;
    store.add_to(p);
    // Positional arguments come first: build CORPUS, add BANK CORPUS.
    int first = 2;
    std::vector<std::string> pos;
    while (first < argc && argv[first][0] != '-' && pos.size() < (add ? 2u : 1u)) pos.emplace_back(argv[first++]);
    if (!p.parse(argc, argv, first)) return 0;
    if (add) {
        if (!store.store.empty() && pos.size() > 1) throw app::UsageError("give BANK or --store, not both");
        store.insert_bank(pos);
    }
    else if (!store.store.empty()) {
        if (!bank.empty()) throw app::UsageError("give -o/--out BANK or --store, not both");
        bank = store.store;
    }
    if (pos.size() < (add ? 2u : 1u))
        throw app::UsageError(add ? "expected BANK and CORPUS right after 'add'" : "missing CORPUS (right after 'build')");
    if (add) {
        bank = pos[0];
        o.corpus = pos[1];
    } else {
        o.corpus = pos[0];
        if (bank.empty()) throw app::UsageError("missing -o/--out BANK");
    }
    if (so.model_dir.empty()) throw app::UsageError("missing -m/--model DIR");
    if (!factory.empty()) {
        if (!o.codec.key_factory.empty() || !o.codec.value_factory.empty())
            throw app::UsageError("--factory sets both codecs; give it alone, or --key-factory/--value-factory");
        o.codec.key_factory = o.codec.value_factory = factory;
    }
    if (!o.codec_from.empty() && (!o.codec.key_factory.empty() || !o.codec.value_factory.empty()))
        throw app::UsageError("--codec-from reuses a trained codec; it takes no factory");

    so.n_threads = threads;
    o.codec.threads = threads;
    o.codec.train.quiet = !verbose;
    o.batch = static_cast<size_t>(batch);
    o.segment_records = static_cast<uint32_t>(segment_records);
    o.codec_sample = static_cast<size_t>(codec_sample);
    if (o.codec_sample && !o.codec_from.empty()) throw app::UsageError("--codec-sample sizes a codec's training; --codec-from trains none");
    o.model_dir = so.model_dir;
    o.add = add;
    o.storage = open_bank_storage(bank, store.options, /*create=*/!add);
    Progress progress;
    o.progress = [&](const std::string& stage, uint64_t done, uint64_t total) { progress.update(stage, done, total); };
    o.note = [&](const std::string& line) { progress.line(line); };

    std::unique_ptr<Session> session;
    try {
        session = Session::open(so);
    } catch (const std::exception& e) {
        if (std::string(e.what()).find(so.model_dir) != std::string::npos) throw;
        throw with_context("loading model '" + so.model_dir + "' on backend '" + so.backend + "'", e);
    }
    const BankBuildReport r = build_bank(*session, o);
    progress.line("published version " + std::to_string(r.version) + " of '" + bank + "'");
    if (json) {
        std::printf("%s\n", report_json(bank, r).c_str());
    } else {
        std::printf("%s '%s': version %llu, %llu new records (%llu documents, %llu tokens), %llu in all\n", add ? "added to" : "built",
                    bank.c_str(), static_cast<unsigned long long>(r.version), static_cast<unsigned long long>(r.references),
                    static_cast<unsigned long long>(r.documents), static_cast<unsigned long long>(r.tokens),
                    static_cast<unsigned long long>(r.total_records));
        if (r.replaced_documents)
            std::printf("  replaced %llu documents: %llu old records retired (%llu retired in all; `mnemo-kb compact` drops them)\n",
                        static_cast<unsigned long long>(r.replaced_documents), static_cast<unsigned long long>(r.retired_records),
                        static_cast<unsigned long long>(r.retired_total));
        std::printf("  codec %s / %s (%s); records %llu B vs %llu B f32 (%.2fx); %llu bytes written\n", r.key_factory.c_str(),
                    r.value_factory.c_str(), r.codec_trained ? "trained" : "reused", static_cast<unsigned long long>(r.record_bytes),
                    static_cast<unsigned long long>(r.record_bytes_f32), r.ratio(), static_cast<unsigned long long>(r.bytes_written));
        std::printf("  codec error (relative, squared) of the new records: keys %.3g, values %.3g", r.codec_fit.keys.relative_sq(),
                    r.codec_fit.values.relative_sq());
        if (r.trained_fit && !r.codec_trained)
            std::printf("; on the %llu records it was trained with: keys %.3g, values %.3g",
                        static_cast<unsigned long long>(r.trained_fit->records), r.trained_fit->keys, r.trained_fit->values);
        else if (!r.codec_trained)
            std::printf("; the bank records none for its codec's training corpus (built before it was measured)");
        std::printf("\n");
        if (r.codec_trained)
            std::printf("  codec %s on %llu of the corpus's %llu key/value vectors (sample of %llu)\n",
                        r.codec_resumed ? "read from the interrupted build's checkpoint, trained" : "trained",
                        static_cast<unsigned long long>(r.training_vectors), static_cast<unsigned long long>(r.corpus_vectors),
                        static_cast<unsigned long long>(r.codec_sample));
        std::printf("  %.2f s: memorize %.2f s (%llu of %llu batches resumed), codec %.2f s, write %.2f s (encoding %.2f s); %llu segments\n",
                    r.total_seconds, r.memorize_seconds, static_cast<unsigned long long>(r.resumed_batches),
                    static_cast<unsigned long long>(r.batches), r.train_seconds, r.write_seconds, r.encode_seconds,
                    static_cast<unsigned long long>(r.segments_written));
        if (r.index.recall_at_10 >= 0)
            std::printf("  retrieval index: IVF-Flat, %u lists (%s), recall@10 %.3f at nprobe %u; %.2f s\n", r.index.lists,
                        r.index.ivf_trained ? "trained" : "centroids reused", r.index.recall_at_10, r.index.recall_nprobe, r.index.seconds);
        else
            std::printf("  retrieval index: %s (exact); BM25 stored; %.2f s\n", r.index_kind.c_str(), r.index.seconds);
        for (const std::string& n : r.notes) std::printf("note: %s\n", n.c_str());
    }
    return 0;
}

int cmd_build(int argc, char** argv) { return run_bank_command(argc, argv, false); }

}  // namespace mnemo::kb
