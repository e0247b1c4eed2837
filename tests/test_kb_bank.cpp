// The knowledge server's bank (server/src/bank): one bank built once per suite from a generated
// corpus with the tiny memory3 model that has a tokenizer, then read back — records equal to an
// independent encoding of the same memories, retrieval equal to a memory folder of the same
// memories (vector and BM25), hybrid fusion, filters — and the ways it can go wrong: another
// model, damaged records, bad manifests, add, and mnemo-kb processes killed mid-build.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <unordered_map>

#include "bank/bank.hpp"
#include "bank/bank_build.hpp"
#include "bank/bank_format.hpp"
#include "app/corpus.hpp"
#include "bank/sha256_hex.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "model_test_util.hpp"
#include "process_util.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using mnemo::testing::shell_quote;

namespace {

const std::string kFactory = "OPQ4_16,Residual2x6,PQ4x5";  // as test_kb_compress.cpp: quick to train

std::string bpe_model() { return test::model_dir("memory3-tiny-bpe"); }

std::unique_ptr<Session> open_session(const std::string& dir) { return test::open_model(dir, 128); }

// Documents of random words; half under news/, half under wiki/ (for the source filters).
void write_corpus(const fs::path& dir, int docs, unsigned seed) {
    static const char* words[] = {"alpha", "beta",  "gamma", "delta", "river", "mountain", "city",  "ocean", "forest", "paper",
                                  "engine", "memory", "bank", "light", "stone", "cloud",    "music", "garden", "winter", "summer"};
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> word(0, 19), len(5, 14);
    for (int d = 0; d < docs; ++d) {
        const fs::path f = dir / (d % 2 ? "news" : "wiki") / ("doc" + std::to_string(d) + ".txt");
        fs::create_directories(f.parent_path());
        std::ofstream out(f);
        out << "# Title " << d << "\n\n";
        for (int p = 0; p < 5; ++p) {
            for (int w = len(rng); w > 0; --w) out << words[word(rng)] << (w > 1 ? " " : ".\n\n");
        }
    }
}

kb::BankBuildOptions small_build(const fs::path& bank, const std::string& corpus) {
    kb::BankBuildOptions o;
    o.storage = kb::open_folder_storage(bank.string(), true);
    o.corpus = corpus;
    o.model_dir = bpe_model();
    o.codec.key_factory = o.codec.value_factory = kFactory;
    o.codec.train.opq_iterations = 3;
    o.codec.train.kmeans_iterations = 8;
    o.codec.threads = 1;
    o.batch = 16;
    return o;
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
    try {
        f();
        ADD_FAILURE() << "no error; expected one mentioning '" << needles.front() << "'";
    } catch (const std::exception& e) {
        for (const std::string& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
}

std::shared_ptr<const kb::Bank> open_bank(const fs::path& dir) { return kb::Bank::open(kb::open_folder_storage(dir.string(), false)); }

// Every record of a bank reads back with a good CRC.
void expect_all_records_good(const kb::Bank& b) {
    for (uint32_t i = 0; i < b.count(); ++i) EXPECT_NO_THROW(b.record(i)) << "record " << i;
}

class KbBank : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        root_ = new fs::path(fs::temp_directory_path() / ("mnemo-kb-bank-test-" + std::to_string(::getpid())));
        fs::remove_all(*root_);
        fs::create_directories(*root_ / "corpus");
        write_corpus(*root_ / "corpus", 12, 3);
        session_ = open_session(bpe_model()).release();
        report_ = new kb::BankBuildReport(kb::build_bank(*session_, small_build(bank_dir(), corpus_dir())));
        bank_ = new std::shared_ptr<const kb::Bank>(open_bank(bank_dir()));

        // The same references memorized again and encoded with the bank's codec, independently
        // of the builder: what every record must be, and a memory folder to compare retrieval with.
        const auto tok = load_tokenizer(bpe_model());
        const MemoryFolderModel model = memory_folder_model(*session_);
        const auto refs = app::cut_references(app::read_corpus(corpus_dir()), *tok, model.spec.reference_length);
        std::vector<std::vector<int32_t>> tokens;
        std::vector<MemoryReference> meta;
        for (const auto& r : refs) {
            tokens.push_back(r.tokens);
            meta.push_back({r.tokens, r.text, {}, {}, {}, r.title_tokens});  // the titles counted as the bank counts them
        }
        const kb::Bank& b = **bank_;
        auto kc = kb::VqCodec::from_codebook(b.codec().keys);
        auto vc = kb::VqCodec::from_codebook(b.codec().values);
        encoded_ = new std::vector<WrittenMemory>(kb::encode_memories(session_->write_memories(tokens), model.spec, *kc, *vc, b.codec()));
        for (size_t i = 0; i < encoded_->size(); ++i) (*encoded_)[i].memory.id = static_cast<uint32_t>(i);
        write_memory_folder(folder_dir().string(), model, *encoded_, meta, false, &b.codec());
        model_ = new MemoryFolderModel(model);
    }
    static void TearDownTestSuite() {
        fs::remove_all(*root_);
        delete bank_;
        delete report_;
        delete encoded_;
        delete model_;
        delete session_;
        delete root_;
    }
    static fs::path bank_dir() { return *root_ / "bank"; }
    static std::string corpus_dir() { return (*root_ / "corpus").string(); }
    static fs::path folder_dir() { return *root_ / "folder"; }
    // A copy of the suite's bank to change.
    static fs::path copy_bank(const std::string& name) {
        const fs::path to = *root_ / name;
        fs::remove_all(to);
        fs::copy(bank_dir(), to, fs::copy_options::recursive);
        return to;
    }

    static inline fs::path* root_ = nullptr;
    static inline Session* session_ = nullptr;
    static inline kb::BankBuildReport* report_ = nullptr;
    static inline std::shared_ptr<const kb::Bank>* bank_ = nullptr;
    static inline std::vector<WrittenMemory>* encoded_ = nullptr;
    static inline MemoryFolderModel* model_ = nullptr;
};

TEST_F(KbBank, BuildReportsAndPublishesVersionOne) {
    const kb::BankBuildReport& r = *report_;
    EXPECT_EQ(r.version, 1u);
    EXPECT_EQ(r.documents, 12u);
    EXPECT_GT(r.references, 60u);
    EXPECT_EQ(r.total_records, r.references);
    EXPECT_TRUE(r.codec_trained);
    EXPECT_EQ(r.key_factory, kFactory);
    EXPECT_EQ(r.resumed_batches, 0u);
    EXPECT_GT(r.ratio(), 1.0);
    const kb::Bank& b = **bank_;
    EXPECT_EQ(b.version(), 1u);
    EXPECT_EQ(b.count(), r.references);
    EXPECT_EQ(b.segments(), 1u);
    EXPECT_EQ(b.record_bytes(), memory_record_bytes(model_->spec, &b.codec()));
    EXPECT_EQ(kb::Bank::current_version(*kb::open_folder_storage(bank_dir().string(), false)), 1u);
    ASSERT_NE(b.codebook_bytes(b.codec().keys.sha256), nullptr);
    EXPECT_EQ(kb::sha256_hex(std::string(b.codebook_bytes(b.codec().keys.sha256)->begin(), b.codebook_bytes(b.codec().keys.sha256)->end())),
              b.codec().keys.sha256);
    EXPECT_EQ(b.codebook_bytes(std::string(64, '0')), nullptr);
    for (const auto& e : fs::directory_iterator(bank_dir()))
        EXPECT_NE(e.path().filename().string().rfind("staging-", 0), 0u) << "a finished build leaves no checkpoint";
    // References: title from the first line, source and doc_id the relative path.
    const kb::BankReference& first = b.reference(0);
    EXPECT_EQ(first.source, "news/doc1.txt");
    EXPECT_EQ(first.doc_id, "news/doc1.txt");
    EXPECT_EQ(first.title, "Title 1");
    ASSERT_NE(b.tokenizer(), nullptr);
    EXPECT_EQ(b.tokenizer()->encode(first.text, false), first.tokens);
}

TEST_F(KbBank, RecordsAreTheEncodedMemories) {
    const kb::Bank& b = **bank_;
    ASSERT_EQ(b.count(), encoded_->size());
    for (uint32_t i = 0; i < b.count(); ++i) {
        const std::string rec = b.record(i);
        EXPECT_EQ(rec, encode_memory_record((*encoded_)[i].memory, i, model_->spec, &b.codec())) << "record " << i;
        const auto m = decode_memory_record(reinterpret_cast<const uint8_t*>(rec.data()), rec.size(), i, model_->spec, &b.codec(), "test");
        EXPECT_EQ(m->key_codes, (*encoded_)[i].memory.key_codes);
        EXPECT_EQ(m->value_codes, (*encoded_)[i].memory.value_codes);
        EXPECT_EQ(m->indices, (*encoded_)[i].memory.indices);
    }
    expect_error([&] { b.record(static_cast<uint32_t>(b.count())); }, {"no record"});
}

TEST_F(KbBank, RetrievalRanksLikeAMemoryFolder) {
    const kb::Bank& b = **bank_;
    FolderMemorySource vec(folder_dir().string(), *model_, RetrievalMode::Vector);
    FolderMemorySource bm25(folder_dir().string(), *model_, RetrievalMode::BM25);
    for (uint32_t q = 0; q < 10; ++q) {
        const uint32_t id = q * 7 % static_cast<uint32_t>(b.count());
        // Vector: a memory's own vector (its id must come first), k = 10.
        const std::vector<float>& v = (*encoded_)[id].vector;
        ChunkQuery cq;
        cq.vector = &v;
        const auto want = vec.rank(cq, 10);
        kb::BankQuery bq;
        bq.vector = &v;
        bq.k = 10;
        const auto got = b.retrieve(bq);
        ASSERT_EQ(got.size(), want.size());
        EXPECT_EQ(got[0].id, id);
        for (size_t i = 0; i < got.size(); ++i) {
            EXPECT_EQ(got[i].id, want[i].first) << "query " << q << " rank " << i;
            EXPECT_NEAR(got[i].score, want[i].second, 1e-4);
        }
        // BM25 over a few tokens of a reference.
        const std::vector<int32_t>& toks = b.reference(id).tokens;
        const std::vector<int32_t> terms(toks.begin(), toks.begin() + std::min<size_t>(toks.size(), 5));
        ChunkQuery tq;
        tq.tokens = &terms;
        const auto want_b = bm25.rank(tq, 8);
        kb::BankQuery tb;
        tb.tokens = &terms;
        tb.k = 8;
        const auto got_b = b.retrieve(tb);
        ASSERT_EQ(got_b.size(), want_b.size());
        for (size_t i = 0; i < got_b.size(); ++i) {
            EXPECT_EQ(got_b[i].id, want_b[i].first) << "query " << q << " rank " << i;
            EXPECT_NEAR(got_b[i].score, want_b[i].second, 1e-4);
        }
    }
}

TEST_F(KbBank, RelativeScoreCutKeepsWhatAMemoryFolderKeeps) {
    // The cut (mnemo/memory/retrieval_settings.hpp) on the bank's ranking and on a memory folder's
    // over the same references leaves the same references, each within the ratio of the best, and
    // the first one left out below it.
    const kb::Bank& b = **bank_;
    size_t cut_somewhere = 0;
    size_t held_by_floor = 0;
    for (const auto& [ratio, floor] : std::vector<std::pair<double, uint32_t>>{{0.3, 0}, {0.6, 0}, {0.9, 0}, {0.9, 3}}) {
        FolderMemorySource folder(folder_dir().string(), *model_, RetrievalMode::BM25, ratio, floor);
        for (uint32_t q = 0; q < 12; ++q) {
            const uint32_t id = q * 5 % static_cast<uint32_t>(b.count());
            const std::vector<int32_t>& toks = b.reference(id).tokens;
            const std::vector<int32_t> terms(toks.begin(), toks.begin() + std::min<size_t>(toks.size(), 6));
            kb::BankQuery all, cut;
            all.tokens = cut.tokens = &terms;
            all.k = cut.k = 8;
            cut.min_relative_score = ratio;
            cut.min_references = floor;
            const auto full = b.retrieve(all);
            const auto kept = b.retrieve(cut);
            ChunkQuery tq;
            tq.tokens = &terms;
            const auto want = folder.rank(tq, 8);
            ASSERT_FALSE(full.empty());
            ASSERT_EQ(kept.size(), want.size()) << "ratio " << ratio << " query " << q;
            ASSERT_GE(kept.size(), 1u);
            for (size_t i = 0; i < kept.size(); ++i) {
                EXPECT_EQ(kept[i].id, want[i].first);
                EXPECT_EQ(kept[i].id, full[i].id);
                // Below the ratio only within the floor.
                if (i >= floor) {
                    EXPECT_GE(kept[i].score, ratio * full[0].score);
                }
                if (kept[i].score < ratio * full[0].score) ++held_by_floor;
            }
            EXPECT_GE(kept.size(), std::min<size_t>(floor, full.size()));
            if (kept.size() < full.size() && kept.size() >= floor) {
                EXPECT_LT(full[kept.size()].score, ratio * full[0].score);
                ++cut_somewhere;
            }
        }
    }
    EXPECT_GT(cut_somewhere, 0u) << "no query was cut: the test checks nothing";
    EXPECT_GT(held_by_floor, 0u) << "the floor kept nothing the ratio cut: the test checks nothing";
    // A ratio outside [0, 1] is an error, not a silent no-op.
    const std::vector<int32_t> terms(b.reference(0).tokens.begin(), b.reference(0).tokens.begin() + 3);
    kb::BankQuery bad;
    bad.tokens = &terms;
    bad.k = 3;
    bad.min_relative_score = 1.5;
    expect_error([&] { b.retrieve(bad); }, {"minimum relative score must be in [0, 1]"});
    expect_error([&] { FolderMemorySource(folder_dir().string(), *model_, RetrievalMode::BM25, -0.5); },
                 {"memory folder", "minimum relative score"});
    bad.min_relative_score = 0.5;
    bad.min_references = 1001;
    expect_error([&] { b.retrieve(bad); }, {"the number of references the cut always keeps must be in [0, 1000]"});
}

TEST_F(KbBank, HybridIsReciprocalRankFusion) {
    const kb::Bank& b = **bank_;
    const std::vector<float>& v = (*encoded_)[5].vector;
    const std::vector<int32_t> terms(b.reference(20).tokens.begin(), b.reference(20).tokens.begin() + 4);
    kb::BankQuery vq, tq, hq;
    vq.vector = hq.vector = &v;
    tq.tokens = hq.tokens = &terms;
    vq.k = tq.k = static_cast<int32_t>(b.count());
    hq.k = 10;
    std::unordered_map<uint32_t, double> fused;
    for (const auto& ranking : {b.retrieve(vq), b.retrieve(tq)})
        for (size_t r = 0; r < ranking.size() && r < 100; ++r) fused[ranking[r].id] += 1.0 / (60.0 + static_cast<double>(r + 1));
    std::vector<std::pair<uint32_t, double>> want(fused.begin(), fused.end());
    std::sort(want.begin(), want.end(), [](const auto& a, const auto& c) { return a.second != c.second ? a.second > c.second : a.first < c.first; });
    const auto got = b.retrieve(hq);
    ASSERT_EQ(got.size(), 10u);
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].id, want[i].first) << "rank " << i;
        EXPECT_FLOAT_EQ(got[i].score, static_cast<float>(want[i].second));
    }
}

