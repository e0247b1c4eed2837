// A bank's codec fit (server/README.md, "Codec fit"; server/src/bank/bank_codec_fit.hpp): `build`
// measures how well the codec it trained reconstructs the corpus's memories and records it in the
// manifest; `add` measures what it encodes with that codec, carries the recorded fit into the new
// version (as `delete` and `compact` do) and notes when the new memories reconstruct markedly
// worse. The tiny memory3 model and the tiny codec of the correcting tests (kb_corrected_bank.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "bank/bank_codec_fit.hpp"
#include "bank/bank_compact.hpp"
#include "bank/bank_delete.hpp"
#include "bank/bank_format.hpp"
#include "fixtures/kb_corrected_bank.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using test::expect_error_with;

namespace {

class KbCodecFit : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        root_ = new fs::path(fs::temp_directory_path() / ("mnemo-kb-codec-fit-" + std::to_string(::getpid())));
        fs::remove_all(*root_);
        std::string corpus;
        for (int d = 0; d < 24; ++d) corpus += test::kb_doc_line(std::string("d") + std::to_string(d), 100 + d);
        test::write_text(*root_ / "corpus.jsonl", corpus);
        session_ = test::open_model(test::model_dir("memory3-tiny-bpe"), 128).release();
        built_ = new kb::BankBuildReport(kb::build_bank(*session_, test::kb_small_build(*root_ / "base", (*root_ / "corpus.jsonl").string())));
    }
    static void TearDownTestSuite() {
        fs::remove_all(*root_);
        delete built_;
        delete session_;
        delete root_;
    }

    static kb::BankManifest manifest(const fs::path& bank, int version) {
        char name[32];
        std::snprintf(name, sizeof name, "manifest-%06d.json", version);
        return kb::manifest_from_json(test::read_text(bank / name), name);
    }
    static kb::BankBuildReport add(const fs::path& bank, const std::string& lines) {
        test::write_text(*root_ / "more.jsonl", lines);
        kb::BankBuildOptions o = test::kb_small_build(bank, (*root_ / "more.jsonl").string());
        o.add = true;
        return kb::build_bank(*session_, o);
    }

    static inline fs::path* root_ = nullptr;
    static inline Session* session_ = nullptr;
    static inline kb::BankBuildReport* built_ = nullptr;
};

void expect_same_fit(const std::optional<kb::CodecFitFigures>& a, const std::optional<kb::CodecFitFigures>& b) {
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->keys, b->keys);  // exact: the JSON keeps the shortest round-trip form
    EXPECT_EQ(a->values, b->values);
    EXPECT_EQ(a->records, b->records);
}

TEST_F(KbCodecFit, ABuildRecordsItsCodecsFitAndEveryLaterVersionKeepsIt) {
    const kb::BankBuildReport& r = *built_;
    ASSERT_TRUE(r.codec_trained);
    ASSERT_TRUE(r.trained_fit);
    EXPECT_EQ(r.trained_fit->records, r.references);
    // A real error: positive (a 4-bit-per-dimension codec does not reconstruct exactly), small.
    EXPECT_GT(r.trained_fit->keys, 0.0);
    EXPECT_GT(r.trained_fit->values, 0.0);
    EXPECT_LT(r.trained_fit->keys, 1.0);
    EXPECT_LT(r.trained_fit->values, 1.0);
    EXPECT_EQ(r.trained_fit->keys, r.codec_fit.keys.relative_sq());
    expect_same_fit(manifest(*root_ / "base", 1).codec_fit, r.trained_fit);

    const fs::path bank = *root_ / "kept";
    test::copy_kb_bank(*root_ / "base", bank);
    std::string more;
    for (int d = 0; d < 4; ++d) more += test::kb_doc_line(std::string("n") + std::to_string(d), 500 + d);
    const kb::BankBuildReport a = add(bank, more + test::kb_doc_line("d3", 900));
    EXPECT_FALSE(a.codec_trained);
    expect_same_fit(a.trained_fit, r.trained_fit);
    // What add encoded is measured on its own records, not copied from the manifest.
    EXPECT_GT(a.codec_fit.keys.relative_sq(), 0.0);
    EXPECT_NE(a.codec_fit.keys.relative_sq(), r.trained_fit->keys);
    expect_same_fit(manifest(bank, 2).codec_fit, r.trained_fit);
    kb::delete_documents(kb::open_folder_storage(bank.string(), false), {"n0"});
    expect_same_fit(manifest(bank, 3).codec_fit, r.trained_fit);
    kb::BankCompactOptions c;
    c.storage = kb::open_folder_storage(bank.string(), false);
    kb::compact_bank(c);
    expect_same_fit(manifest(bank, 4).codec_fit, r.trained_fit);
}

