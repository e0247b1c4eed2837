// The bank's stored retrieval indexes (server/README.md, "Retrieval index"): the BM25 blob
// (round trip, a parser that names what is wrong), the vector index (flat below the threshold,
// IVF-Flat above it, its recall against the exact index), every writer storing the indexes of
// its version (build, add incrementally, delete, compact) with rankings equal to indexes built
// from scratch, a tampered blob refused before FAISS reads it, a version written before stored
// indexes still opening, and shards whose merged rankings are exactly the whole bank's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "bank/bank.hpp"
#include "bank/bank_compact.hpp"
#include "bank/bank_delete.hpp"
#include "bank/bank_format.hpp"
#include "bank/bank_vector_index.hpp"
#include "bank/bm25_store.hpp"
#include "fixtures/kb_synthetic_bank.hpp"
#include "mnemo/error.hpp"
#include "mnemo/memory/retrieval_settings.hpp"
#include "scoped_env.hpp"

namespace fs = std::filesystem;
using namespace mnemo;

namespace {

using test::SyntheticRecords;
using test::write_synthetic_version;

constexpr int32_t kDim = 32;

struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& name) : path(fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
};

std::shared_ptr<kb::BankStorage> storage(const fs::path& dir) { return kb::open_folder_storage(dir.string(), true); }
std::shared_ptr<const kb::Bank> open(const fs::path& dir, const kb::BankOpenOptions& o = {}) { return kb::Bank::open(storage(dir), o); }

std::string read_text(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

kb::BankManifest current_manifest(const fs::path& dir) { return *kb::read_current_manifest(*storage(dir)); }

// A copy of the bank whose published manifest names no stored index: what a version written
// before stored indexes looks like (open then builds them as it always did).
fs::path without_stored_index(const fs::path& dir, const fs::path& to) {
    fs::remove_all(to);
    fs::copy(dir, to, fs::copy_options::recursive);
    kb::BankManifest m = current_manifest(to);
    m.index.reset();
    const fs::path p = to / kb::manifest_name(m.version);
    fs::remove(p);
    std::ofstream(p, std::ios::binary) << kb::manifest_to_json(m);
    return to;
}

struct Query {
    std::vector<float> vector;
    std::vector<int32_t> tokens;
};

std::vector<Query> queries(int n, unsigned seed) {
    SyntheticRecords gen(kDim, 16, seed);  // the tokens
    SyntheticRecords centres(kDim, 16, 7);  // vectors around the banks' centres (their seed)
    std::vector<Query> out;
    for (int i = 0; i < n; ++i) {
        std::vector<int32_t> t = gen.tokens();
        t.resize(std::min<size_t>(t.size(), 6));
        out.push_back({centres.vector(), t});
    }
    return out;
}

kb::BankQuery query_of(const Query& q, int kind, int k) {
    kb::BankQuery b;
    b.vector = kind != 1 ? &q.vector : nullptr;
    b.tokens = kind != 0 ? &q.tokens : nullptr;
    b.k = k;
    return b;
}

void expect_same_hits(const std::vector<kb::BankHit>& a, const std::vector<kb::BankHit>& b, const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].id, b[i].id) << what << " rank " << i;
        EXPECT_EQ(a[i].score, b[i].score) << what << " rank " << i;  // bit-identical
    }
}

double recall(const std::vector<kb::BankHit>& exact, const std::vector<kb::BankHit>& approx) {
    size_t found = 0;
    for (const kb::BankHit& e : exact)
        for (const kb::BankHit& a : approx)
            if (a.id == e.id) ++found;
    return exact.empty() ? 1.0 : static_cast<double>(found) / static_cast<double>(exact.size());
}