TEST_F(KbBank, FiltersBySourceAndPrefix) {
    const kb::Bank& b = **bank_;
    const std::vector<float>& v = (*encoded_)[3].vector;
    kb::BankQuery all, news, one;
    all.vector = news.vector = one.vector = &v;
    all.k = static_cast<int32_t>(b.count());
    news.k = one.k = 6;
    news.source_prefix = "news/";
    one.sources = {"wiki/doc4.txt", "wiki/doc6.txt"};
    std::vector<uint32_t> want_news, want_one;
    for (const kb::BankHit& h : b.retrieve(all)) {
        const std::string& s = b.reference(h.id).source;
        if (s.rfind("news/", 0) == 0 && want_news.size() < 6) want_news.push_back(h.id);
        if ((s == "wiki/doc4.txt" || s == "wiki/doc6.txt") && want_one.size() < 6) want_one.push_back(h.id);
    }
    std::vector<uint32_t> got_news, got_one;
    for (const kb::BankHit& h : b.retrieve(news)) got_news.push_back(h.id);
    for (const kb::BankHit& h : b.retrieve(one)) got_one.push_back(h.id);
    EXPECT_EQ(got_news, want_news);
    EXPECT_EQ(got_one, want_one);
    // BM25 with a filter only scores what passes.
    const std::vector<int32_t> terms(b.reference(0).tokens.begin(), b.reference(0).tokens.begin() + 3);
    kb::BankQuery t;
    t.tokens = &terms;
    t.k = 50;
    t.source_prefix = "wiki/";
    for (const kb::BankHit& h : b.retrieve(t)) EXPECT_EQ(b.reference(h.id).source.rfind("wiki/", 0), 0u);
}

