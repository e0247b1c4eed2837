// Correcting a bank (server/README.md, "Correcting a bank"): `add` of a doc_id the bank holds
// replaces that document, `delete` retires documents, `compact` drops retired records from the
// segments. One bank is built per suite (24 documents of 3 references, segments of 10 records)
// and copied for each test. What must hold: a retired record is never retrieved (vector, BM25,
// hybrid) nor served, the new text is; unknown ids are errors that publish nothing; a compacted
// version answers every query exactly as the version it was made from; a reader that opened an
// older version keeps reading it; every document carries the bank version that added its text.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "bank/bank_compact.hpp"
#include "bank/bank_delete.hpp"
#include "bank/bank_format.hpp"
#include "bank/bank_retired.hpp"
#include "app/corpus.hpp"
#include "bank/sha256_hex.hpp"
#include "fixtures/kb_corrected_bank.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using test::expect_error_with;
using test::open_kb_bank;

namespace {

void rewrite_texts(const fs::path& dir, const std::string& t);

class KbBankCorrect : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        root_ = new fs::path(fs::temp_directory_path() / ("mnemo-kb-correct-" + std::to_string(::getpid())));
        fs::remove_all(*root_);
        std::string corpus;
        for (int d = 0; d < 24; ++d) corpus += test::kb_doc_line(std::string("d") + std::to_string(d), 100 + d);
        test::write_text(*root_ / "corpus.jsonl", corpus);
        session_ = test::open_model(test::model_dir("memory3-tiny-bpe"), 128).release();
        kb::build_bank(*session_, test::kb_small_build(*root_ / "base", (*root_ / "corpus.jsonl").string()));
    }
    static void TearDownTestSuite() {
        fs::remove_all(*root_);
        delete session_;
        delete root_;
    }

    // A copy of the suite's bank (version 1) to change.
    static fs::path copy_base(const std::string& name) {
        test::copy_kb_bank(*root_ / "base", *root_ / name);
        return *root_ / name;
    }
    // A copy of the base whose first texts file has its first `find` made `replace`: opening it
    // is an error mentioning every needle.
    static void expect_texts_edit_refused(const std::string& name, const std::string& find, const std::string& replace,
                                          const std::vector<std::string>& needles) {
        const fs::path dir = copy_base(name);
        std::string t = test::read_text(dir / "texts-000001-0000.jsonl");
        const size_t at = t.find(find);
        ASSERT_NE(at, std::string::npos) << find;
        t.replace(at, find.size(), replace);
        rewrite_texts(dir, t);
        expect_error_with([&] { open_kb_bank(dir); }, needles);
    }
    // `mnemo-kb add BANK CORPUS` with these JSONL lines.
    static kb::BankBuildReport add(const fs::path& bank, const std::string& lines, const std::string& name = "more.jsonl") {
        test::write_text(*root_ / name, lines);
        kb::BankBuildOptions o = test::kb_small_build(bank, (*root_ / name).string());
        o.add = true;
        return kb::build_bank(*session_, o);
    }
    static kb::BankDeleteReport remove(const fs::path& bank, const std::vector<std::string>& ids) {
        return kb::delete_documents(kb::open_folder_storage(bank.string(), false), ids);
    }
    static kb::BankCompactReport compact(const fs::path& bank) {
        kb::BankCompactOptions o;
        o.storage = kb::open_folder_storage(bank.string(), false);
        o.segment_records = 10;
        return kb::compact_bank(o);
    }

    static inline fs::path* root_ = nullptr;
    static inline Session* session_ = nullptr;
};

std::vector<float> vector_of(const kb::Bank& b, uint32_t id) {
    const float* v = b.vector(id);
    return std::vector<float>(v, v + b.model().spec.retrieval_dim);
}

// Every hit of a vector, a BM25 and a hybrid query made from record `id` of `from` (k = all).
std::vector<kb::BankHit> hits_for(const kb::Bank& b, const kb::Bank& from, uint32_t id, int kind) {
    const std::vector<float> v = vector_of(from, id);
    const std::vector<int32_t>& toks = from.reference(id).tokens;
    kb::BankQuery q;
    q.vector = kind != 1 ? &v : nullptr;
    q.tokens = kind != 0 ? &toks : nullptr;
    q.k = static_cast<int32_t>(b.count());
    return b.retrieve(q);
}

