// The streamed bank build (server/src/bank/bank_build.cpp): the codec trained on a uniform sample
// of the corpus's key/value vectors (bank_codec_sample.hpp), the checkpointed batches encoded one
// at a time and written segment by segment. Checked against independent computations with the tiny
// memory3 model: the codec is the one trained on exactly the sample (or on every vector when the
// corpus is smaller), the records are those of encoding all memories at once with that codec, and
// a build stopped mid-encode (by an error, or SIGKILL of mnemo-kb) resumes to the same bank.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "app/corpus.hpp"
#include "bank/bank_codec_sample.hpp"
#include "bank/bank_staging.hpp"
#include "fixtures/kb_corrected_bank.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/memory/memory_record.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace fs = std::filesystem;
using namespace mnemo;

namespace {

constexpr size_t kSample = 300;  // above the tiny codec's 256 (OPQ), below the corpus's vectors

// Documents <prefix>0.. of random words, 3 paragraphs (references) each.
std::string corpus_of(const std::string& prefix, int docs, unsigned seed) {
    std::string text;
    for (int d = 0; d < docs; ++d) text += test::kb_doc_line(prefix + std::to_string(d), seed + static_cast<unsigned>(d));
    return text;
}

// A storage that fails writing its `fail_at`-th segment records blob: a build stopped while it
// writes segments, leaving what it wrote (as a kill would).
class FailOnSegment final : public kb::BankStorage {
public:
    FailOnSegment(std::shared_ptr<kb::BankStorage> inner, int fail_at) : inner_(std::move(inner)), fail_at_(fail_at) {}
    std::string describe() const override { return inner_->describe(); }
    std::optional<std::string> read_blob(const std::string& n, uint64_t max) const override { return inner_->read_blob(n, max); }
    std::unique_ptr<kb::BlobReader> open_blob(const std::string& n) const override { return inner_->open_blob(n); }
    bool exists(const std::string& n) const override { return inner_->exists(n); }
    std::vector<std::string> list() const override { return inner_->list(); }
    void write_blob(const std::string& n, std::string_view bytes) override {
        if (n.rfind("seg-", 0) == 0 && ++segments == fail_at_) throw Error("injected failure writing '" + n + "'");
        inner_->write_blob(n, bytes);
    }
    void publish_pointer(const std::string& n, std::string_view bytes, const std::optional<std::string>& expected) override {
        inner_->publish_pointer(n, bytes, expected);
    }
    std::unique_ptr<kb::WriterLock> lock_writer(const std::string& who) override { return inner_->lock_writer(who); }
    void remove_blob(const std::string& n) override { inner_->remove_blob(n); }
    int segments = 0;

private:
    std::shared_ptr<kb::BankStorage> inner_;
    int fail_at_;
};

std::vector<std::string> staging_blobs(const fs::path& bank) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(bank))
        if (e.path().filename().string().rfind("staging-", 0) == 0) out.push_back(e.path().filename().string());
    return out;
}

void expect_same_records(const kb::Bank& a, const kb::Bank& b) {
    ASSERT_EQ(a.count(), b.count());
    EXPECT_EQ(a.codec().keys.sha256, b.codec().keys.sha256);
    EXPECT_EQ(a.codec().values.sha256, b.codec().values.sha256);
    EXPECT_EQ(a.retired_count(), b.retired_count());
    for (uint32_t i = 0; i < a.count(); ++i) {
        ASSERT_EQ(a.retired(i), b.retired(i)) << "record " << i;
        if (a.retired(i)) continue;  // refused by record()
        EXPECT_EQ(a.record(i), b.record(i)) << "record " << i;
        EXPECT_EQ(a.reference(i).text, b.reference(i).text) << "record " << i;
    }
}

