// `mnemo-kb verify` (server/src/bank/bank_verify.hpp, server/README.md "Checking a bank"): one
// bank of several small segments built per suite with the tiny memory3 model, then copies of it
// damaged one way each — a record's byte, a segment header's byte, a truncated segment, a texts,
// vectors or codebook blob changed, a blob gone, CURRENT naming a missing manifest — and verify
// must name what is wrong (and only that); garbage blobs are a note; --all-versions over add and
// delete versions; reading in bounded chunks, a record straddling two chunks; the CLI's exit
// codes and JSON.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <set>

#include "bank/bank_delete.hpp"
#include "bank/bank_format.hpp"
#include "bank/bank_verify.hpp"
#include "fixtures/kb_corrected_bank.hpp"
#include "mnemo/io/json.hpp"
#include "process_util.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using mnemo::testing::exited_with;
using mnemo::testing::run_program;
using mnemo::testing::shell_quote;

namespace {

bool mentions(const std::vector<std::string>& lines, const std::string& part) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const std::string& l : lines) s += l + "\n";
    return s;
}

kb::BankManifest manifest_of(const fs::path& bank, uint64_t version = 1) {
    return kb::manifest_from_json(test::read_text(bank / kb::manifest_name(version)), "test");
}

void flip_byte(const fs::path& file, uint64_t offset) {
    std::string bytes = test::read_text(file);
    ASSERT_LT(offset, bytes.size()) << file;
    bytes[offset] = static_cast<char>(bytes[offset] ^ 0x5a);
    test::write_text(file, bytes);
}

kb::BankVerifyReport verify(const fs::path& bank, bool all_versions = false, size_t chunk = size_t{8} << 20, unsigned threads = 2) {
    kb::BankVerifyOptions o;
    o.storage = kb::open_folder_storage(bank.string(), false);
    o.all_versions = all_versions;
    o.chunk_bytes = chunk;
    o.threads = threads;
    return kb::verify_bank(o);
}

const kb::VerifiedBlob* blob_named(const kb::BankVerifyReport& r, const std::string& file) {
    for (const kb::VerifiedBlob& b : r.blobs)
        if (b.check.blob.file == file) return &b;
    return nullptr;
}

// Every blob but `bad` is OK; `bad` is BAD with a problem mentioning `why`.
void expect_only_bad(const kb::BankVerifyReport& r, const std::string& bad, const std::string& why) {
    EXPECT_TRUE(r.damaged());
    for (const kb::VerifiedBlob& b : r.blobs) {
        if (b.check.blob.file == bad) {
            EXPECT_FALSE(b.ok()) << bad;
            EXPECT_TRUE(mentions(b.check.problems, why)) << bad << ":\n" << joined(b.check.problems);
        } else {
            EXPECT_TRUE(b.ok()) << b.check.blob.file << ":\n" << joined(b.check.problems);
        }
    }
    EXPECT_NE(blob_named(r, bad), nullptr) << bad << " was not checked";
}

// A storage whose segment readers record the largest single read and can fail at one offset: how
// verify reads (never a whole segment at once) and what a failed read does.
class WatchedStorage final : public kb::BankStorage {
public:
    explicit WatchedStorage(std::shared_ptr<kb::BankStorage> inner) : inner_(std::move(inner)) {}
    std::string describe() const override { return inner_->describe(); }
    std::optional<std::string> read_blob(const std::string& n, uint64_t max) const override {
        if (n.rfind("seg-", 0) == 0) whole_segment_reads++;
        return inner_->read_blob(n, max);
    }
    std::unique_ptr<kb::BlobReader> open_blob(const std::string& n) const override {
        return std::make_unique<Reader>(inner_->open_blob(n), *this, n.rfind("seg-", 0) == 0);
    }
    bool exists(const std::string& n) const override { return inner_->exists(n); }
    std::vector<std::string> list() const override { return inner_->list(); }
    void write_blob(const std::string& n, std::string_view b) override { inner_->write_blob(n, b); }
    void publish_pointer(const std::string& n, std::string_view b, const std::optional<std::string>& e) override {
        inner_->publish_pointer(n, b, e);
    }
    std::unique_ptr<kb::WriterLock> lock_writer(const std::string& who) override { return inner_->lock_writer(who); }
    void remove_blob(const std::string& n) override { inner_->remove_blob(n); }