bool holds(const std::vector<kb::BankHit>& hits, uint32_t id) {
    return std::any_of(hits.begin(), hits.end(), [&](const kb::BankHit& h) { return h.id == id; });
}

TEST_F(KbBankCorrect, AddOfAKnownIdReplacesTheDocument) {
    const fs::path dir = copy_base("replace");
    const auto v1 = open_kb_bank(dir);  // a reader that opened version 1 before the add
    const kb::BankDocument* old = v1->documents().find("d3");
    ASSERT_NE(old, nullptr);
    const std::vector<uint32_t> old_ids = old->ids;
    const uint64_t n_old = old_ids.size();
    ASSERT_GE(n_old, 2u);
    EXPECT_EQ(old->version, 1u);

    const kb::BankBuildReport r = add(dir, test::kb_doc_line("d3", 9003) + test::kb_doc_line("n1", 9001));
    EXPECT_EQ(r.version, 2u);
    EXPECT_EQ(r.replaced_documents, 1u);
    EXPECT_EQ(r.retired_records, n_old);
    EXPECT_EQ(r.retired_total, n_old);
    const auto v2 = open_kb_bank(dir);
    EXPECT_EQ(v2->count(), v1->count() + r.references);
    EXPECT_EQ(v2->retired_count(), n_old);
    EXPECT_EQ(v2->documents().all().size(), 25u);

    // The old text: retired, neither retrieved nor served; version 1's reader still has it.
    for (uint32_t id : old_ids) {
        EXPECT_TRUE(v2->retired(id));
        expect_error_with([&] { v2->record(id); }, {"record " + std::to_string(id), "retired", "'d3'"});
        EXPECT_NO_THROW(v1->record(id));
        for (int kind = 0; kind < 3; ++kind) {
            const auto hits = hits_for(*v2, *v1, id, kind);
            for (uint32_t r_id : old_ids) EXPECT_FALSE(holds(hits, r_id)) << "retired " << r_id << " retrieved, kind " << kind;
            if (kind == 0) {
                EXPECT_EQ(hits.size(), v2->count() - n_old) << "a vector query ranks every live record";
            }
            EXPECT_TRUE(holds(hits_for(*v1, *v1, id, kind), id)) << "version 1 still finds its own record";
        }
    }
    // The new text: served, found by its own vector first and by its tokens, version 2.
    const kb::BankDocument* now = v2->documents().find("d3");
    ASSERT_NE(now, nullptr);
    EXPECT_EQ(now->version, 2u);
    ASSERT_GE(now->ids.size(), 2u);
    for (uint32_t id : now->ids) {
        EXPECT_GE(id, v1->count());
        EXPECT_FALSE(v2->retired(id));
        EXPECT_NO_THROW(v2->record(id));
        EXPECT_EQ(v2->reference(id).doc_version, 2u);
        // First, or tied with an identical reference (a paragraph's cut-off tail can repeat).
        const auto own = hits_for(*v2, *v2, id, 0);
        EXPECT_TRUE(own.front().id == id || v2->reference(own.front().id).text == v2->reference(id).text)
            << v2->reference(own.front().id).text << " | " << v2->reference(id).text;
        EXPECT_TRUE(holds(own, id));
        EXPECT_TRUE(holds(hits_for(*v2, *v2, id, 1), id));
        EXPECT_TRUE(holds(hits_for(*v2, *v2, id, 2), id));
        EXPECT_EQ(std::find(old_ids.begin(), old_ids.end(), id), old_ids.end());
    }
    EXPECT_NE(v2->reference(now->ids[0]).text, v1->reference(old_ids[0]).text);
    EXPECT_EQ(v2->documents().find("n1")->version, 2u);
    EXPECT_EQ(v2->documents().find("d0")->version, 1u);
    EXPECT_EQ(v2->reference(0).doc_version, 1u);
    // The manifest says it: format 2, the old ids as one range.
    const std::string manifest = test::read_text(dir / "manifest-000002.json");
    EXPECT_NE(manifest.find("\"format_version\":2"), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"retired\":[[" + std::to_string(old_ids[0]) + "," + std::to_string(n_old) + "]]"), std::string::npos)
        << manifest;

    // Replaced again: the version-2 text is retired in turn, the document is at version 3.
    add(dir, test::kb_doc_line("d3", 9004));
    const auto v3 = open_kb_bank(dir);
    EXPECT_EQ(v3->retired_count(), n_old + now->ids.size());
    EXPECT_EQ(v3->documents().find("d3")->version, 3u);
    for (uint32_t id : now->ids) EXPECT_TRUE(v3->retired(id));
}

