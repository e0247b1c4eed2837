// mnemo-kb-index-bench: the measurements behind the bank's retrieval index policy
// (server/README.md, "Retrieval index"), through the bank's own code (bank_vector_index.hpp,
// the writers, Bank::open).
//
//   vectors  FILE.f32 DIM N[,N...] [--queries Q.f32] [--nprobe 8,16,...]
//            for each N (the first N rows of FILE): the flat index's build time and query latency,
//            the IVF index's training, add and query time, recall@10 against the flat index at
//            each nprobe (queries: Q's rows, or leave-one-out over the index's own vectors), and
//            both indexes' bytes.
//   bank     FILE.f32 DIM N DIR [--add M]
//            writes a bank of N records whose vectors are FILE's rows (tokens generated), reports
//            the index step, then the open time with the stored indexes and of the same version
//            without them (built at open, as before), and with --add an add of M more records
//            (incremental: centroids kept).
//   open     DIR     the open time of a bank, and its BM25 blob's load time against a rebuild.
//   reindex  DIR     publishes the current version again with its indexes stored (what any writer
//            does), reporting open time before and after: for a copy of a bank written before
//            stored indexes.
// Single-threaded queries (a server runs one query per thread); FAISS's training and adding use
// the OpenMP threads it is given (OMP_NUM_THREADS).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bank/bank.hpp"
#include "bank/bank_vector_index.hpp"
#include "bank/bank_version_writer.hpp"
#include "bank/bank_writer.hpp"
#include "bank/bm25_store.hpp"
#include "fixtures/kb_synthetic_bank.hpp"
#include "mnemo/error.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::vector<uint64_t> numbers(const std::string& list) {
    std::vector<uint64_t> out;
    std::stringstream in(list);
    std::string item;
    while (std::getline(in, item, ',')) out.push_back(static_cast<uint64_t>(std::stod(item)));
    return out;
}

std::vector<float> read_rows(const std::string& path, size_t dim, uint64_t max_rows) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("cannot read '" + path + "'");
    f.seekg(0, std::ios::end);
    const uint64_t rows = std::min<uint64_t>(static_cast<uint64_t>(f.tellg()) / (dim * 4), max_rows);
    f.seekg(0);
    std::vector<float> v(rows * dim);
    f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
    return v;
}

double recall(const std::vector<kb::BankHit>& exact, const std::vector<kb::BankHit>& got) {
    size_t n = 0;
    for (const kb::BankHit& e : exact)
        for (const kb::BankHit& g : got) n += e.id == g.id;
    return exact.empty() ? 1.0 : static_cast<double>(n) / static_cast<double>(exact.size());
}