    mutable std::atomic<size_t> largest_segment_read{0};
    mutable std::atomic<int> whole_segment_reads{0};
    uint64_t fail_segment_read_at = UINT64_MAX;  // a segment read covering this offset fails

private:
    class Reader final : public kb::BlobReader {
    public:
        Reader(std::unique_ptr<kb::BlobReader> r, const WatchedStorage& s, bool segment) : r_(std::move(r)), s_(s), segment_(segment) {}
        uint64_t size() const override { return r_->size(); }
        void read(uint64_t offset, void* dst, size_t n) const override {
            if (segment_) {
                size_t seen = s_.largest_segment_read.load();
                while (n > seen && !s_.largest_segment_read.compare_exchange_weak(seen, n)) {
                }
                if (s_.fail_segment_read_at >= offset && s_.fail_segment_read_at < offset + n) throw Error("injected read error");
            }
            r_->read(offset, dst, n);
        }

    private:
        std::unique_ptr<kb::BlobReader> r_;
        const WatchedStorage& s_;
        bool segment_;
    };
    std::shared_ptr<kb::BankStorage> inner_;
};

class KbVerify : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        root_ = new fs::path(fs::temp_directory_path() / ("mnemo-kb-verify-" + std::to_string(::getpid())));
        fs::remove_all(*root_);
        std::string corpus;
        for (int d = 0; d < 24; ++d) corpus += test::kb_doc_line(std::string("d") + std::to_string(d), 100 + d);
        test::write_text(*root_ / "corpus.jsonl", corpus);
        session_ = test::open_model(test::model_dir("memory3-tiny-bpe"), 128).release();
        kb::build_bank(*session_, test::kb_small_build(base(), (*root_ / "corpus.jsonl").string()));
    }
    static void TearDownTestSuite() {
        fs::remove_all(*root_);
        delete session_;
        delete root_;
    }
    static fs::path base() { return *root_ / "base"; }
    static fs::path copy_base(const std::string& name) {
        test::copy_kb_bank(base(), *root_ / name);
        return *root_ / name;
    }

    static inline fs::path* root_ = nullptr;
    static inline Session* session_ = nullptr;
};

TEST_F(KbVerify, ACleanBankHasNoDamage) {
    const kb::BankManifest m = manifest_of(base());
    ASSERT_GE(m.segments.size(), 3u) << "the fixture makes several segments";
    const kb::BankVerifyReport r = verify(base());
    EXPECT_FALSE(r.damaged());
    EXPECT_EQ(r.current_version, 1u);
    EXPECT_TRUE(r.current_problems.empty()) << joined(r.current_problems);
    ASSERT_EQ(r.versions.size(), 1u);
    const kb::VersionVerdict& v = r.versions[0];
    EXPECT_TRUE(v.ok()) << joined(v.problems);
    EXPECT_TRUE(v.published);
    EXPECT_EQ(v.records, m.count);
    EXPECT_EQ(v.records_checked, m.count);
    EXPECT_EQ(v.bad_records, 0u);
    // Every blob the manifest names, each read whole once.
    uint64_t blob_bytes = m.keys_codebook.bytes + m.values_codebook.bytes;
    for (const kb::SegmentEntry& s : m.segments) blob_bytes += s.records.bytes + s.texts.bytes + s.vectors.bytes;
    for (const kb::TokenizerFile& t : m.tokenizer) blob_bytes += t.blob.bytes;
    size_t index_blobs = 0;
    if (m.index) {
        blob_bytes += m.index->bm25.bytes;
        ++index_blobs;
        if (m.index->vectors_kind == kb::kIndexIvfFlat) {
            blob_bytes += m.index->vectors.bytes;
            ++index_blobs;
        }
        EXPECT_NE(blob_named(r, m.index->bm25.file), nullptr);
    }
    EXPECT_EQ(r.blobs.size(), 2 + 3 * m.segments.size() + m.tokenizer.size() + index_blobs);
    EXPECT_EQ(v.blobs.size(), r.blobs.size());
    uint64_t read = 0;
    for (const kb::VerifiedBlob& b : r.blobs) {
        EXPECT_TRUE(b.ok()) << b.check.blob.file << ": " << joined(b.check.problems);
        EXPECT_EQ(b.check.bytes_read, b.check.blob.bytes) << b.check.blob.file;
        read += b.check.bytes_read;
    }
    EXPECT_EQ(read, blob_bytes);
    EXPECT_GE(r.bytes_read, blob_bytes);
    EXPECT_TRUE(r.garbage.empty()) << joined(r.garbage);
    EXPECT_GT(r.mb_per_second(), 0);
}