TEST_F(KbBankCorrect, AReplacementWithoutTextIsRefused) {
    const fs::path dir = copy_base("empty-replacement");
    expect_error_with([&] { add(dir, "{\"id\": \"d2\", \"text\": \"  \"}\n" + test::kb_doc_line("n2", 9002)); },
                      {"'d2'", "has no text", "mnemo-kb delete"});
    EXPECT_EQ(kb::Bank::current_version(*kb::open_folder_storage(dir.string(), false)), 1u);
}

TEST(KbBankCorpusIds, TwoDocumentsWithOneIdAreRefused) {
    const fs::path f = fs::temp_directory_path() / ("mnemo-kb-dup-" + std::to_string(::getpid()) + ".jsonl");
    test::write_text(f, "{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"b\", \"text\": \"y\"}\n{\"id\": \"a\", \"text\": \"z\"}\n");
    expect_error_with([&] { app::read_corpus(f.string()); }, {f.filename().string(), "line 3", "'a'", "line 1"});
    fs::remove(f);
}

TEST_F(KbBankCorrect, DeleteRetiresDocumentsAndNamesUnknownIds) {
    const fs::path dir = copy_base("delete");
    const auto v1 = open_kb_bank(dir);
    // Unknown ids: every one named, the known one not, nothing published.
    try {
        remove(dir, {"d2", "nope", "zz"});
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("has no document 'nope', 'zz'"), std::string::npos) << m;
        EXPECT_EQ(m.find("'d2'"), std::string::npos) << m;
        EXPECT_NE(m.find("nothing was deleted"), std::string::npos) << m;
    }
    EXPECT_EQ(kb::Bank::current_version(*kb::open_folder_storage(dir.string(), false)), 1u);
    EXPECT_FALSE(fs::exists(dir / "manifest-000002.json"));
    expect_error_with([&] { remove(dir, {}); }, {"no document ids"});

    const uint64_t n_gone = v1->documents().find("d1")->ids.size() + v1->documents().find("d5")->ids.size();
    const kb::BankDeleteReport r = remove(dir, {"d1", "d5", "d1"});
    EXPECT_EQ(r.version, 2u);
    EXPECT_EQ(r.documents, 2u);
    EXPECT_EQ(r.retired_records, n_gone);
    EXPECT_EQ(r.live_records, v1->count() - n_gone);
    const auto v2 = open_kb_bank(dir);
    EXPECT_EQ(v2->retired_count(), n_gone);
    EXPECT_EQ(v2->documents().find("d1"), nullptr);
    EXPECT_EQ(v2->documents().find("d5"), nullptr);
    EXPECT_EQ(v2->documents().all().size(), 22u);
    for (const char* gone : {"d1", "d5"}) {
        for (uint32_t id : v1->documents().find(gone)->ids) {
            expect_error_with([&] { v2->record(id); }, {"retired", gone});
            for (int kind = 0; kind < 3; ++kind)
                for (const kb::BankHit& h : hits_for(*v2, *v1, id, kind)) EXPECT_NE(v2->reference(h.id).doc_id, gone);
            EXPECT_TRUE(holds(hits_for(*v1, *v1, id, 0), id)) << "version 1's reader still finds it";
        }
    }
    // Deleted already: not in the bank any more.
    expect_error_with([&] { remove(dir, {"d1"}); }, {"has no document 'd1'"});
    EXPECT_EQ(kb::Bank::current_version(*kb::open_folder_storage(dir.string(), false)), 2u);
    // Everything: a version that serves nothing, and compacts to no records at all.
    std::vector<std::string> rest;
    for (const kb::BankDocument& d : v2->documents().all()) rest.push_back(d.doc_id);
    remove(dir, rest);
    const auto empty = open_kb_bank(dir);
    EXPECT_EQ(empty->retired_count(), empty->count());
    kb::BankQuery q;
    const std::vector<float> v = vector_of(*v1, 0);
    q.vector = &v;
    q.k = 5;
    EXPECT_TRUE(empty->retrieve(q).empty());
    EXPECT_EQ(compact(dir).records_after, 0u);
    EXPECT_EQ(open_kb_bank(dir)->count(), 0u);
}