int vectors_mode(int argc, char** argv) {
    const std::string file = argv[2];
    const size_t dim = std::stoul(argv[3]);
    const std::vector<uint64_t> sizes = numbers(argv[4]);
    std::string queries_file;
    std::vector<uint64_t> nprobes = {8, 16, 32, 64};
    for (int i = 5; i + 1 < argc; i += 2) {
        if (std::string(argv[i]) == "--queries") queries_file = argv[i + 1];
        if (std::string(argv[i]) == "--nprobe") nprobes = numbers(argv[i + 1]);
    }
    const std::vector<float> all = read_rows(file, dim, *std::max_element(sizes.begin(), sizes.end()));
    const std::vector<float> queries = queries_file.empty() ? std::vector<float>{} : read_rows(queries_file, dim, 200);
    const size_t nq = queries_file.empty() ? 200 : queries.size() / dim;
    std::printf("{\"file\": \"%s\", \"dim\": %zu, \"queries\": %zu, \"query_kind\": \"%s\", \"results\": [\n", file.c_str(), dim, nq,
                queries_file.empty() ? "leave-one-out (the index's own vectors)" : "held out");
    bool first = true;
    for (uint64_t n : sizes) {
        n = std::min<uint64_t>(n, all.size() / dim);
        std::vector<uint32_t> ids(n);
        for (uint32_t i = 0; i < n; ++i) ids[i] = i;
        auto t0 = Clock::now();
        const auto flat = kb::make_flat_index(dim, ids, all.data());
        const double flat_build = since(t0);
        // The queries: held-out rows, or rows of the index itself (then each finds itself first,
        // and the recall is over the 10 others).
        std::mt19937_64 rng(99);
        std::vector<const float*> qs;
        std::vector<int64_t> self;
        for (size_t i = 0; i < nq; ++i) {
            if (!queries_file.empty()) {
                qs.push_back(queries.data() + i * dim);
                self.push_back(-1);
            } else {
                const uint64_t r = std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
                qs.push_back(all.data() + r * dim);
                self.push_back(static_cast<int64_t>(r));
            }
        }
        auto top10 = [&](const kb::VectorIndex& ix, size_t i, uint32_t nprobe) {
            bool stopped = false;
            std::vector<kb::BankHit> h = ix.search(qs[i], 11, {}, {}, nprobe, &stopped);
            std::vector<kb::BankHit> out;
            for (const kb::BankHit& x : h)
                if (static_cast<int64_t>(x.id) != self[i] && out.size() < 10) out.push_back(x);
            return out;
        };
        std::vector<std::vector<kb::BankHit>> exact(nq);
        t0 = Clock::now();
        for (size_t i = 0; i < nq; ++i) exact[i] = top10(*flat, i, 0);
        const double flat_query_ms = since(t0) * 1e3 / static_cast<double>(nq);

        const uint32_t lists = kb::ivf_lists_for(n);
        const uint64_t sample_n = kb::ivf_training_sample(lists, n);
        std::vector<float> sample(sample_n * dim);
        for (uint64_t i = 0; i < sample_n; ++i)  // a spread of rows (the writer samples randomly)
            std::memcpy(sample.data() + i * dim, all.data() + (i * n / sample_n) * dim, dim * 4);
        t0 = Clock::now();
        const auto ivf = kb::IvfIndex::train(dim, lists, sample.data(), sample_n);
        const double train = since(t0);
        t0 = Clock::now();
        ivf->add(ids.data(), all.data(), n);
        const double add = since(t0);
        const std::string blob = ivf->serialize();
        t0 = Clock::now();
        const auto parsed = kb::IvfIndex::parse(blob, dim, lists, "bench");
        const double load = since(t0);
        std::printf("%s  {\"n\": %llu, \"flat\": {\"build_s\": %.4f, \"query_ms\": %.4f, \"bytes\": %llu}, \"ivf\": {\"lists\": %u, "
                    "\"training_vectors\": %llu, \"train_s\": %.3f, \"add_s\": %.3f, \"bytes\": %zu, \"parse_s\": %.4f, \"nprobe\": [",
                    first ? "" : ",\n", static_cast<unsigned long long>(n), flat_build, flat_query_ms,
                    static_cast<unsigned long long>(n * dim * 4), lists, static_cast<unsigned long long>(sample_n), train, add, blob.size(), load);
        first = false;
        for (size_t p = 0; p < nprobes.size(); ++p) {
            const auto nprobe = static_cast<uint32_t>(nprobes[p]);
            double found = 0;
            t0 = Clock::now();
            std::vector<std::vector<kb::BankHit>> got(nq);
            for (size_t i = 0; i < nq; ++i) got[i] = top10(*parsed, i, nprobe);
            const double ms = since(t0) * 1e3 / static_cast<double>(nq);
            for (size_t i = 0; i < nq; ++i) found += recall(exact[i], got[i]);
            std::printf("%s{\"nprobe\": %u, \"query_ms\": %.4f, \"recall_at_10\": %.4f}", p ? ", " : "", nprobe, ms, found / static_cast<double>(nq));
        }
        std::printf("]}}");
        std::fflush(stdout);
    }
    std::printf("\n]}\n");
    return 0;
}