TEST_F(KbVerify, AFlippedRecordByteNamesTheRecordAndItsSegment) {
    const fs::path dir = copy_base("record");
    const kb::BankManifest m = manifest_of(dir);
    const kb::SegmentEntry& s = m.segments[1];
    const uint32_t id = s.first_id + 3;
    flip_byte(dir / s.records.file, kb::kSegmentHeaderBytes + 3 * m.record_bytes + m.record_bytes / 2);  // in the payload
    const kb::BankVerifyReport r = verify(dir);
    expect_only_bad(r, s.records.file, "SHA-256");
    const kb::VersionVerdict& v = r.versions.at(0);
    EXPECT_EQ(v.records_checked, m.count);
    EXPECT_EQ(v.bad_records, 1u);
    EXPECT_EQ(v.bad_blobs, 1u);
    ASSERT_EQ(v.first_bad.size(), 1u);
    EXPECT_EQ(v.first_bad[0].id, id);
    EXPECT_EQ(v.first_bad[0].segment, s.records.file);
    EXPECT_NE(v.first_bad[0].reason.find("checksum mismatch"), std::string::npos) << v.first_bad[0].reason;
    EXPECT_FALSE(v.first_bad[0].retired);
}

TEST_F(KbVerify, AFlippedSegmentHeaderByteIsNamedAndTheRecordsStillChecked) {
    const fs::path dir = copy_base("header");
    const kb::BankManifest m = manifest_of(dir);
    const kb::SegmentEntry& s = m.segments[0];
    flip_byte(dir / s.records.file, 20);  // the header's record count
    const kb::BankVerifyReport r = verify(dir);
    expect_only_bad(r, s.records.file, "header says ids");
    EXPECT_TRUE(mentions(blob_named(r, s.records.file)->check.problems, "SHA-256"));
    EXPECT_EQ(r.versions.at(0).records_checked, m.count);
    EXPECT_EQ(r.versions.at(0).bad_records, 0u);
}

TEST_F(KbVerify, ATruncatedSegmentLosesItsLastRecords) {
    const fs::path dir = copy_base("truncated");
    const kb::BankManifest m = manifest_of(dir);
    const kb::SegmentEntry& s = m.segments[2];
    fs::resize_file(dir / s.records.file, s.records.bytes - m.record_bytes - m.record_bytes / 2);  // one and a half records short
    const kb::BankVerifyReport r = verify(dir);
    expect_only_bad(r, s.records.file, "(truncated)");
    const kb::VersionVerdict& v = r.versions.at(0);
    EXPECT_EQ(v.bad_records, 2u);
    EXPECT_EQ(v.records_checked, m.count - 2);
    ASSERT_EQ(v.first_bad.size(), 2u);
    EXPECT_EQ(v.first_bad[0].id, s.first_id + s.count - 2);
    EXPECT_EQ(v.first_bad[1].id, s.first_id + s.count - 1);
    EXPECT_NE(v.first_bad[0].reason.find("the segment ends at byte"), std::string::npos) << v.first_bad[0].reason;
}