TEST(KbIndex, Bm25BlobRoundTripsAndScoresBitIdentically) {
    SyntheticRecords gen(kDim, 4, 3);
    kb::Bm25Index built;
    for (uint32_t id = 0; id < 300; ++id)
        if (id % 7 != 3) built.add(id, gen.tokens());  // gaps: retired ids are not documents
    built.finish(310);
    const std::string blob = kb::encode_bm25_blob(built);
    const kb::Bm25Index read = kb::parse_bm25_blob(blob, "test blob");
    EXPECT_EQ(read.id_count(), 310u);
    EXPECT_EQ(read.documents(), built.documents());
    EXPECT_EQ(read.total_length(), built.total_length());
    EXPECT_EQ(read.terms(), built.terms());
    EXPECT_EQ(read.lengths(), built.lengths());
    EXPECT_EQ(kb::encode_bm25_blob(read), blob);
    for (const Query& q : queries(50, 11)) {
        auto a = built.score(q.tokens, [](uint32_t) { return true; });
        auto b = read.score(q.tokens, [](uint32_t) { return true; });
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        ASSERT_EQ(a, b);  // pairs of (id, double): bit-identical scores
    }
}

TEST(KbIndex, Bm25BlobParserNamesTheBlobAndTheField) {
    kb::Bm25Index ix;
    ix.add(0, {5, 6, 6});
    ix.add(2, {6, 7});
    ix.finish(3);
    const std::string good = kb::encode_bm25_blob(ix);
    auto expect = [](const std::string& bytes, const std::string& needle) {
        try {
            kb::parse_bm25_blob(bytes, "blob 'bm25-000001.bin'");
            ADD_FAILURE() << "accepted; expected an error mentioning '" << needle << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("blob 'bm25-000001.bin'"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    expect(good.substr(0, 20), "header");
    expect(good.substr(0, good.size() - 1), "make");
    std::string bad = good;
    bad[0] = 'X';
    expect(bad, "magic");
    bad = good;
    bad[8] = 2;
    expect(bad, "format 2");
    bad = good;
    bad[24] = 3;  // documents
    expect(bad, "documents");
    // lengths start at 56: document 0's length 3 -> 4 (its postings count 3 tokens)
    bad = good;
    bad[56] = 4;
    expect(bad, "total_length");
    // terms at 56 + 12: swap the order of the first two terms (5, 6) -> (6, 6)
    bad = good;
    bad[68] = 6;
    expect(bad, "not above the previous");
    // a posting of a document that is not one (id 1 has length -1)
    bad = good;
    bad[68 + 24] = 1;
    expect(bad, "not a document of the index");
    // an absurd count is refused before anything is allocated for it
    bad = good;
    bad[48 + 7] = 0x7f;
    expect(bad, "postings");
}

TEST(KbIndex, SmallBankStoresBm25AndAFlatIndexRankingAsBuiltAtOpen) {
    TempDir tmp("mnemo-kb-index-small");
    SyntheticRecords gen(kDim, 16, 7);
    const auto st = storage(tmp.path / "bank");
    const kb::WrittenVersion v = write_synthetic_version(*st, gen, kDim, "d", 0, 200, 3);
    ASSERT_TRUE(v.manifest.index);
    EXPECT_EQ(v.manifest.index->vectors_kind, kb::kIndexFlat);
    EXPECT_EQ(v.manifest.index->vectors_count, 600u);
    EXPECT_TRUE(fs::exists(tmp.path / "bank" / v.manifest.index->bm25.file));
    const auto stored = open(tmp.path / "bank");
    const auto rebuilt = open(without_stored_index(tmp.path / "bank", tmp.path / "old"));
    EXPECT_NE(stored->index_description().find("stored"), std::string::npos) << stored->index_description();
    EXPECT_NE(rebuilt->index_description().find("built at open"), std::string::npos) << rebuilt->index_description();
    for (const Query& q : queries(40, 5))
        for (int kind = 0; kind < 3; ++kind)
            expect_same_hits(stored->retrieve(query_of(q, kind, 10)), rebuilt->retrieve(query_of(q, kind, 10)), "kind " + std::to_string(kind));
}

// An IVF bank (the threshold lowered to 0), then every writer on it: add (incremental: the
// centroids kept, only new vectors assigned), delete and compact. After each, the stored
// indexes rank as indexes built from scratch: BM25 bit-identically, the IVF index with every list
// probed exactly as the flat one, and at the default nprobe with a measured recall.
TEST(KbIndex, EveryWriterStoresTheIndexesOfItsVersion) {
    test::ScopedEnv env("MNEMO_KB_IVF_MIN_RECORDS", "0");
    TempDir tmp("mnemo-kb-index-writers");
    SyntheticRecords gen(kDim, 16, 7);
    const fs::path dir = tmp.path / "bank";
    const auto st = storage(dir);
    const kb::WrittenVersion v1 = write_synthetic_version(*st, gen, kDim, "d", 0, 1000, 3, {}, 1000);
    ASSERT_EQ(v1.manifest.index->vectors_kind, kb::kIndexIvfFlat);
    EXPECT_TRUE(v1.index.ivf_trained);
    EXPECT_FALSE(v1.index.incremental_bm25);
    EXPECT_GT(v1.index.recall_at_10, 0.8);
    const uint32_t lists = v1.manifest.index->lists;
    EXPECT_EQ(lists, kb::ivf_lists_for(3000));

    // add: 100 new documents, 20 replacing old ones (their 60 records retired).
    std::vector<uint32_t> retire;
    for (uint32_t id = 0; id < 60; ++id) retire.push_back(id);
    const kb::WrittenVersion v2 = write_synthetic_version(*st, gen, kDim, "d", 0, 20, 3, retire, 1000);
    const kb::WrittenVersion v3 = write_synthetic_version(*st, gen, kDim, "n", 0, 80, 3, {}, 1000);
    for (const kb::WrittenVersion* v : {&v2, &v3}) {
        EXPECT_TRUE(v->index.incremental_bm25);
        EXPECT_FALSE(v->index.ivf_trained) << "add reuses the centroids";
        EXPECT_EQ(v->manifest.index->lists, lists);
    }
    EXPECT_EQ(v3.index.vectors_added, 240u);

    auto check = [&](const std::string& step) {
        SCOPED_TRACE(step);
        kb::BankOpenOptions all_lists;
        all_lists.nprobe = lists;
        const auto ivf = open(dir, all_lists);
        const auto ivf_default = open(dir);
        const auto flat = open(without_stored_index(dir, tmp.path / "flat"));
        EXPECT_NE(ivf->index_description().find("IVF-Flat"), std::string::npos) << ivf->index_description();
        EXPECT_NE(flat->index_description().find("flat"), std::string::npos);
        double found = 0;
        int n = 0;
        for (const Query& q : queries(60, 9)) {
            expect_same_hits(ivf->retrieve(query_of(q, 1, 10)), flat->retrieve(query_of(q, 1, 10)), "bm25");
            expect_same_hits(ivf->retrieve(query_of(q, 0, 10)), flat->retrieve(query_of(q, 0, 10)), "vector, every list probed");
            const auto exact = flat->retrieve(query_of(q, 0, 10));
            for (const kb::BankHit& h : exact) EXPECT_FALSE(ivf->retired(h.id));
            // Source filters are applied inside FAISS's scan, for IVF as for flat.
            kb::BankQuery filtered = query_of(q, 0, 10);
            filtered.sources = {"src/b"};
            const auto only_b = ivf->retrieve(filtered);
            EXPECT_EQ(only_b.size(), 10u);
            for (const kb::BankHit& h : only_b) EXPECT_EQ(ivf->reference(h.id).source, "src/b");
            expect_same_hits(only_b, flat->retrieve(filtered), "filtered vector, every list probed");
            found += recall(exact, ivf_default->retrieve(query_of(q, 0, 10)));
            ++n;
        }
        EXPECT_GT(found / n, 0.9) << "recall@10 at the default nprobe";
    };
    check("after add");

    const kb::BankDeleteReport d = kb::delete_documents(st, {"d5", "d6", "n7"});
    EXPECT_EQ(d.retired_records, 9u);
    check("after delete");
    EXPECT_EQ(current_manifest(dir).index->vectors_count, 3000u + 240u - 9u);

    kb::BankCompactOptions co;
    co.storage = st;
    co.segment_records = 1000;
    const kb::BankCompactReport c = kb::compact_bank(co);
    EXPECT_EQ(c.records_after, 3000u + 240u - 9u);
    ASSERT_TRUE(current_manifest(dir).retired.empty());
    check("after compact");
}

TEST(KbIndex, ATamperedIndexBlobIsRefusedBeforeFaissReadsIt) {
    test::ScopedEnv env("MNEMO_KB_IVF_MIN_RECORDS", "0");
    TempDir tmp("mnemo-kb-index-tamper");
    SyntheticRecords gen(kDim, 16, 7);
    const fs::path dir = tmp.path / "bank";
    write_synthetic_version(*storage(dir), gen, kDim, "d", 0, 300, 3);
    const kb::BankManifest m = current_manifest(dir);
    for (const std::string& file : {m.index->vectors.file, m.index->bm25.file}) {
        const fs::path copy = tmp.path / "copy";
        fs::remove_all(copy);
        fs::copy(dir, copy, fs::copy_options::recursive);
        std::string bytes = read_text(copy / file);
        bytes[bytes.size() / 2] ^= 0x40;
        fs::remove(copy / file);
        std::ofstream(copy / file, std::ios::binary) << bytes;
        try {
            open(copy);
            ADD_FAILURE() << file << ": a tampered index opened";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("SHA-256"), std::string::npos) << e.what();
        }
    }
}

// The shards' rankings, merged at the caller, are exactly the whole bank's: vector (flat, and
// IVF whose shards keep the stored centroids), BM25, and hybrid fused at the caller.
TEST(KbIndex, MergedShardRankingsAreTheWholeBanks) {
    TempDir tmp("mnemo-kb-index-shards");
    for (const char* threshold : {"1000000", "0"}) {
        test::ScopedEnv env("MNEMO_KB_IVF_MIN_RECORDS", threshold);
        SCOPED_TRACE(std::string("threshold ") + threshold);
        SyntheticRecords gen(kDim, 16, 7);
        const fs::path dir = tmp.path / (std::string("bank-") + threshold);
        const auto st = storage(dir);
        write_synthetic_version(*st, gen, kDim, "d", 0, 400, 3);
        kb::delete_documents(st, {"d3", "d10"});  // retired records in some shards
        const auto whole = open(dir);
        for (uint32_t shards = 1; shards <= 3; ++shards) {
            std::vector<std::shared_ptr<const kb::Bank>> parts;
            for (uint32_t s = 0; s < shards; ++s) parts.push_back(open(dir, {s, shards, 0}));
            EXPECT_EQ(parts.back()->shards(), shards);
            // Texts and records stay whole in every shard; vectors are the shard's.
            EXPECT_EQ(parts.back()->reference(0).doc_id, whole->reference(0).doc_id);
            EXPECT_NO_THROW(parts.back()->record(1));
            if (shards > 1) {
                EXPECT_THROW(parts[1]->vector(0), Error);
            }
            for (const Query& q : queries(30, 13)) {
                for (const std::string& source : {std::string(), std::string("src/b")}) {
                    for (int k : {1, 10, 150}) {
                        kb::BankQuery bq = query_of(q, 2, k);
                        if (!source.empty()) bq.sources = {source};
                        const std::string what = std::to_string(shards) + " shards, k " + std::to_string(k) + " " + source;
                        std::vector<std::vector<kb::BankHit>> by_vector, by_bm25, by_vector_k, by_bm25_k;
                        const size_t depth = kb::fusion_depth(k);
                        for (const auto& p : parts) {
                            by_vector.push_back(p->vector_ranking(bq, depth));
                            by_bm25.push_back(p->bm25_ranking(bq, depth));
                            by_vector_k.push_back(p->vector_ranking(bq, static_cast<size_t>(k)));
                            by_bm25_k.push_back(p->bm25_ranking(bq, static_cast<size_t>(k)));
                        }
                        expect_same_hits(kb::merge_rankings(by_vector_k, static_cast<size_t>(k)), whole->vector_ranking(bq, static_cast<size_t>(k)),
                                         "vector, " + what);
                        if (source.empty())
                            expect_same_hits(whole->vector_ranking(bq, static_cast<size_t>(k)), whole->retrieve(query_of(q, 0, k)), "vector alone, " + what);
                        expect_same_hits(kb::merge_rankings(by_bm25_k, static_cast<size_t>(k)), whole->bm25_ranking(bq, static_cast<size_t>(k)),
                                         "bm25, " + what);
                        std::vector<kb::BankHit> fused = kb::fuse_rankings(kb::merge_rankings(by_vector, depth), kb::merge_rankings(by_bm25, depth),
                                                                           static_cast<size_t>(k));
                        expect_same_hits(fused, whole->retrieve(bq), "hybrid, " + what);
                    }
                }
            }
        }
    }
}

TEST(KbIndex, AVersionWithoutStoredIndexesOpensAndTheNextWriterStoresThem) {
    TempDir tmp("mnemo-kb-index-old");
    SyntheticRecords gen(kDim, 16, 7);
    write_synthetic_version(*storage(tmp.path / "new"), gen, kDim, "d", 0, 100, 3);
    const fs::path old = without_stored_index(tmp.path / "new", tmp.path / "old");
    const auto bank = open(old);
    EXPECT_NE(bank->index_description().find("no stored index"), std::string::npos) << bank->index_description();
    EXPECT_EQ(bank->retrieve(query_of(queries(1, 3)[0], 2, 5)).size(), 5u);
    // The next writer (here delete) stores them, built from every segment (none is reusable).
    const kb::BankDeleteReport d = kb::delete_documents(storage(old), {"d1"});
    EXPECT_EQ(d.retired_records, 3u);
    ASSERT_TRUE(current_manifest(old).index);
    EXPECT_NE(open(old)->index_description().find("stored"), std::string::npos);
}

TEST(KbIndex, IvfIndexKeepsIdsThroughRemapAndSerialization) {
    SyntheticRecords gen(kDim, 8, 21);
    std::vector<float> vectors;
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < 2000; ++i) {
        const std::vector<float> v = gen.vector();
        vectors.insert(vectors.end(), v.begin(), v.end());
        ids.push_back(i * 2);
    }
    auto ivf = kb::IvfIndex::train(kDim, 64, vectors.data(), 2000);
    ivf->add(ids.data(), vectors.data(), ids.size());
    ivf->remap([](uint32_t id) { return id % 3 == 0 ? int64_t{-1} : int64_t{id} + 1; });
    const std::string blob = ivf->serialize();
    const auto back = kb::IvfIndex::parse(blob, kDim, 64, "test");
    std::vector<uint32_t> a = ivf->ids(), b = back->ids();
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b);
    for (uint32_t id : a) EXPECT_TRUE((id - 1) % 3 != 0 && (id - 1) % 2 == 0) << id;
    EXPECT_THROW(kb::IvfIndex::parse(blob, kDim + 1, 64, "test"), Error);
    EXPECT_THROW(kb::IvfIndex::parse(blob, kDim, 32, "test"), Error);
    EXPECT_GT(back->self_recall(10, 50, 64), 0.999) << "every list probed: exact";
}

}  // namespace