// Sources and a prefix together: a reference passes with either (docs/kb-protocol.md, "Retrieve"),
// as the memory folder's client filters would; and the sources are looked up, not searched.
TEST_F(KbBank, FiltersBySourcesOrPrefix) {
    const kb::Bank& b = **bank_;
    const std::vector<float>& v = (*encoded_)[3].vector;
    kb::BankQuery q;
    q.vector = &v;
    q.k = static_cast<int32_t>(b.count());
    q.source_prefix = "news/";
    q.sources = {"wiki/doc4.txt"};
    for (int i = 0; i < 20000; ++i) q.sources.push_back("nowhere/" + std::to_string(i) + ".txt");
    size_t news = 0, doc4 = 0;
    for (const kb::BankHit& h : b.retrieve(q)) {
        const std::string& s = b.reference(h.id).source;
        if (s.rfind("news/", 0) == 0) ++news;
        else if (s == "wiki/doc4.txt") ++doc4;
        else ADD_FAILURE() << "source " << s << " passed the filter";
    }
    EXPECT_GT(news, 0u);
    EXPECT_GT(doc4, 0u);
}

// A retrieval asks BankQuery::should_stop while it passes over the bank (the server's call-time
// cap and cancellation) and stops with QueryStopped.
TEST_F(KbBank, RetrievalStopsWhenAsked) {
    const kb::Bank& b = **bank_;
    const std::vector<float>& v = (*encoded_)[3].vector;
    const std::vector<int32_t> terms(b.reference(0).tokens.begin(), b.reference(0).tokens.begin() + 3);
    for (int kind = 0; kind < 3; ++kind) {
        kb::BankQuery q;
        q.vector = kind != 1 ? &v : nullptr;
        q.tokens = kind != 0 ? &terms : nullptr;
        q.k = 5;
        int asked = 0;
        q.should_stop = [&] { return ++asked > 0; };
        EXPECT_THROW(b.retrieve(q), kb::QueryStopped) << "kind " << kind;
        EXPECT_GT(asked, 0);
        q.should_stop = [] { return false; };
        EXPECT_FALSE(b.retrieve(q).empty()) << "kind " << kind;
    }
}