TEST_F(KbVerify, AChangedTextsVectorsOrCodebookBlobFailsItsHash) {
    const kb::BankManifest m = manifest_of(base());
    for (const kb::BlobRef& b : {m.segments[1].texts, m.segments[3].vectors, m.values_codebook}) {
        SCOPED_TRACE(b.file);
        const fs::path dir = copy_base("changed");
        flip_byte(dir / b.file, b.bytes - 3);
        const kb::BankVerifyReport r = verify(dir);
        expect_only_bad(r, b.file, "does not match the manifest's " + b.sha256);
        const kb::VersionVerdict& v = r.versions.at(0);
        EXPECT_EQ(v.records_checked, m.count);  // without the codec too (header and CRC)
        EXPECT_EQ(v.bad_records, 0u);
        EXPECT_EQ(mentions(v.problems, "codec unusable"), b.file == m.values_codebook.file) << joined(v.problems);
    }
}

TEST_F(KbVerify, AChangedIndexBlobFailsItsHash) {
    const kb::BankManifest m = manifest_of(base());
    if (!m.index) GTEST_SKIP() << "this build's writer stores no retrieval index in the manifest";
    const fs::path dir = copy_base("index");
    flip_byte(dir / m.index->bm25.file, m.index->bm25.bytes / 2);
    expect_only_bad(verify(dir), m.index->bm25.file, "does not match the manifest's " + m.index->bm25.sha256);
}

TEST_F(KbVerify, AMissingBlobIsNamed) {
    const kb::BankManifest m = manifest_of(base());
    {
        const fs::path dir = copy_base("missing-vectors");
        fs::remove(dir / m.segments[0].vectors.file);
        const kb::BankVerifyReport r = verify(dir);
        expect_only_bad(r, m.segments[0].vectors.file, "missing");
        EXPECT_EQ(r.versions.at(0).bad_records, 0u);
    }
    const fs::path dir = copy_base("missing-segment");
    const kb::SegmentEntry& s = m.segments[1];
    fs::remove(dir / s.records.file);
    const kb::BankVerifyReport r = verify(dir);
    expect_only_bad(r, s.records.file, "missing");
    EXPECT_EQ(r.versions.at(0).bad_records, s.count);  // none of its records can be read
    EXPECT_EQ(r.versions.at(0).records_checked, m.count - s.count);
}

TEST_F(KbVerify, CurrentNamingAMissingManifestIsDamage) {
    const fs::path dir = copy_base("current");
    test::write_text(dir / "CURRENT", kb::current_pointer_content(9));
    kb::BankVerifyReport r = verify(dir);
    EXPECT_TRUE(r.damaged());
    EXPECT_TRUE(mentions(r.current_problems, "names manifest-000009.json, which is missing")) << joined(r.current_problems);
    // --all-versions still checks what is stored: version 1 is whole.
    r = verify(dir, true);
    EXPECT_TRUE(r.damaged());
    ASSERT_EQ(r.versions.size(), 2u);
    EXPECT_TRUE(r.versions[0].ok()) << joined(r.versions[0].problems);
    EXPECT_EQ(r.versions[0].records_checked, r.versions[0].records);
    EXPECT_FALSE(r.versions[1].ok());
    EXPECT_EQ(r.versions[1].version, 9u);

    test::write_text(dir / "CURRENT", "manifest-banana.json\n");
    r = verify(dir);
    EXPECT_TRUE(r.damaged());
    EXPECT_TRUE(mentions(r.current_problems, "not a number")) << joined(r.current_problems);
    EXPECT_TRUE(mentions(r.notes, "--all-versions")) << joined(r.notes);
}

TEST_F(KbVerify, GarbageBlobsAreANoteNotDamage) {
    const fs::path dir = copy_base("garbage");
    test::write_text(dir / "seg-000002-0000.rec", "left by an interrupted add");
    test::write_text(dir / "stray", "x");
    const kb::BankVerifyReport r = verify(dir);
    EXPECT_FALSE(r.damaged());
    EXPECT_EQ(r.garbage, (std::vector<std::string>{"seg-000002-0000.rec", "stray"}));
    const auto out = run_program("mnemo-kb", "verify " + shell_quote(dir.string()));
    EXPECT_TRUE(exited_with(out, 0, {"2 blobs no stored manifest names", "seg-000002-0000.rec", "OK, no damage found"}));
}