TEST_F(KbBankCorrect, CompactDropsRetiredRecordsAndRanksAsBefore) {
    const fs::path dir = copy_base("compact");
    const auto v1 = open_kb_bank(dir);
    const uint64_t n_gone = v1->documents().find("d5")->ids.size() + v1->documents().find("d8")->ids.size();
    const uint32_t first_gone = v1->documents().find("d5")->ids.front();
    add(dir, test::kb_doc_line("d5", 9005) + test::kb_doc_line("n1", 9001));  // d5: past the first segments
    remove(dir, {"d8"});
    const auto before = open_kb_bank(dir);  // version 3, with d5's old and d8's records retired
    ASSERT_EQ(before->version(), 3u);
    ASSERT_EQ(before->retired_count(), n_gone);
    std::vector<uint32_t> live;
    for (uint32_t id = 0; id < before->count(); ++id)
        if (!before->retired(id)) live.push_back(id);

    const kb::BankCompactReport r = compact(dir);
    EXPECT_EQ(r.from_version, 3u);
    EXPECT_EQ(r.version, 4u);
    EXPECT_EQ(r.records_before, before->count());
    EXPECT_EQ(r.records_after, live.size());
    EXPECT_EQ(r.retired_removed, n_gone);
    EXPECT_EQ(r.segments_kept, first_gone / 10) << "the segments of 10 records before d5's first id hold nothing retired";
    ASSERT_GE(r.segments_kept, 1u);
    const auto after = open_kb_bank(dir);
    EXPECT_EQ(after->version(), 4u);
    EXPECT_EQ(after->count(), live.size());
    EXPECT_EQ(after->retired_count(), 0u);

    // The manifest: format 1 again, no retired list, the untouched segments kept by name, and no
    // texts blob of the new version holds a retired document.
    const std::string text = test::read_text(dir / "manifest-000004.json");
    const kb::BankManifest m = kb::manifest_from_json(text, "manifest-000004.json");
    EXPECT_NE(text.find("\"format_version\":1"), std::string::npos);
    EXPECT_EQ(text.find("retired"), std::string::npos);
    ASSERT_GT(m.segments.size(), r.segments_kept);
    for (size_t i = 0; i < r.segments_kept; ++i) EXPECT_EQ(m.segments[i].records.file, kb::segment_blob_name("seg", 1, i, "rec"));
    for (size_t i = r.segments_kept; i < m.segments.size(); ++i) {
        EXPECT_EQ(m.segments[i].records.file.rfind("seg-000004-", 0), 0u) << m.segments[i].records.file;
        const std::string texts = test::read_text(dir / m.segments[i].texts.file);
        EXPECT_EQ(texts.find("\"doc_id\":\"d8\""), std::string::npos) << "deleted";
        EXPECT_EQ(texts.find("\"doc_id\":\"d5\",\"doc_version\":1"), std::string::npos) << "replaced";
        EXPECT_NE(texts.find("\"metadata\":{\"seed\":"), std::string::npos) << "metadata kept";
    }

    // Record by record: the live ones in their order, under new ids, same memory, text, document.
    for (uint32_t j = 0; j < live.size(); ++j) {
        const uint32_t i = live[j];
        const std::string a = before->record(i), b = after->record(j);
        const MemorySpec& spec = before->model().spec;
        const auto ma = decode_memory_record(reinterpret_cast<const uint8_t*>(a.data()), a.size(), i, spec, &before->codec(), "before");
        const auto mb = decode_memory_record(reinterpret_cast<const uint8_t*>(b.data()), b.size(), j, spec, &after->codec(), "after");
        EXPECT_EQ(ma->indices, mb->indices);
        EXPECT_EQ(ma->key_codes, mb->key_codes);
        EXPECT_EQ(ma->value_codes, mb->value_codes);
        EXPECT_EQ(after->reference(j).text, before->reference(i).text);
        EXPECT_EQ(after->reference(j).tokens, before->reference(i).tokens);
        EXPECT_EQ(after->reference(j).doc_id, before->reference(i).doc_id);
        EXPECT_EQ(after->reference(j).doc_version, before->reference(i).doc_version) << "record " << i;
        EXPECT_EQ(vector_of(*after, j), vector_of(*before, i));
    }
    EXPECT_EQ(after->documents().find("d5")->version, 2u);
    EXPECT_EQ(after->documents().find("d0")->version, 1u);

    // Every query answers the same (doc, text, score), retired records' own queries included.
    EXPECT_GT(test::expect_same_rankings(*before, *after, *before, 7), 30u);
    EXPECT_GT(test::expect_same_rankings(*before, *after, *before, static_cast<int>(before->count())), 30u);
    // The reader that opened version 3 keeps working (its blobs are untouched).
    for (uint32_t id : live) EXPECT_NO_THROW(before->record(id));
    // Nothing retired any more: nothing to do, nothing published.
    const kb::BankCompactReport again = compact(dir);
    EXPECT_EQ(again.version, 0u);
    EXPECT_EQ(kb::Bank::current_version(*kb::open_folder_storage(dir.string(), false)), 4u);
    EXPECT_FALSE(fs::exists(dir / "manifest-000005.json"));
}