TEST_F(KbBank, BadQueriesAreErrors) {
    const kb::Bank& b = **bank_;
    std::vector<float> short_v(3, 0.f), nan_v(static_cast<size_t>(model_->spec.retrieval_dim), 0.f);
    nan_v[1] = std::nanf("");
    kb::BankQuery q;
    q.k = 3;
    expect_error([&] { b.retrieve(q); }, {"neither a vector nor tokens"});
    q.vector = &short_v;
    expect_error([&] { b.retrieve(q); }, {"3 values", "retrieval_dim"});
    q.vector = &nan_v;
    expect_error([&] { b.retrieve(q); }, {"non-finite"});
    q.vector = &(*encoded_)[0].vector;
    q.k = 0;
    expect_error([&] { b.retrieve(q); }, {"k must be >= 1"});
}

TEST_F(KbBank, AddMakesVersionTwoAndLeavesVersionOneAlone) {
    const fs::path dir = copy_bank("added");
    const fs::path jsonl = *root_ / "more.jsonl";
    {
        std::ofstream f(jsonl);
        for (int i = 0; i < 6; ++i)
            f << "{\"id\": " << i << ", \"text\": \"winter ocean river light number " << i
              << " and more stone garden\", \"source\": \"extra/" << i << "\", \"metadata\": {\"n\": " << i << "}}\n";
        f << "{\"id\": \"named\", \"title\": \"Named one\", \"text\": \"music cloud paper\"}\n";
    }
    std::unordered_map<std::string, std::string> before;
    for (const auto& e : fs::directory_iterator(dir)) {
        std::ifstream f(e.path(), std::ios::binary);
        before[e.path().filename().string()] = std::string(std::istreambuf_iterator<char>(f), {});
    }
    kb::BankBuildOptions o = small_build(dir, jsonl.string());
    o.add = true;
    const kb::BankBuildReport r = kb::build_bank(*session_, o);
    EXPECT_FALSE(r.codec_trained);
    EXPECT_EQ(r.version, 2u);
    EXPECT_EQ(r.documents, 7u);
    const auto v2 = open_bank(dir);
    const kb::Bank& v1 = **bank_;
    EXPECT_EQ(v2->version(), 2u);
    EXPECT_EQ(v2->count(), v1.count() + r.references);
    EXPECT_EQ(v2->segments(), 2u);
    EXPECT_EQ(v2->codec().keys.sha256, v1.codec().keys.sha256);
    for (uint32_t i = 0; i < v1.count(); ++i) EXPECT_EQ(v2->record(i), v1.record(i));
    expect_all_records_good(*v2);
    const kb::BankReference& added = v2->reference(static_cast<uint32_t>(v1.count()));
    EXPECT_EQ(added.doc_id, "0");
    EXPECT_EQ(added.source, "extra/0");
    EXPECT_EQ(added.title, "0");
    EXPECT_TRUE(added.title_tokens.empty()) << "an id standing in for a title is not counted by BM25";
    const kb::BankReference& named = v2->reference(static_cast<uint32_t>(v2->count() - 1));
    EXPECT_EQ(named.title, "Named one");
    EXPECT_FALSE(named.title_tokens.empty()) << "a given title is counted by BM25";
    EXPECT_EQ(named.source, "more.jsonl");
    // Version 1's files are byte for byte what they were (CURRENT aside), and still name a bank.
    for (const auto& [name, bytes] : before) {
        if (name == "CURRENT") continue;
        std::ifstream f(dir / name, std::ios::binary);
        EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), {}), bytes) << name;
    }
    std::ifstream texts(dir / "texts-000002-0000.jsonl");
    std::string line;
    std::getline(texts, line);
    EXPECT_NE(line.find("\"metadata\":{\"n\":0}"), std::string::npos) << line;
}