TEST_F(KbVerify, AllVersionsChecksEveryStoredVersionReadingSharedBlobsOnce) {
    const fs::path dir = copy_base("versions");
    const std::vector<uint32_t> d5 = test::open_kb_bank(dir)->documents().find("d5")->ids;  // retired by version 3 only
    ASSERT_FALSE(d5.empty());
    test::write_text(*root_ / "more.jsonl", test::kb_doc_line("d3", 9003) + test::kb_doc_line("n1", 9001));
    kb::BankBuildOptions add = test::kb_small_build(dir, (*root_ / "more.jsonl").string());
    add.add = true;
    kb::build_bank(*session_, add);                                                     // v2 replaces d3
    kb::delete_documents(kb::open_folder_storage(dir.string(), false), {"d5"});  // v3 retires d5
    const kb::BankManifest v1 = manifest_of(dir, 1), v3 = manifest_of(dir, 3);
    ASSERT_FALSE(v3.retired.empty());
    uint64_t retired = 0;
    for (const kb::IdRange& x : v3.retired) retired += x.count;

    kb::BankVerifyReport r = verify(dir, true);
    EXPECT_FALSE(r.damaged());
    ASSERT_EQ(r.versions.size(), 3u);
    for (const kb::VersionVerdict& v : r.versions) {
        EXPECT_TRUE(v.ok()) << v.version << ": " << joined(v.problems);
        EXPECT_EQ(v.records_checked, v.records) << v.version;  // retired ones are checked too
        EXPECT_EQ(v.published, v.version == 3);
    }
    EXPECT_EQ(r.versions[2].retired, retired);
    EXPECT_EQ(r.versions[2].records, v3.count);
    // A blob several versions name is read once: the blobs are the distinct names.
    std::set<std::string> names;
    for (const kb::VerifiedBlob& b : r.blobs) names.insert(b.check.blob.file);
    EXPECT_EQ(names.size(), r.blobs.size());
    EXPECT_EQ(blob_named(r, v1.segments[0].records.file)->versions, (std::vector<uint64_t>{1, 2, 3}));
    EXPECT_TRUE(r.garbage.empty()) << joined(r.garbage);
    EXPECT_EQ(verify(dir).versions.size(), 1u);  // without the flag, the published version only

    // A damaged record that version 3 retires: every version names it, version 3 as retired.
    const uint32_t id = d5.back();
    size_t si = 0;
    while (si + 1 < v1.segments.size() && v1.segments[si + 1].first_id <= id) ++si;
    const kb::SegmentEntry& s = v1.segments[si];
    flip_byte(dir / s.records.file, kb::kSegmentHeaderBytes + (id - s.first_id) * v3.record_bytes + 13);  // its stored CRC
    r = verify(dir, true);
    EXPECT_TRUE(r.damaged());
    for (const kb::VersionVerdict& v : r.versions) {
        ASSERT_EQ(v.first_bad.size(), 1u) << v.version;
        EXPECT_EQ(v.first_bad[0].id, id);
        EXPECT_EQ(v.first_bad[0].retired, v.version == 3) << v.version;
        EXPECT_EQ(v.bad_retired, v.version == 3 ? 1u : 0u);
    }
}

TEST_F(KbVerify, ReadsSegmentsInBoundedChunksAcrossRecordBoundaries) {
    const fs::path dir = copy_base("chunks");
    const kb::BankManifest m = manifest_of(dir);
    const kb::SegmentEntry& s = m.segments[1];
    // A chunk that ends in the middle of the segment's record 2: its second half arrives with the
    // next chunk. The damage is in that second half.
    const size_t chunk = kb::kSegmentHeaderBytes + 2 * m.record_bytes + m.record_bytes / 3;
    flip_byte(dir / s.records.file, kb::kSegmentHeaderBytes + 2 * m.record_bytes + m.record_bytes / 2);
    for (size_t c : {chunk, size_t{7}, size_t{m.record_bytes - 1}, size_t{m.record_bytes + 1}, size_t{1} << 20}) {
        SCOPED_TRACE("chunk " + std::to_string(c));
        auto watched = std::make_shared<WatchedStorage>(kb::open_folder_storage(dir.string(), false));
        kb::BankVerifyOptions o;
        o.storage = watched;
        o.chunk_bytes = c;
        o.threads = 3;
        const kb::BankVerifyReport r = kb::verify_bank(o);
        const kb::VersionVerdict& v = r.versions.at(0);
        EXPECT_EQ(v.records_checked, m.count);
        EXPECT_EQ(v.bad_records, 1u);
        ASSERT_EQ(v.first_bad.size(), 1u);
        EXPECT_EQ(v.first_bad[0].id, s.first_id + 2);
        EXPECT_EQ(watched->whole_segment_reads.load(), 0);
        EXPECT_LE(watched->largest_segment_read.load(), c);
    }
}