// Replaces the texts file of a bank's first segment by `t`, fixing its checksum and size in the
// manifest.
void rewrite_texts(const fs::path& dir, const std::string& t) {
    const fs::path texts = dir / "texts-000001-0000.jsonl";
    std::string manifest = test::read_text(dir / "manifest-000001.json");
    const std::string old_text = test::read_text(texts);
    const std::string old_sha = kb::sha256_hex(old_text);
    const size_t at = manifest.find(old_sha);
    manifest.replace(at, 64, kb::sha256_hex(t));
    const std::string old_bytes = "\"bytes\":" + std::to_string(old_text.size());
    const size_t bytes_at = manifest.find(old_bytes, at);
    ASSERT_NE(bytes_at, std::string::npos) << "the texts entry's size follows its checksum";
    manifest.replace(bytes_at, old_bytes.size(), "\"bytes\":" + std::to_string(t.size()));
    test::write_text(texts, t);
    test::write_text(dir / "manifest-000001.json", manifest);
}

// A bank written before document versions (texts lines without "doc_version", as the bank shipped
// before issue 27 was): each document's version is the one in its segment's name. A texts line
// claiming a later version than its manifest is refused.
TEST_F(KbBankCorrect, DocumentVersionsOfOlderBanksAndBadOnes) {
    const auto shipped = open_kb_bank(fs::path(MNEMO_SOURCE_DIR) / "assets/world/bank");
    EXPECT_EQ(shipped->reference(0).doc_version, 1u);
    ASSERT_NE(shipped->documents().find("e0"), nullptr);
    EXPECT_EQ(shipped->documents().find("e0")->version, 1u);
    EXPECT_EQ(shipped->documents().all().size(), 2800u) << "one document per entity of assets/world";

    const fs::path older = copy_base("older");
    std::string lines = test::read_text(older / "texts-000001-0000.jsonl");
    for (size_t at; (at = lines.find("\"doc_version\":1,")) != std::string::npos;) lines.erase(at, 16);
    rewrite_texts(older, lines);
    const auto old_bank = open_kb_bank(older);
    ASSERT_FALSE(old_bank->documents().all().empty());
    for (const auto& d : old_bank->documents().all()) EXPECT_EQ(d.version, 1u) << "from seg-000001's name";
    EXPECT_EQ(old_bank->reference(0).doc_version, 1u);

    expect_texts_edit_refused("bad-doc-version", "\"doc_version\":1", "\"doc_version\":7",
                              {"texts-000001-0000.jsonl", "line 1", "'doc_version'", "[0, 1]"});
}