TEST_F(KbBank, RefusesAnotherModelsBank) {
    const fs::path dir = copy_bank("other-model");
    const auto other = open_session(test::model_dir("memory3-tiny-f32"));
    kb::BankBuildOptions o = small_build(dir, corpus_dir());
    o.add = true;
    const std::string fp = memory_folder_model(*other).fingerprint;
    expect_error([&] { kb::build_bank(*other, o); }, {model_->fingerprint, fp, "memories only fit the model"});
    kb::BankBuildOptions c = small_build(*root_ / "codec-from", corpus_dir());
    c.codec_from = bank_dir().string();
    expect_error([&] { kb::build_bank(*other, c); }, {model_->fingerprint, fp});
    // build over an existing bank needs --force; add needs a bank.
    kb::BankBuildOptions again = small_build(dir, corpus_dir());
    expect_error([&] { kb::build_bank(*session_, again); }, {"already has version 1", "--force"});
    kb::BankBuildOptions none = small_build(*root_ / "empty-bank", corpus_dir());
    none.add = true;
    expect_error([&] { kb::build_bank(*session_, none); }, {"no bank yet"});
}

TEST_F(KbBank, CodecFromAnotherBankIsReused) {
    kb::BankBuildOptions o = small_build(*root_ / "reuse", corpus_dir());
    o.codec_from = bank_dir().string();
    o.codec.key_factory = o.codec.value_factory = "";
    const kb::BankBuildReport r = kb::build_bank(*session_, o);
    EXPECT_FALSE(r.codec_trained);
    const auto b = open_bank(*root_ / "reuse");
    EXPECT_EQ(b->codec().keys.sha256, (*bank_)->codec().keys.sha256);
    for (uint32_t i = 0; i < b->count(); ++i) EXPECT_EQ(b->record(i), (*bank_)->record(i));
}