TEST_F(KbVerify, AFailedReadIsNamedAndTheUnreadRecordsAreBad) {
    const kb::BankManifest m = manifest_of(base());
    auto watched = std::make_shared<WatchedStorage>(kb::open_folder_storage(base().string(), false));
    // The last byte of every segment's sixth record: reads of one record's size each, so the
    // first five records arrive whole before the read that fails.
    watched->fail_segment_read_at = kb::kSegmentHeaderBytes + 6 * m.record_bytes - 1;
    kb::BankVerifyOptions o;
    o.storage = watched;
    o.chunk_bytes = m.record_bytes;
    const kb::BankVerifyReport r = kb::verify_bank(o);
    EXPECT_TRUE(r.damaged());
    const kb::VerifiedBlob* b = blob_named(r, m.segments[0].records.file);
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(mentions(b->check.problems, "injected read error")) << joined(b->check.problems);
    EXPECT_EQ(b->check.records_checked, 5u);
    EXPECT_EQ(b->check.bad_records(), m.segments[0].count - 5);
}

TEST_F(KbVerify, TheCliExitsZeroOneOrTwoAndPrintsOneJsonObject) {
    auto run = [](const std::string& args) { return run_program("mnemo-kb", "verify " + args, 120); };
    EXPECT_TRUE(exited_with(run(shell_quote(base().string())), 0, {"OK   CURRENT -> version 1", "OK   segment", "OK, no damage found"}));

    const fs::path dir = copy_base("cli");
    const kb::BankManifest m = manifest_of(dir);
    const kb::SegmentEntry& s = m.segments[0];
    flip_byte(dir / s.records.file, kb::kSegmentHeaderBytes + 4 * m.record_bytes + 40);
    EXPECT_TRUE(exited_with(run(shell_quote(dir.string())), 1,
                            {"BAD  segment", s.records.file, "bad record " + std::to_string(s.first_id + 4), "DAMAGE FOUND"}));

    const auto out = run(shell_quote(dir.string()) + " --json --threads 1");
    ASSERT_TRUE(exited_with(out, 1));
    const json::Value j = json::parse(out.output, "verify --json");  // one object, nothing else on stdout or stderr
    ASSERT_TRUE(j.is_object());
    EXPECT_FALSE(j.find("ok")->as_bool());
    const json::Value& v = j.find("versions")->as_array().at(0);
    EXPECT_EQ(v.find("bad_records")->as_int(), 1);
    EXPECT_EQ(v.find("first_bad_records")->as_array().at(0).find("id")->as_int(), s.first_id + 4);
    EXPECT_EQ(v.find("first_bad_records")->as_array().at(0).find("segment")->as_string(), s.records.file);
    EXPECT_GT(j.find("bytes_read")->as_int(), 0);
    EXPECT_EQ(j.find("threads")->as_int(), 1);

    EXPECT_TRUE(exited_with(run(shell_quote((*root_ / "no-such-bank").string())), 2, {"does not exist"}));
    fs::create_directories(*root_ / "empty");
    EXPECT_TRUE(exited_with(run(shell_quote((*root_ / "empty").string()) + " --json"), 2, {"not a bank", "\"error\""}));
    EXPECT_TRUE(exited_with(run(shell_quote(dir.string()) + " --threads 0"), 2, {"--threads"}));
    EXPECT_TRUE(exited_with(run(""), 2, {"missing BANK"}));
    EXPECT_TRUE(exited_with(run(shell_quote(dir.string()) + " --all-versions"), 1, {"version 1 (published): DAMAGED"}));
}

}  // namespace