// Open time of a bank folder: the median of `runs` opens.
double open_seconds(const fs::path& dir, int runs, std::string* description) {
    std::vector<double> t;
    for (int i = 0; i < runs; ++i) {
        const auto t0 = Clock::now();
        const auto bank = kb::Bank::open(kb::open_folder_storage(dir.string(), false));
        t.push_back(since(t0));
        if (description) *description = bank->index_description();
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

fs::path without_index(const fs::path& dir, const fs::path& to) {
    fs::remove_all(to);
    fs::copy(dir, to, fs::copy_options::recursive);
    kb::BankManifest m = *kb::read_current_manifest(*kb::open_folder_storage(to.string(), false));
    m.index.reset();
    const fs::path p = to / kb::manifest_name(m.version);
    fs::remove(p);
    std::ofstream(p, std::ios::binary) << kb::manifest_to_json(m);
    return to;
}

// The stored index blobs' bytes (a flat vector index stores none: the vectors blobs are it).
uint64_t index_bytes(const kb::BankManifest& m) { return m.index ? m.index->bm25.bytes + m.index->vectors.bytes : 0; }

void print_index_report(const char* what, const kb::WrittenVersion& v, double seconds) {
    const kb::IndexWriteReport& r = v.index;
    std::printf("\"%s\": {\"seconds\": %.3f, \"index_seconds\": %.3f, \"train_seconds\": %.3f, \"recall_seconds\": %.3f, \"kind\": \"%s\", "
                "\"lists\": %u, \"ivf_trained\": %s, \"incremental_bm25\": %s, \"vectors_added\": %llu, \"recall_at_10\": %.4f, "
                "\"bm25_bytes\": %llu, \"ivf_bytes\": %llu}",
                what, seconds, r.seconds, r.train_seconds, r.recall_seconds, v.manifest.index->vectors_kind.c_str(), r.lists,
                r.ivf_trained ? "true" : "false", r.incremental_bm25 ? "true" : "false", static_cast<unsigned long long>(r.vectors_added),
                r.recall_at_10, static_cast<unsigned long long>(v.manifest.index->bm25.bytes),
                static_cast<unsigned long long>(v.manifest.index->vectors.bytes));
}

// Writes `n` records (vectors: rows `first`.. of `vectors`) as one version.
kb::WrittenVersion write_rows(kb::BankStorage& st, test::SyntheticRecords& gen, const std::vector<float>& vectors, size_t dim, uint64_t first,
                              uint64_t n, const std::string& prefix) {
    static const MemoryCodec codec{test::synthetic_codebook(0.0f), test::synthetic_codebook(1.0f)};
    kb::BankVersionSpec spec;
    spec.base = kb::read_current_manifest(st);
    spec.model = test::synthetic_model(static_cast<int32_t>(dim));
    spec.codec = &codec;
    spec.key_factory = spec.value_factory = "synthetic";
    kb::BankVersionStream out(st, std::move(spec));
    for (uint64_t i = 0; i < n; ++i) {
        const auto doc_n = static_cast<uint32_t>(i / 4);
        const kb::BankDocumentRef doc{prefix + std::to_string(doc_n), "T", doc_n % 2 ? "src/b" : "src/a", ""};
        WrittenMemory w = gen.memory(doc_n, static_cast<uint32_t>(i % 4));
        w.vector.assign(vectors.begin() + static_cast<std::ptrdiff_t>((first + i) * dim),
                        vectors.begin() + static_cast<std::ptrdiff_t>((first + i + 1) * dim));
        out.add(w, gen.tokens(), "text", doc);
    }
    return out.publish();
}

// BM25 alone: the stored blob read, hashed and parsed, against building it from the references'
// tokens (what open did before; the tokens are parsed from the texts anyway).
void bm25_timing(const kb::BankStorage& st_ref) {
    const auto st = std::shared_ptr<kb::BankStorage>(const_cast<kb::BankStorage*>(&st_ref), [](kb::BankStorage*) {});
    const auto bank = kb::Bank::open(st);
    const kb::BankManifest m = *kb::read_current_manifest(*st);
    auto t1 = Clock::now();
    const kb::Bm25Index loaded = kb::parse_bm25_blob(kb::read_checked_blob(*st, m.index->bm25, "BM25 index"), "bench");
    const double load_s = since(t1);
    t1 = Clock::now();
    kb::Bm25Index built;
    for (uint32_t id = 0; id < bank->count(); ++id)
        if (!bank->retired(id)) built.add(id, bank->reference(id).tokens);
    built.finish(static_cast<uint32_t>(bank->count()));
    const double build_s = since(t1);
    std::printf(", \"bm25_load_s\": %.3f, \"bm25_build_s\": %.3f", load_s, build_s);
}

int bank_mode(int argc, char** argv) {
    const std::string file = argv[2];
    const size_t dim = std::stoul(argv[3]);
    const uint64_t n = std::stoull(argv[4]);
    const fs::path dir = argv[5];
    uint64_t add = 0;
    for (int i = 6; i + 1 < argc; i += 2)
        if (std::string(argv[i]) == "--add") add = std::stoull(argv[i + 1]);
    const std::vector<float> vectors = read_rows(file, dim, n + add);
    if (vectors.size() < (n + add) * dim) throw Error("'" + file + "' holds fewer than N + M rows");
    fs::remove_all(dir);
    const auto st = kb::open_folder_storage(dir.string(), true);
    test::SyntheticRecords gen(static_cast<int32_t>(dim), 16, 5);
    auto t0 = Clock::now();
    const kb::WrittenVersion v = write_rows(*st, gen, vectors, dim, 0, n, "d");
    std::printf("{\"n\": %llu, \"dim\": %zu, ", static_cast<unsigned long long>(n), dim);
    print_index_report("build", v, since(t0));
    std::string stored_desc, rebuilt_desc;
    const double stored = open_seconds(dir, 3, &stored_desc);
    const fs::path old = without_index(dir, dir.string() + "-noindex");
    const double rebuilt = open_seconds(old, 3, &rebuilt_desc);
    fs::remove_all(old);
    std::printf(",\n \"open_stored_s\": %.3f, \"open_built_at_open_s\": %.3f, \"stored\": \"%s\", \"built\": \"%s\"", stored, rebuilt,
                stored_desc.c_str(), rebuilt_desc.c_str());
    bm25_timing(*st);
    if (add) {
        t0 = Clock::now();
        const kb::WrittenVersion a = write_rows(*st, gen, vectors, dim, n, add, "a");
        std::printf(",\n ");
        print_index_report("add", a, since(t0));
        std::printf(", \"open_after_add_s\": %.3f", open_seconds(dir, 3, nullptr));
    }
    std::printf("}\n");
    return 0;
}

int open_mode(char** argv) {
    const fs::path dir = argv[2];
    std::string desc;
    const double t = open_seconds(dir, 3, &desc);
    std::printf("{\"bank\": \"%s\", \"open_s\": %.3f, \"index\": \"%s\"", dir.c_str(), t, desc.c_str());
    const auto st = kb::open_folder_storage(dir.string(), false);
    if (kb::read_current_manifest(*st)->index) bm25_timing(*st);
    std::printf("}\n");
    return 0;
}

int reindex_mode(char** argv) {
    const fs::path dir = argv[2];
    std::string before_desc, after_desc;
    const double before = open_seconds(dir, 3, &before_desc);
    const auto st = kb::open_folder_storage(dir.string(), false);
    auto t0 = Clock::now();
    kb::WrittenVersion v;
    {
        kb::VersionWriter w(*st);
        v = w.publish(*w.current());
    }
    const double write = since(t0);
    const double after = open_seconds(dir, 3, &after_desc);
    std::printf("{\"bank\": \"%s\", \"open_before_s\": %.3f, \"before\": \"%s\", ", dir.c_str(), before, before_desc.c_str());
    print_index_report("reindex", v, write);
    std::printf(", \"open_after_s\": %.3f, \"after\": \"%s\", \"index_bytes\": %llu}\n", after, after_desc.c_str(),
                static_cast<unsigned long long>(index_bytes(v.manifest)));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::string mode = argc > 1 ? argv[1] : "";
        if (mode == "vectors" && argc >= 5) return vectors_mode(argc, argv);
        if (mode == "bank" && argc >= 6) return bank_mode(argc, argv);
        if (mode == "reindex" && argc >= 3) return reindex_mode(argv);
        if (mode == "open" && argc >= 3) return open_mode(argv);
        std::fprintf(stderr,
                     "usage: mnemo-kb-index-bench vectors FILE.f32 DIM N[,N...] [--queries Q.f32] [--nprobe 8,16,...]\n"
                     "       mnemo-kb-index-bench bank FILE.f32 DIM N DIR [--add M]\n"
                     "       mnemo-kb-index-bench reindex DIR   (publishes the current version again, indexes stored)\n"
                     "       mnemo-kb-index-bench open DIR      (open time; BM25 loaded vs built)\n");
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mnemo-kb-index-bench: %s\n", e.what());
        return 1;
    }
}