TEST_F(KbBank, InterruptedBuildResumesFromItsCheckpoints) {
    const fs::path dir = *root_ / "resume";
    kb::BankBuildOptions o = small_build(dir, corpus_dir());
    o.progress = [](const std::string& stage, uint64_t done, uint64_t) {
        if (stage == "memorize" && done >= 48) throw Error("interrupted");  // after 3 batches of 16
    };
    expect_error([&] { kb::build_bank(*session_, o); }, {"interrupted"});
    EXPECT_EQ(kb::Bank::current_version(*kb::open_folder_storage(dir.string(), false)), 0u) << "nothing published";
    expect_error([&] { open_bank(dir); }, {"no bank yet"});
    o.progress = nullptr;
    const kb::BankBuildReport r = kb::build_bank(*session_, o);
    EXPECT_EQ(r.resumed_batches, 3u);
    EXPECT_EQ(r.batches, report_->batches);
    const auto b = open_bank(dir);
    ASSERT_EQ(b->count(), (*bank_)->count());
    // Training on the same memories gives the same codec, hence the same records.
    EXPECT_EQ(b->codec().keys.sha256, (*bank_)->codec().keys.sha256);
    for (uint32_t i = 0; i < b->count(); ++i) EXPECT_EQ(b->record(i), (*bank_)->record(i));
}