// Each reference keeps its document's title tokenized (BM25 counts it: mnemo/memory/retrieval_terms.hpp);
// a bank written before has none and opens, its references counted by their text alone; a bad list
// is an error naming the file, the line and the field.
TEST_F(KbBankCorrect, TitleTokensOfNewOlderAndBadBanks) {
    const auto base = open_kb_bank(*root_ / "base");
    const auto tok = load_tokenizer(test::model_dir("memory3-tiny-bpe"));
    for (uint32_t id = 0; id < base->count(); ++id) {
        ASSERT_FALSE(base->reference(id).title.empty());
        EXPECT_EQ(base->reference(id).title_tokens, tok->encode(base->reference(id).title, false)) << "record " << id;
    }

    const fs::path older = copy_base("older-titles");
    std::string lines = test::read_text(older / "texts-000001-0000.jsonl");
    for (size_t at; (at = lines.find(",\"title_tokens\":[")) != std::string::npos;) lines.erase(at, lines.find(']', at) + 1 - at);
    rewrite_texts(older, lines);
    const auto old_bank = open_kb_bank(older);
    const auto first_segment = static_cast<uint32_t>(std::count(lines.begin(), lines.end(), '\n'));
    ASSERT_GT(first_segment, 0u);
    for (uint32_t id = 0; id < first_segment; ++id) EXPECT_TRUE(old_bank->reference(id).title_tokens.empty()) << "record " << id;

    expect_texts_edit_refused("bad-title-tokens", "\"title_tokens\":[", "\"title_tokens\":[-3,",
                              {"texts-000001-0000.jsonl", "line 1", "'title_tokens' holds a non-token value"});
}

TEST_F(KbBankCorrect, RetiredRangesInTheManifestAreChecked) {
    const std::string base = test::read_text(*root_ / "base" / "manifest-000001.json");
    const kb::BankManifest m1 = kb::manifest_from_json(base, "m");
    const std::string n = std::to_string(m1.count);
    ASSERT_GE(m1.count, 20u);
    auto with = [&](const std::string& format, const std::string& retired) {
        std::string t = base;
        t.replace(t.find("\"format_version\":1"), 18, "\"format_version\":" + format);
        t.insert(t.rfind('}'), ",\"retired\":" + retired);
        return t;
    };
    const kb::BankManifest ok = kb::manifest_from_json(with("2", "[[3,2],[9,1]]"), "m");
    ASSERT_EQ(ok.retired.size(), 2u);
    EXPECT_EQ(ok.retired[1].first, 9u);
    EXPECT_EQ(kb::manifest_from_json(kb::manifest_to_json(ok), "again").retired, ok.retired);
    EXPECT_NE(kb::manifest_to_json(ok).find("\"format_version\":2"), std::string::npos);
    expect_error_with([&] { kb::manifest_from_json(with("1", "[[3,2]]"), "m"); }, {"'retired' needs format_version 2"});
    expect_error_with([&] { kb::manifest_from_json(with("3", "[[3,2]]"), "m"); }, {"format_version 3 is not supported"});
    expect_error_with([&] { kb::manifest_from_json(with("2", "[[3,2],[4,1]]"), "m"); }, {"retired[1]", "sorted, disjoint and merged"});
    expect_error_with([&] { kb::manifest_from_json(with("2", "[[3,2],[5,1]]"), "m"); }, {"retired[1]", "not after"});
    expect_error_with([&] { kb::manifest_from_json(with("2", "[[" + std::to_string(m1.count - 1) + ",2]]"), "m"); }, {"retired[0]", "[0, " + n + ")"});
    expect_error_with([&] { kb::manifest_from_json(with("2", "[[3,0]]"), "m"); }, {"retired[0]", "non-empty"});
    expect_error_with([&] { kb::manifest_from_json(with("2", "[[3]]"), "m"); }, {"retired[0]", "[first_id, count]"});
    expect_error_with([&] { kb::manifest_from_json(with("2", "{}"), "m"); }, {"retired", "array"});
    // The writer's merge: sorted, repeats once, neighbours joined.
    const std::vector<kb::IdRange> merged = kb::retire_ids({{2, 2}}, {9, 5, 1, 4, 9});
    EXPECT_EQ(merged, (std::vector<kb::IdRange>{{1, 5}, {9, 1}}));
    const kb::RetiredSet set(merged);
    EXPECT_EQ(set.size(), 6u);
    for (uint32_t id = 0; id < 12; ++id) EXPECT_EQ(set.contains(id), (id >= 1 && id <= 5) || id == 9) << id;
}

}  // namespace