namespace {

// A version's BM25 made from the previous one (kept documents, then added ones, some under ids
// the previous version's dropped documents had) is the index built from scratch, bit for bit.
TEST(KbIndex, Bm25UpdateEqualsABuildFromScratch) {
    SyntheticRecords gen(kDim, 4, 17);
    std::vector<std::vector<int32_t>> docs(40);
    for (auto& d : docs) d = gen.tokens();
    kb::Bm25Index base;
    for (uint32_t id = 0; id < 30; ++id)
        if (id != 4) base.add(id, docs[id]);
    base.finish(30);
    // Keep ids < 20 except 7 and 12; ids 20..39 are new (20..29 reuse the base's dropped ids).
    const auto keep = [](uint32_t id) { return id < 20 && id != 7 && id != 12; };
    std::vector<std::pair<uint32_t, const std::vector<int32_t>*>> added;
    for (uint32_t id = 20; id < 40; ++id) added.emplace_back(id, &docs[id]);
    const kb::Bm25Index updated = kb::Bm25Index::updated(base, keep, 40, added);
    kb::Bm25Index fresh;
    for (uint32_t id = 0; id < 40; ++id)
        if ((keep(id) && id != 4) || id >= 20) fresh.add(id, docs[id]);
    fresh.finish(40);
    EXPECT_EQ(kb::encode_bm25_blob(updated), kb::encode_bm25_blob(fresh));
}

// compact keeps the segments before the first retired record (and their indexes: BM25 postings
// kept, IVF vectors kept under the same centroids) and rewrites the rest: the result ranks as
// indexes built from scratch.
TEST(KbIndex, CompactKeepingSegmentsRanksAsARebuild) {
    test::ScopedEnv env("MNEMO_KB_IVF_MIN_RECORDS", "0");
    TempDir tmp("mnemo-kb-index-compact");
    SyntheticRecords gen(kDim, 16, 7);
    const fs::path dir = tmp.path / "bank";
    const auto st = storage(dir);
    write_synthetic_version(*st, gen, kDim, "d", 0, 600, 3, {}, 300);  // segments of 300 records
    kb::delete_documents(st, {"d450", "d451", "d590"});                  // retired in the 5th and 6th segments
    kb::BankCompactOptions co;
    co.storage = st;
    co.segment_records = 300;
    const kb::BankCompactReport c = kb::compact_bank(co);
    EXPECT_EQ(c.segments_kept, 4u);
    kb::BankOpenOptions all_lists;
    all_lists.nprobe = current_manifest(dir).index->lists;
    const auto stored = open(dir, all_lists);
    const auto rebuilt = open(without_stored_index(dir, tmp.path / "rebuilt"));
    for (const Query& q : queries(40, 23))
        for (int kind = 0; kind < 3; ++kind)
            expect_same_hits(stored->retrieve(query_of(q, kind, 10)), rebuilt->retrieve(query_of(q, kind, 10)), "kind " + std::to_string(kind));
}

}  // namespace