TEST_F(KbBank, DamagedRecordIsAnErrorOnRead) {
    const fs::path dir = copy_bank("damaged");
    const uint64_t rb = (*bank_)->record_bytes();
    {
        std::fstream f(dir / "seg-000001-0000.rec", std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(kb::kSegmentHeaderBytes + 3 * rb + rb - 2));
        f.put('\x5a');
    }
    const auto b = open_bank(dir);
    EXPECT_NO_THROW(b->record(2));
    expect_error([&] { b->record(3); }, {"seg-000001-0000.rec", "record 3"});
}

TEST_F(KbBank, BadManifestsAndBlobsAreClearErrors) {
    auto edit = [&](const std::string& name, const std::function<void(std::string&)>& change) {
        const fs::path dir = copy_bank("bad-" + name);
        const fs::path f = dir / "manifest-000001.json";
        std::ifstream in(f);
        std::string text((std::istreambuf_iterator<char>(in)), {});
        in.close();
        change(text);
        std::ofstream(f, std::ios::trunc) << text;
        return dir;
    };
    auto replace = [](const std::string& from, const std::string& to) {
        return [=](std::string& t) {
            const size_t at = t.find(from);
            ASSERT_NE(at, std::string::npos) << from;
            t.replace(at, from.size(), to);
        };
    };
    expect_error([&] { open_bank(edit("format", replace("\"mnemo-kb-bank\"", "\"other\""))); }, {"manifest-000001.json", "format"});
    expect_error([&] { open_bank(edit("count", replace("\"count\":" + std::to_string((*bank_)->count()), "\"count\":5"))); },
                 {"count is 5"});
    expect_error([&] { open_bank(edit("path", replace("\"file\":\"seg-000001-0000.rec\"", "\"file\":\"../x.rec\""))); },
                 {"not a flat blob name"});
    expect_error([&] { open_bank(edit("json", [](std::string& t) { t.resize(t.size() / 2); })); }, {"manifest-000001.json"});
    // A codebook whose bytes are not the manifest's hash.
    {
        const fs::path dir = copy_bank("bad-codebook");
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().filename().string().rfind("codec-keys-", 0) == 0) {
                std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
                f.seekp(100);
                f.put('\x01');
            }
        expect_error([&] { open_bank(dir); }, {"keys codebook", "SHA-256"});
    }
    // Texts missing; CURRENT pointing nowhere or at garbage.
    {
        const fs::path dir = copy_bank("bad-texts");
        fs::remove(dir / "texts-000001-0000.jsonl");
        expect_error([&] { open_bank(dir); }, {"texts-000001-0000.jsonl", "missing"});
    }
    {
        const fs::path dir = copy_bank("bad-current");
        std::ofstream(dir / "CURRENT", std::ios::trunc) << "manifest-000009.json\n";
        expect_error([&] { open_bank(dir); }, {"manifest-000009.json", "missing"});
        std::ofstream(dir / "CURRENT", std::ios::trunc) << "hello";
        expect_error([&] { open_bank(dir); }, {"CURRENT", "manifest-<version>.json"});
        fs::remove(dir / "CURRENT");
        expect_error([&] { open_bank(dir); }, {"no bank yet"});
        EXPECT_EQ(kb::Bank::current_version(*kb::open_folder_storage(dir.string(), false)), 0u);
    }
}