class KbBuildStream : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        root_ = new fs::path(fs::temp_directory_path() / ("mnemo-kb-build-stream-" + std::to_string(::getpid())));
        fs::remove_all(*root_);
        test::write_text(*root_ / "corpus.jsonl", corpus_of("d", 60, 100));  // 180 references, ~720 vectors
        test::write_text(*root_ / "small.jsonl", corpus_of("d", 24, 500));   // ~400 vectors: below the default sample
        test::write_text(*root_ / "more.jsonl", corpus_of("m", 20, 900) + test::kb_doc_line("d3", 4242));
        session_ = test::open_model(test::model_dir("memory3-tiny-bpe"), 128).release();
        model_ = new MemoryFolderModel(memory_folder_model(*session_));
        report_ = new kb::BankBuildReport(kb::build_bank(*session_, sampled_build(*root_ / "bank")));
        bank_ = new std::shared_ptr<const kb::Bank>(test::open_kb_bank(*root_ / "bank"));
    }
    static void TearDownTestSuite() {
        fs::remove_all(*root_);
        delete bank_;
        delete report_;
        delete model_;
        delete session_;
        delete root_;
    }

    // The suite's build: the big corpus, a sample smaller than it, segments of 7 records.
    static kb::BankBuildOptions sampled_build(const fs::path& bank, const std::string& corpus = "corpus.jsonl") {
        kb::BankBuildOptions o = test::kb_small_build(bank, (*root_ / corpus).string());
        o.codec_sample = kSample;
        o.segment_records = 7;
        return o;
    }

    // Every reference of a corpus memorized at once, as the builder never holds them.
    static std::vector<WrittenMemory> memorize_all(const std::string& corpus, std::vector<app::CorpusReference>* refs = nullptr) {
        const auto tok = load_tokenizer(test::model_dir("memory3-tiny-bpe"));
        const auto cut = app::cut_references(app::read_corpus((*root_ / corpus).string()), *tok, model_->spec.reference_length);
        std::vector<std::vector<int32_t>> tokens;
        for (const auto& r : cut) tokens.push_back(r.tokens);
        if (refs) *refs = cut;
        return session_->write_memories(tokens);
    }

    // Each record of `bank` from `first` on is the encoding of memories[i - first] with the bank's
    // codec, each memory encoded on its own (one FAISS call per memory, as banks were always
    // encoded; the builder encodes many per call).
    static void expect_records_encode(const kb::Bank& bank, std::vector<WrittenMemory> memories, uint32_t first) {
        auto kc = kb::VqCodec::from_codebook(bank.codec().keys);
        auto vc = kb::VqCodec::from_codebook(bank.codec().values);
        std::vector<WrittenMemory> enc;
        for (WrittenMemory& m : memories) {
            std::vector<WrittenMemory> one;
            one.push_back(std::move(m));
            enc.push_back(std::move(kb::encode_memories(std::move(one), model_->spec, *kc, *vc, bank.codec()).front()));
        }
        ASSERT_EQ(bank.count(), first + enc.size());
        for (uint32_t i = 0; i < enc.size(); ++i)
            EXPECT_EQ(bank.record(first + i), encode_memory_record(enc[i].memory, first + i, model_->spec, &bank.codec())) << "record " << first + i;
    }

    static inline fs::path* root_ = nullptr;
    static inline Session* session_ = nullptr;
    static inline MemoryFolderModel* model_ = nullptr;
    static inline kb::BankBuildReport* report_ = nullptr;
    static inline std::shared_ptr<const kb::Bank>* bank_ = nullptr;
};

TEST_F(KbBuildStream, CodecIsTrainedOnExactlyTheSample) {
    const kb::BankBuildReport& r = *report_;
    EXPECT_TRUE(r.codec_trained);
    EXPECT_FALSE(r.codec_resumed);
    EXPECT_EQ(r.codec_sample, kSample);
    EXPECT_EQ(r.training_vectors, kSample);
    EXPECT_GT(r.corpus_vectors, 2 * kSample);
    // The sample drawn again, independently, from all memories: the codec trained on it is the bank's.
    const std::vector<WrittenMemory> all = memorize_all("corpus.jsonl");
    kb::CodecSample sample(model_->spec, kSample);
    for (const WrittenMemory& w : all) sample.add(w.memory);
    EXPECT_EQ(sample.offered(), r.corpus_vectors);
    ASSERT_EQ(sample.size(), kSample);
    const kb::BankBuildOptions o = sampled_build(*root_ / "unused");
    kb::CompressReport cr;
    kb::TrainedCodecs t = kb::make_memory_codecs(model_->spec, o.codec, cr);
    kb::train_memory_codecs_on(t, sample.keys().data(), sample.values().data(), sample.size(), o.codec, cr);
    EXPECT_EQ(t.codec.keys.sha256, (*bank_)->codec().keys.sha256);
    EXPECT_EQ(t.codec.values.sha256, (*bank_)->codec().values.sha256);
    EXPECT_EQ(cr.keys.training_vectors, kSample);
    // Another seed draws another sample, hence another codec: the seed is what decides.
    kb::CodecSample other(model_->spec, kSample, kb::kCodecSampleSeed + 1);
    for (const WrittenMemory& w : all) other.add(w.memory);
    EXPECT_NE(other.keys(), sample.keys());
}

TEST_F(KbBuildStream, StreamedRecordsAreTheMemoriesEncodedAllAtOnce) {
    const kb::Bank& b = **bank_;
    std::vector<app::CorpusReference> refs;
    std::vector<WrittenMemory> all = memorize_all("corpus.jsonl", &refs);
    ASSERT_EQ(report_->references, refs.size());
    EXPECT_EQ(b.segments(), (refs.size() + 6) / 7) << "segments of 7 records, written as they filled";
    EXPECT_EQ(report_->segments_written, b.segments());
    expect_records_encode(b, std::move(all), 0);
    for (uint32_t i = 0; i < b.count(); ++i) {
        EXPECT_EQ(b.reference(i).tokens, refs[i].tokens) << "record " << i;
        EXPECT_EQ(b.reference(i).text, refs[i].text) << "record " << i;
    }
    EXPECT_TRUE(staging_blobs(*root_ / "bank").empty()) << "a finished build leaves no checkpoint";
}