namespace {

// Identical vectors (identical references) tie; whichever of them FAISS's heap keeps, the ranking
// takes the lowest ids, however many tie across the cut, for flat and IVF, filtered or not.
TEST(KbIndex, TiesAcrossTheCutGoToTheLowestIds) {
    SyntheticRecords gen(kDim, 4, 31);
    const std::vector<float> same = gen.vector();
    std::vector<float> vectors;
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < 600; ++i) {
        const std::vector<float> v = i % 3 == 0 ? same : gen.vector();  // every third identical
        vectors.insert(vectors.end(), v.begin(), v.end());
        ids.push_back(1000 - i);  // descending record ids: FAISS meets the highest first
    }
    std::vector<uint32_t> sorted_ids = ids;
    std::sort(sorted_ids.begin(), sorted_ids.end());
    std::vector<float> by_id(vectors.size());
    for (size_t p = 0; p < ids.size(); ++p) {
        const size_t row = static_cast<size_t>(std::lower_bound(sorted_ids.begin(), sorted_ids.end(), ids[p]) - sorted_ids.begin());
        std::copy_n(vectors.begin() + static_cast<std::ptrdiff_t>(p * kDim), kDim, by_id.begin() + static_cast<std::ptrdiff_t>(row * kDim));
    }
    const auto flat = kb::make_flat_index(kDim, sorted_ids, by_id.data());
    auto ivf = kb::IvfIndex::train(kDim, 64, vectors.data(), 600);
    ivf->add(ids.data(), vectors.data(), ids.size());
    std::vector<uint32_t> tied;  // the ids of the identical vectors, ascending
    for (uint32_t i = 0; i < 600; i += 3) tied.push_back(1000 - i);
    std::sort(tied.begin(), tied.end());
    const std::function<bool(uint32_t)> even = [](uint32_t id) { return id % 2 == 0; };
    const std::vector<const kb::VectorIndex*> indexes = {flat.get(), ivf.get()};
    for (const kb::VectorIndex* ix : indexes) {
        for (size_t want : {1, 5, 37}) {
            bool stopped = false;
            const auto hits = ix->search(same.data(), want, {}, {}, 64, &stopped);
            ASSERT_EQ(hits.size(), want);
            for (size_t i = 0; i < want; ++i) EXPECT_EQ(hits[i].id, tied[i]) << ix->describe(64) << " want " << want << " rank " << i;
            const auto evens = ix->search(same.data(), want, even, {}, 64, &stopped);
            std::vector<uint32_t> tied_even;
            for (uint32_t id : tied)
                if (id % 2 == 0) tied_even.push_back(id);
            ASSERT_EQ(evens.size(), want);
            for (size_t i = 0; i < want; ++i) EXPECT_EQ(evens[i].id, tied_even[i]) << ix->describe(64) << " filtered, want " << want;
        }
    }
}

}  // namespace