TEST(KbBankStorage, FolderBlobsAreFlatImmutableAndAtomic) {
    const fs::path dir = fs::temp_directory_path() / ("mnemo-kb-storage-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    expect_error([&] { kb::open_folder_storage(dir.string(), false); }, {"does not exist"});
    auto st = kb::open_folder_storage(dir.string(), true);
    EXPECT_FALSE(st->read_blob("a").has_value());
    st->write_blob("a", "hello");
    EXPECT_EQ(*st->read_blob("a"), "hello");
    expect_error([&] { st->write_blob("a", "again"); }, {"'a'", "immutable"});
    for (const std::string bad : {"x/y", "..", ".", ""}) expect_error([&] { st->write_blob(bad, "z"); }, {"invalid blob name"});
    st->publish_pointer("CURRENT", "one", std::nullopt);
    st->publish_pointer("CURRENT", "two", std::string("one"));
    EXPECT_EQ(*st->read_blob("CURRENT"), "two");
    // The compare-and-swap: a writer that read "one" may not replace what another published since.
    EXPECT_THROW(st->publish_pointer("CURRENT", "three", std::string("one")), kb::PointerConflict);
    EXPECT_THROW(st->publish_pointer("CURRENT", "three", std::nullopt), kb::PointerConflict);
    EXPECT_EQ(*st->read_blob("CURRENT"), "two");
    {
        // One writer at a time; the lock goes with its holder.
        const auto held = st->lock_writer("the first writer");
        expect_error([&] { st->lock_writer("a second writer"); }, {"another writer", "the first writer"});
    }
    EXPECT_NO_THROW(st->lock_writer("a later writer"));
    auto r = st->open_blob("a");
    EXPECT_EQ(r->size(), 5u);
    char buf[3];
    r->read(1, buf, 3);
    EXPECT_EQ(std::string(buf, 3), "ell");
    expect_error([&] { r->read(4, buf, 3); }, {"past its end"});
    expect_error([&] { st->open_blob("missing"); }, {"'missing'"});
    EXPECT_EQ(st->list(), (std::vector<std::string>{"CURRENT", "a"}));
    st->remove_blob("a");
    EXPECT_FALSE(st->exists("a"));
    fs::remove_all(dir);
}

TEST(KbBankCorpus, JsonlAndFolderDocuments) {
    const fs::path dir = fs::temp_directory_path() / ("mnemo-kb-corpus-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "f" / "sub");
    std::ofstream(dir / "f" / "sub" / "b.md") << "\n## Heading here\n\ntext one\n\ntext two\n";
    std::ofstream(dir / "f" / "a.txt") << "first line\nsecond\n";
    std::ofstream(dir / "f" / "skip.bin") << "binary";
    auto docs = app::read_corpus((dir / "f").string());
    ASSERT_EQ(docs.size(), 2u);
    EXPECT_EQ(docs[0].doc_id, "a.txt");
    EXPECT_EQ(docs[0].title, "first line");
    EXPECT_EQ(docs[1].source, "sub/b.md");
    EXPECT_EQ(docs[1].title, "Heading here");
    EXPECT_FALSE(docs[0].title_given);  // a plain text's first line: shown, not counted by BM25
    EXPECT_TRUE(docs[1].title_given);   // a heading
    std::ofstream(dir / "c.jsonl") << "{\"id\": 7, \"text\": \"t\", \"metadata\": {\"k\": [1]}}\n\n{\"id\": \"x\", \"text\": \"u\", \"title\": \"T\", \"source\": \"s\"}\n";
    docs = app::read_corpus((dir / "c.jsonl").string());
    ASSERT_EQ(docs.size(), 2u);
    EXPECT_EQ(docs[0].doc_id, "7");
    EXPECT_EQ(docs[0].title, "7");
    EXPECT_EQ(docs[0].source, "c.jsonl");
    EXPECT_EQ(docs[0].metadata_json, "{\"k\":[1]}");
    EXPECT_EQ(docs[1].title, "T");
    EXPECT_FALSE(docs[0].title_given);
    EXPECT_TRUE(docs[1].title_given);
    std::ofstream(dir / "bad.jsonl") << "{\"id\": 1}\n";
    expect_error([&] { app::read_corpus((dir / "bad.jsonl").string()); }, {"bad.jsonl", "line 1", "text"});
    expect_error([&] { app::read_corpus((dir / "nothing").string()); }, {"does not exist"});
    fs::remove_all(dir);
}

}  // namespace