TEST_F(KbBuildStream, CorpusSmallerThanTheSampleTrainsOnEveryVector) {
    kb::BankBuildOptions o = sampled_build(*root_ / "small-bank", "small.jsonl");
    o.codec_sample = 0;  // the default: 2^20, far above this corpus
    std::vector<std::string> notes;
    o.note = [&](const std::string& line) { notes.push_back(line); };
    const kb::BankBuildReport r = kb::build_bank(*session_, o);
    EXPECT_EQ(r.codec_sample, kb::kDefaultCodecSample);
    EXPECT_EQ(r.training_vectors, r.corpus_vectors);
    EXPECT_LT(r.corpus_vectors, r.codec_sample);
    bool said = false;
    for (const std::string& n : notes) said = said || n.find("trains on every one") != std::string::npos;
    EXPECT_TRUE(said) << "a note says the corpus is smaller than the sample";
    // The codec training on all memories trained before sampling existed: the same codec.
    kb::CompressReport cr;
    const kb::TrainedCodecs t = kb::train_memory_codecs(memorize_all("small.jsonl"), model_->spec, o.codec, cr);
    const auto b = test::open_kb_bank(*root_ / "small-bank");
    EXPECT_EQ(t.codec.keys.sha256, b->codec().keys.sha256);
    EXPECT_EQ(t.codec.values.sha256, b->codec().values.sha256);
}

TEST_F(KbBuildStream, BuildStoppedWhileWritingSegmentsResumesToTheSameBank) {
    const fs::path dir = *root_ / "stopped";
    kb::BankBuildOptions o = sampled_build(dir);
    o.storage = std::make_shared<FailOnSegment>(kb::open_folder_storage(dir.string(), true), 4);
    test::expect_error_with([&] { kb::build_bank(*session_, o); }, {"injected failure", "seg-000001-0003.rec"});
    EXPECT_EQ(kb::Bank::current_version(*kb::open_folder_storage(dir.string(), false)), 0u) << "nothing published";
    EXPECT_TRUE(fs::exists(dir / "seg-000001-0002.rec")) << "segments were written before the stop";
    const std::vector<std::string> left = staging_blobs(dir);
    ASSERT_EQ(left.size(), report_->batches + 1) << "every batch and the codec checkpointed";

    o.storage = kb::open_folder_storage(dir.string(), false);
    const kb::BankBuildReport r = kb::build_bank(*session_, o);
    EXPECT_EQ(r.resumed_batches, r.batches);
    EXPECT_TRUE(r.codec_resumed) << "the codec came from its checkpoint, not from training again";
    EXPECT_EQ(r.training_vectors, kSample);
    expect_same_records(*test::open_kb_bank(dir), **bank_);
    EXPECT_TRUE(staging_blobs(dir).empty());
}

TEST_F(KbBuildStream, StoppedInTheMiddleOfEncodingResumes) {
    const fs::path dir = *root_ / "stopped-encoding";
    kb::BankBuildOptions o = sampled_build(dir);
    o.progress = [](const std::string& stage, uint64_t done, uint64_t) {
        if (stage == "encode" && done >= 64) throw Error("interrupted");
    };
    test::expect_error_with([&] { kb::build_bank(*session_, o); }, {"interrupted"});
    EXPECT_EQ(kb::Bank::current_version(*kb::open_folder_storage(dir.string(), false)), 0u);
    o.progress = nullptr;
    const kb::BankBuildReport r = kb::build_bank(*session_, o);
    EXPECT_TRUE(r.codec_resumed);
    EXPECT_EQ(r.resumed_batches, r.batches);
    expect_same_records(*test::open_kb_bank(dir), **bank_);
}

TEST_F(KbBuildStream, TooSmallASampleIsRefusedBeforeMemorizing) {
    const fs::path dir = *root_ / "tiny-sample";
    kb::BankBuildOptions o = sampled_build(dir);
    o.codec_sample = 100;
    test::expect_error_with([&] { kb::build_bank(*session_, o); }, {"codec sample of 100", "at least 256"});
    EXPECT_TRUE(staging_blobs(dir).empty()) << "nothing was memorized";
}