TEST_F(KbCodecFit, AddNotesMemoriesTheCodecFitsWorse) {
    // The corpus's own texts under new ids: the same memories, so the same fit, and no note.
    const fs::path like = *root_ / "like";
    test::copy_kb_bank(*root_ / "base", like);
    std::string same;
    for (int d = 0; d < 24; ++d) same += test::kb_doc_line(std::string("again") + std::to_string(d), 100 + d);
    const kb::BankBuildReport a = add(like, same);
    EXPECT_NEAR(a.codec_fit.keys.relative_sq(), built_->trained_fit->keys, 1e-12);
    EXPECT_NEAR(a.codec_fit.values.relative_sq(), built_->trained_fit->values, 1e-12);
    EXPECT_TRUE(a.notes.empty()) << a.notes.front();

    // New text: other draws of the corpus's words. This tiny codec learned its 114 records by
    // heart (keys 0.023, values 0.0003; FAISS wants more vectors than it had), so even these
    // reconstruct worse (about 2x and 26x): a note, as for documents of another kind below.
    const fs::path more = *root_ / "more";
    test::copy_kb_bank(*root_ / "base", more);
    std::string fresh;
    for (int d = 0; d < 6; ++d) fresh += test::kb_doc_line(std::string("s") + std::to_string(d), 700 + d);
    const kb::BankBuildReport b = add(more, fresh);
    ASSERT_EQ(b.notes.size(), 1u);
    EXPECT_NE(b.notes[0].find(std::to_string(b.references) + " new records"), std::string::npos) << b.notes[0];
    EXPECT_NE(b.notes[0].find("the " + std::to_string(built_->references) + " it was trained on"), std::string::npos) << b.notes[0];

    // Text of another kind (digits and symbols the corpus never had) reconstructs worse still;
    // noted, not refused: the version is published.
    const fs::path other = *root_ / "other";
    test::copy_kb_bank(*root_ / "base", other);
    std::string odd;
    for (int d = 0; d < 6; ++d)
        odd += std::string("{\"id\": \"x") + std::to_string(d) + "\", \"text\": \"" + std::to_string(9137 * (d + 3)) + " %$# 0x" +
               std::to_string(77 * d + 13) + " ~~ ;; " + std::to_string(40213 + d) + " {} [] | 5.5e-3\"}\n";
    const kb::BankBuildReport c = add(other, odd);
    EXPECT_GT(c.codec_fit.keys.relative_sq(), b.codec_fit.keys.relative_sq());
    EXPECT_GT(c.codec_fit.values.relative_sq(), b.codec_fit.values.relative_sq());
    ASSERT_EQ(c.notes.size(), 1u);
    EXPECT_NE(c.notes[0].find("mnemo-kb build"), std::string::npos) << c.notes[0];
    EXPECT_EQ(c.version, 2u);
}

TEST(KbCodecDrift, TheNoteComparesKeysAndValuesWithTheTrainingCorpus) {
    const kb::CodecFitFigures trained{0.002, 0.004, 8400};
    EXPECT_FALSE(kb::codec_drift_note(trained, {0.0021, 0.0043, 510}));  // 1.05x, 1.08x: like the corpus
    EXPECT_FALSE(kb::codec_drift_note(trained, {0.0029, 0.0059, 10}));   // just under 1.5x
    const std::optional<std::string> keys = kb::codec_drift_note(trained, {0.005, 0.0042, 1560});
    ASSERT_TRUE(keys);
    for (const char* needle : {"1560 new records", "8400 it was trained on", "keys 2.50x", "0.005 vs 0.002", "values 1.05x",
                               "mnemo-kb build", "Codec fit"})
        EXPECT_NE(keys->find(needle), std::string::npos) << needle << " in " << *keys;
    EXPECT_TRUE(kb::codec_drift_note(trained, {0.002, 0.0061, 3}));  // values alone
    // Nothing to compare: a codec without error, or nothing added.
    EXPECT_FALSE(kb::codec_drift_note({0, 0.004, 10}, {0.1, 0.1, 3}));
    EXPECT_FALSE(kb::codec_drift_note(trained, {0.1, 0.1, 0}));
}

TEST_F(KbCodecFit, FitsInTheManifestAreCheckedAndOlderBanksHaveNone) {
    const std::string base = test::read_text(*root_ / "base" / "manifest-000001.json");
    const size_t at = base.find(",\"fit\":{");
    ASSERT_NE(at, std::string::npos) << base;
    const size_t end = base.find('}', at) + 1;
    auto with = [&](const std::string& fit) { return std::string(base).replace(at, end - at, fit); };
    // A bank built before fits were recorded: no fit, and writing it back adds none.
    const kb::BankManifest old = kb::manifest_from_json(with(""), "m");
    EXPECT_FALSE(old.codec_fit);
    EXPECT_EQ(kb::manifest_to_json(old).find("\"fit\""), std::string::npos);
    const kb::BankManifest ok = kb::manifest_from_json(with(",\"fit\":{\"keys\":0.5,\"values\":0,\"records\":7}"), "m");
    ASSERT_TRUE(ok.codec_fit);
    EXPECT_EQ(ok.codec_fit->keys, 0.5);
    EXPECT_EQ(ok.codec_fit->values, 0.0);
    EXPECT_EQ(ok.codec_fit->records, 7u);
    expect_same_fit(kb::manifest_from_json(kb::manifest_to_json(ok), "again").codec_fit, ok.codec_fit);
    expect_error_with([&] { kb::manifest_from_json(with(",\"fit\":{\"keys\":-0.1,\"values\":0,\"records\":7}"), "m"); },
                      {"m: codec: fit", "'keys' must be a finite number >= 0"});
    expect_error_with([&] { kb::manifest_from_json(with(",\"fit\":{\"keys\":0.1,\"values\":\"low\",\"records\":7}"), "m"); },
                      {"codec: fit", "'values'"});
    expect_error_with([&] { kb::manifest_from_json(with(",\"fit\":{\"keys\":0.1,\"values\":0.1}"), "m"); },
                      {"codec: fit", "missing 'records'"});
    expect_error_with([&] { kb::manifest_from_json(with(",\"fit\":[1,2]"), "m"); }, {"codec: fit", "expected an object"});
}

}  // namespace