TEST_F(KbBuildStream, AddEncodesEachBatchAsItIsMemorized) {
    // The same add with the encoding overlapping the memorizing and without: the same version,
    // whose new records are the new memories encoded all at once with the bank's codec.
    for (bool overlap : {true, false}) {
        SCOPED_TRACE(overlap ? "overlapped" : "one after the other");
        const fs::path dir = *root_ / (overlap ? "add-overlap" : "add-serial");
        test::copy_kb_bank(*root_ / "bank", dir);
        kb::BankBuildOptions o = sampled_build(dir, "more.jsonl");
        o.add = true;
        o.overlap_encode = overlap ? kb::BankBuildOptions::Overlap::On : kb::BankBuildOptions::Overlap::Off;
        const kb::BankBuildReport r = kb::build_bank(*session_, o);
        EXPECT_FALSE(r.codec_trained);
        EXPECT_EQ(r.replaced_documents, 1u) << "d3 replaced";
        const auto b = test::open_kb_bank(dir);
        EXPECT_EQ(b->codec().keys.sha256, (*bank_)->codec().keys.sha256);
        expect_records_encode(*b, memorize_all("more.jsonl"), static_cast<uint32_t>((*bank_)->count()));
        EXPECT_EQ(b->retired_count(), (*bank_)->documents().find("d3")->ids.size());
    }
    expect_same_records(*test::open_kb_bank(*root_ / "add-overlap"), *test::open_kb_bank(*root_ / "add-serial"));
}

TEST_F(KbBuildStream, StoppedAddResumesFromItsCheckpoints) {
    const fs::path dir = *root_ / "add-stopped";
    test::copy_kb_bank(*root_ / "bank", dir);
    kb::BankBuildOptions o = sampled_build(dir, "more.jsonl");
    o.add = true;
    o.progress = [](const std::string& stage, uint64_t done, uint64_t) {
        if (stage == "memorize" && done >= 32) throw Error("interrupted");  // after 2 batches of 16
    };
    test::expect_error_with([&] { kb::build_bank(*session_, o); }, {"interrupted"});
    EXPECT_EQ(test::open_kb_bank(dir)->version(), 1u);
    o.progress = nullptr;
    const kb::BankBuildReport r = kb::build_bank(*session_, o);
    EXPECT_EQ(r.resumed_batches, 2u);
    EXPECT_EQ(r.version, 2u);
    expect_records_encode(*test::open_kb_bank(dir), memorize_all("more.jsonl"), static_cast<uint32_t>((*bank_)->count()));
}

// mnemo-kb build killed with SIGKILL once it has written some segments, then run again.
TEST_F(KbBuildStream, KilledCommandResumesMidEncode) {
    const fs::path big = *root_ / "big.jsonl";
    test::write_text(big, corpus_of("d", 400, 7000));  // 1,200 references: ~170 segments of 7
    auto args = [&](const fs::path& bank) {
        std::vector<std::string> a = {std::string(MNEMO_BUILD_BIN) + "/mnemo-kb", "build", big.string(), "-o", bank.string(),
                                      "-m", test::model_dir("memory3-tiny-bpe"), "--threads", "1", "--batch", "64",
                                      "--factory", "OPQ4_16,Residual2x6,PQ4x5", "--opq-iterations", "3", "--kmeans-iterations", "8",
                                      "--codec-sample", "1000", "--segment-records", "7"};
        return a;
    };
    auto spawn = [](const std::vector<std::string>& a) {
        const pid_t pid = ::fork();
        if (pid == 0) {
            std::vector<char*> argv;
            for (const std::string& s : a) argv.push_back(const_cast<char*>(s.c_str()));
            argv.push_back(nullptr);
            const int null = ::open("/dev/null", O_WRONLY);
            ::dup2(null, 1);
            ::dup2(null, 2);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        return pid;
    };
    auto wait_exit = [](pid_t pid) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    };
    const fs::path ref = *root_ / "killed-ref", bank = *root_ / "killed";
    ASSERT_EQ(wait_exit(spawn(args(ref))), 0);

    const pid_t pid = spawn(args(bank));
    // Killed as soon as its tenth segment exists (polled; the run writes ~170).
    bool seen = false, exited = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!seen && !exited && std::chrono::steady_clock::now() < deadline) {
        seen = fs::exists(bank / "seg-000001-0009.rec");
        exited = ::waitpid(pid, nullptr, WNOHANG) == pid;
        if (!seen && !exited) std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    if (!exited) {
        ::kill(pid, SIGKILL);
        wait_exit(pid);
    }
    ASSERT_TRUE(seen) << "the build was not caught while writing segments";
    ASSERT_FALSE(fs::exists(bank / "CURRENT")) << "killed before publishing";
    EXPECT_FALSE(staging_blobs(bank).empty());

    ASSERT_EQ(wait_exit(spawn(args(bank))), 0) << "the re-run";
    expect_same_records(*test::open_kb_bank(bank), *test::open_kb_bank(ref));
    EXPECT_TRUE(staging_blobs(bank).empty());
}

}  // namespace
