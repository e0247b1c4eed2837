// mnemo-kb compress (server/src/compress.cpp): an f32 memory folder written by the memory3 test
// model over 300 random references, compressed with a small FAISS codec, then read back, served
// to a session, decoded independently of FAISS (VQ_DECODE's reference) to recompute the reported
// error; the errors a user can cause; and the mnemo-kb program itself once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "compress.hpp"
#include "decode_check.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/ops/op_table.hpp"
#include "model_test_util.hpp"
#include "process_util.hpp"

namespace fs = std::filesystem;
using namespace mnemo;

namespace {

// d = 16: 2 x 6 coarse bits (64 centroids per half) + 4 x 5 PQ bits = 5 bytes per vector; OPQ
// needs 256 training vectors and the folder has about 4000.
const std::string kFactory = "OPQ4_16,Residual2x6,PQ4x5";
constexpr size_t kReferences = 300;

std::unique_ptr<Session> open_memory3() { return test::open_model(test::model_dir("memory3-tiny-f32"), 128); }

kb::CompressOptions small_options(const std::string& in, const std::string& out) {
    kb::CompressOptions o;
    o.in_dir = in;
    o.out_dir = out;
    o.key_factory = o.value_factory = kFactory;
    o.train.opq_iterations = 3;  // fast; the figures need not be good, only right
    o.train.kmeans_iterations = 8;
    o.threads = 1;  // OpenMP spinning on a loaded machine costs more than it gains here
    return o;
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
    try {
        f();
        ADD_FAILURE() << "no error; expected one mentioning '" << needles.front() << "'";
    } catch (const Error& e) {
        for (const std::string& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
}

// One f32 folder and its compressed copy for the whole suite (writing and training take seconds).
class KbCompress : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        root_ = new fs::path(fs::temp_directory_path() / ("mnemo-kb-test-" + std::to_string(::getpid())));
        fs::remove_all(*root_);
        fs::create_directories(*root_);
        auto session = open_memory3();
        model_ = new MemoryFolderModel(memory_folder_model(*session));
        // Random references of 1..24 tokens: the short ones leave slots unused (n_valid < 4).
        std::mt19937 rng(7);
        std::uniform_int_distribution<int32_t> token(3, session->vocab_size() - 1), length(1, 24);
        std::vector<std::vector<int32_t>> refs(kReferences);
        for (auto& r : refs) {
            r.resize(static_cast<size_t>(length(rng)));
            for (int32_t& t : r) t = token(rng);
        }
        written_ = new std::vector<WrittenMemory>(session->write_memories(refs));
        std::vector<MemoryReference> meta;
        for (const auto& r : refs) meta.push_back({r, "reference"});
        write_memory_folder(f32_dir(), *model_, *written_, meta, false);
        report_ = new kb::CompressReport(kb::compress_memory_folder(small_options(f32_dir(), vq_dir())));
    }
    static void TearDownTestSuite() {
        fs::remove_all(*root_);
        delete report_;
        delete written_;
        delete model_;
        delete root_;
    }
    static std::string f32_dir() { return (*root_ / "f32").string(); }
    static std::string vq_dir() { return (*root_ / "vq").string(); }
    static std::string scratch(const std::string& name) { return (*root_ / name).string(); }

    static inline fs::path* root_ = nullptr;
    static inline MemoryFolderModel* model_ = nullptr;
    static inline std::vector<WrittenMemory>* written_ = nullptr;
    static inline kb::CompressReport* report_ = nullptr;
};

TEST_F(KbCompress, ReportsSizesAndErrors) {
    const kb::CompressReport& r = *report_;
    const MemorySpec& s = model_->spec;
    const size_t heads = s.memory_layers.size() * static_cast<size_t>(s.kv_heads);
    uint64_t valid = 0;
    for (const WrittenMemory& w : *written_) valid += heads * static_cast<uint64_t>(std::min(w.memory.n_valid, s.tokens_per_head));
    EXPECT_EQ(r.memories, kReferences);
    for (const kb::CodecReport* c : {&r.keys, &r.values}) {
        EXPECT_EQ(c->factory, kFactory);
        EXPECT_EQ(c->dim, 16u);
        EXPECT_EQ(c->code_bytes, 5u) << "2 bytes of 2x6-bit coarse code + 3 bytes of 4x5-bit PQ code";
        EXPECT_DOUBLE_EQ(c->ratio_vs_f16(), 32.0 / 5.0);
        EXPECT_EQ(c->training_vectors, valid) << "valid slots only";
        EXPECT_LT(c->training_vectors, kReferences * heads * 4) << "some references are shorter than 4 tokens";
        EXPECT_EQ(c->encoded_vectors, kReferences * heads * 4);
        EXPECT_EQ(c->decode_checked, 512u);
        EXPECT_GT(c->reconstruction_error, 0.0);
        EXPECT_LT(c->reconstruction_error, 0.5) << "5 bytes for 16 floats still keeps most of each vector";
        EXPECT_EQ(c->sha256.size(), 64u);
    }
    // Records: 16-byte header + indices (16 x i32) + keys and values (16 x 16 f32 each) vs codes.
    EXPECT_EQ(r.record_bytes_f32, 16u + 16 * 4 + 2 * 16 * 16 * 4);
    EXPECT_EQ(r.record_bytes_vq, 16u + 16 * 4 + 2 * 16 * 5);
    EXPECT_GT(r.attention_error, 0.0);
    EXPECT_LT(r.attention_error, 1.0);
    ASSERT_EQ(r.notes.size(), 2u) << "~4500 vectors are fewer than 39 per centroid of OPQ's 256-centroid k-means";
    EXPECT_NE(r.notes[0].find("recommends 9984"), std::string::npos) << r.notes[0];
}

// The written folder, decoded by the engine's VQ_DECODE reference (no FAISS), gives back exactly
// the reconstruction error the tool reported.
TEST_F(KbCompress, FolderReadsBackAndDecodesToTheReportedError) {
    const MemoryFolderContents c = read_memory_folder(vq_dir());
    ASSERT_TRUE(c.codec);
    EXPECT_EQ(c.codec->keys.sha256, report_->keys.sha256);
    EXPECT_EQ(c.codec->values.sha256, report_->values.sha256);
    ASSERT_EQ(c.memories.size(), kReferences);
    const MemorySpec& s = model_->spec;
    const size_t keep = static_cast<size_t>(s.tokens_per_head), heads = s.memory_layers.size() * static_cast<size_t>(s.kv_heads);
    for (int kv = 0; kv < 2; ++kv) {
        const VqCodebook& book = kv == 0 ? c.codec->keys : c.codec->values;
        double diff = 0, ref = 0;
        for (size_t m = 0; m < kReferences; ++m) {
            const ExplicitMemory& got = c.memories[m].memory;
            const ExplicitMemory& want = (*written_)[m].memory;
            ASSERT_TRUE(got.compressed());
            ASSERT_EQ(got.n_valid, want.n_valid);
            ASSERT_EQ(got.indices, want.indices);
            ASSERT_EQ(c.memories[m].vector, (*written_)[m].vector);
            const std::vector<int32_t>& words = kv == 0 ? got.key_codes : got.value_codes;
            std::vector<float> out(heads * keep * book.d_in);
            mnemo_node n{};
            n.op = MNEMO_OP_VQ_DECODE;
            n.n_inputs = 4;
            auto tensor = [](const void* p, DType t, std::vector<int64_t> shape) {
                mnemo_tensor x{};
                x.buffer = const_cast<void*>(p);
                x.dtype = static_cast<int32_t>(t);
                x.ndim = static_cast<int32_t>(shape.size());
                for (size_t i = 0; i < shape.size(); ++i) x.shape[i] = shape[i];
                return x;
            };
            n.inputs[0] = tensor(words.data(), DType::I32, {static_cast<int64_t>(heads * keep), book.code_words()});
            n.inputs[1] = tensor(book.coarse.data(), DType::F32, {book.coarse_m, 1 << book.coarse_nbits, book.d_out / book.coarse_m});
            n.inputs[2] = tensor(book.pq.data(), DType::F32, {book.pq_m, 1 << book.pq_nbits, book.d_out / book.pq_m});
            n.inputs[3] = tensor(book.rotation.data(), DType::F32, {book.d_out, book.d_in});
            n.output = tensor(out.data(), DType::F32, {static_cast<int64_t>(heads * keep), book.d_in});
            n.iparams[0] = book.coarse_nbits;
            n.iparams[1] = book.pq_nbits;
            reference_compute(n);
            const std::vector<float>& exact = kv == 0 ? want.keys : want.values;
            for (size_t h = 0; h < heads; ++h)
                for (size_t slot = 0; slot < std::min<size_t>(static_cast<size_t>(want.n_valid), keep); ++slot)
                    for (size_t i = 0; i < book.d_in; ++i) {
                        const size_t at = (h * keep + slot) * book.d_in + i;
                        diff += (static_cast<double>(exact[at]) - out[at]) * (static_cast<double>(exact[at]) - out[at]);
                        ref += static_cast<double>(exact[at]) * exact[at];
                    }
        }
        const double reported = kv == 0 ? report_->keys.reconstruction_error : report_->values.reconstruction_error;
        EXPECT_NEAR(diff / ref, reported, 1e-9 * reported) << (kv == 0 ? "keys" : "values");
    }
}

TEST_F(KbCompress, SessionGeneratesWithTheCompressedFolder) {
    auto source = std::make_shared<FolderMemorySource>(vq_dir(), *model_, RetrievalMode::Vector);
    ASSERT_NE(source->codec(), nullptr);
    EXPECT_TRUE(source->load(0)->compressed());
    std::mt19937 rng(11);
    std::uniform_int_distribution<int32_t> token(3, 319);
    std::vector<int32_t> prompt(40);
    for (int32_t& t : prompt) t = token(rng);

    auto logits_with = [&](std::shared_ptr<MemorySource> src, MemoryStats* stats) {
        auto s = open_memory3();
        s->set_memory_source(std::move(src));
        std::vector<float> l = s->append(0, prompt);
        if (stats) *stats = s->memory_stats();
        return l;
    };
    MemoryStats st;
    const std::vector<float> vq = logits_with(source, &st);
    EXPECT_TRUE(test::all_finite(vq));
    EXPECT_GT(st.memories_read, 0u);
    EXPECT_GT(st.vectors_decoded, 0u) << "the device decoded the codes";
    // The compressed memories stand in for the f32 ones: closer to them than no memories at all.
    const std::vector<float> f32 = logits_with(std::make_shared<FolderMemorySource>(f32_dir(), *model_, RetrievalMode::Vector), nullptr);
    const std::vector<float> none = logits_with(nullptr, nullptr);
    EXPECT_LT(test::max_rel_error(vq, f32), test::max_rel_error(none, f32));
}

TEST_F(KbCompress, RefusesBadFactories) {
    auto with = [&](const std::string& f) {
        kb::CompressOptions o = small_options(f32_dir(), scratch("bad"));
        o.key_factory = f;
        return [o] { kb::compress_memory_folder(o); };
    };
    expect_error(with("OPQ4_16,Residual2x6,PQ4x5x"), {"keys", "FAISS cannot build it", "PQ4x5x"});
    expect_error(with("bogus"), {"FAISS cannot build it", "could not parse index string bogus"});
    expect_error(with("OPQ4x16-Residual2x6-PQ4x5"), {"could not parse", "separates the parts with commas"});
    expect_error(with("IVF4,PQ4"), {"no Index2Layer"});
    expect_error(with("PCA16,Residual2x6,PQ4x5"), {"bias"});
    expect_error(with("Residual4x10,PQ4x5"), {"at most 32 bits"});
    expect_error(with("Residual2x6,PQ4x17"), {"1..16 bits"});
    EXPECT_FALSE(fs::exists(scratch("bad"))) << "nothing is written when the codec is refused";
}

TEST_F(KbCompress, TooFewVectorsNamesTheCountAndASmallerFactory) {
    kb::CompressOptions o = small_options(f32_dir(), scratch("few"));
    o.key_factory.clear();  // the default for d = 16: OPQ4_16,Residual2x14,PQ2x10 needs 2^14 vectors
    const uint64_t n = report_->keys.training_vectors;
    int bits = 0;  // the most bits n vectors train
    while ((uint64_t{2} << bits) <= n) ++bits;
    ASSERT_LT(bits, 14);
    const std::string smaller = "OPQ4_16,Residual2x" + std::to_string(bits) + ",PQ2x" + std::to_string(std::min(bits, 10));
    expect_error([&] { kb::compress_memory_folder(o); },
                 {"keys", "OPQ4_16,Residual2x14,PQ2x10", std::to_string(n) + " training vectors", "at least 16384",
                  "use a smaller factory, e.g. '" + smaller + "'"});
    EXPECT_EQ(kb::default_factory(80), "OPQ20_80,Residual2x14,PQ8x10");
    EXPECT_EQ(kb::default_factory(64), "OPQ16_64,Residual2x14,PQ8x10");
    EXPECT_EQ(kb::default_factory(128), "OPQ32_128,Residual2x14,PQ16x10");
}

TEST_F(KbCompress, RefusesCompressedInputAndExistingOutput) {
    expect_error([&] { kb::compress_memory_folder(small_options(vq_dir(), scratch("again"))); }, {"already compressed"});
    expect_error([&] { kb::compress_memory_folder(small_options(f32_dir(), vq_dir())); }, {"already exists"});
}

// The bit-for-bit check itself: it passes on FAISS's own decoding (here through a random rotation
// rather than OPQ) and stops at the first differing bit.
TEST(KbDecodeCheck, PassesOnFaissDecodingAndFailsOnOneBit) {
    kb::VqCodec codec(16, "RR16,Residual2x4,PQ2x4");
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    std::vector<float> x(200 * 16);
    for (float& v : x) v = normal(rng);
    kb::TrainOptions t;
    codec.train(x.data(), 200, t);
    const VqCodebook book = codec.codebook();
    EXPECT_TRUE(book.has_rotation());
    EXPECT_EQ(book.code_size(), 2u);
    const std::vector<uint8_t> codes = codec.encode(x.data(), 200);
    std::vector<float> decoded = codec.decode(codes.data(), 200);
    EXPECT_EQ(kb::check_vq_decode(book, codes, decoded, 200, 64, "t"), 64u);
    decoded[3] = std::nextafter(decoded[3], 1e9f);  // vector 0 is always among the sampled
    expect_error([&] { kb::check_vq_decode(book, codes, decoded, 200, 64, "t"); },
                 {"t: the engine's VQ_DECODE reference differs from FAISS's sa_decode at vector 0, element 3"});
    // Too few vectors for this codec: 2^4 centroids need 16.
    kb::VqCodec fresh(16, "RR16,Residual2x4,PQ2x4");
    expect_error([&] { fresh.train(x.data(), 10, t); }, {"10 training vectors", "at least 16", "'RR16,Residual2x3,PQ2x3'"});
}

// The program: a JSON report on stdout, exit code 0; usage errors exit 2.
TEST_F(KbCompress, CommandLine) {
    auto run = [](const std::string& args) { return mnemo::testing::run_program("mnemo-kb", args, 300); };
    const std::string out = scratch("cli");
    const auto r = run("compress " + mnemo::testing::shell_quote(f32_dir()) + " -o " + mnemo::testing::shell_quote(out) + " --factory " +
                       kFactory + " --opq-iterations 3 --kmeans-iterations 8 --threads 1 --json");
    ASSERT_EQ(r.code, 0) << r.output;
    const json::Value j = json::parse(r.output, "mnemo-kb output");  // nothing but the JSON object
    EXPECT_EQ(j.find("memories")->as_int(), static_cast<int64_t>(kReferences));
    EXPECT_EQ(j.find_path("keys.code_bytes")->as_int(), 5);
    EXPECT_EQ(j.find_path("values.factory")->as_string(), kFactory);
    EXPECT_EQ(j.find_path("record_bytes.vq")->as_int(), static_cast<int64_t>(report_->record_bytes_vq));
    EXPECT_GT(j.find("attention_error")->as_double(), 0.0);
    EXPECT_TRUE(read_memory_folder(out).codec);

    const auto usage = run("compress " + mnemo::testing::shell_quote(f32_dir()));
    EXPECT_EQ(usage.code, 2) << usage.output;
    EXPECT_NE(usage.output.find("missing -o/--out"), std::string::npos) << usage.output;
    const auto help = run("--help");
    EXPECT_EQ(help.code, 0);
    EXPECT_NE(help.output.find("compress"), std::string::npos);
}

}  // namespace

// The device decode, end to end: a session reading the compressed folder must give the logits
// of a session reading the same memories decoded on the host by VQ_DECODE's reference. Any slip
// in how the session packs codes into blocks or where the decode graph writes shows up here,
// on every backend device.
namespace {

// The f32 memories of a compressed folder, decoded on the host; retrieval by the compressed
// folder's own ranking, so both sessions read the same memories.
class HostDecoded : public MemorySource {
public:
    explicit HostDecoded(std::shared_ptr<FolderMemorySource> vq) : vq_(std::move(vq)) {}
    bool wants_vector() const override { return true; }
    std::string describe() const override { return "host-decoded copy of " + vq_->describe(); }
    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& q, int32_t k) override {
        std::vector<std::shared_ptr<const ExplicitMemory>> out;
        for (const auto& [id, score] : vq_->rank(q, k)) out.push_back(decoded(id));
        return out;
    }

private:
    std::shared_ptr<const ExplicitMemory> decoded(uint32_t id) {
        auto coded = vq_->load(id);
        auto m = std::make_shared<ExplicitMemory>();
        m->id = coded->id;
        m->n_valid = coded->n_valid;
        m->indices = coded->indices;
        m->keys = decode(vq_->codec()->keys, coded->key_codes);
        m->values = decode(vq_->codec()->values, coded->value_codes);
        return m;
    }
    static std::vector<float> decode(const VqCodebook& cb, const std::vector<int32_t>& codes) {
        const int64_t words = cb.code_words(), n = static_cast<int64_t>(codes.size()) / words;
        std::vector<float> out(static_cast<size_t>(n * cb.d_in));
        auto tensor = [](const void* p, mnemo_dtype dt, std::initializer_list<int64_t> shape) {
            mnemo_tensor t{};
            t.buffer = const_cast<void*>(p);
            t.dtype = dt;
            t.ndim = static_cast<int32_t>(shape.size());
            int i = 0;
            for (int64_t d : shape) t.shape[i++] = d;
            return t;
        };
        mnemo_node node{};
        node.op = MNEMO_OP_VQ_DECODE;
        node.n_inputs = cb.has_rotation() ? 4 : 3;
        node.inputs[0] = tensor(codes.data(), MNEMO_DTYPE_I32, {n, words});
        node.inputs[1] = tensor(cb.coarse.data(), MNEMO_DTYPE_F32, {cb.coarse_m, int64_t{1} << cb.coarse_nbits, cb.d_out / cb.coarse_m});
        node.inputs[2] = tensor(cb.pq.data(), MNEMO_DTYPE_F32, {cb.pq_m, int64_t{1} << cb.pq_nbits, cb.d_out / cb.pq_m});
        if (cb.has_rotation()) node.inputs[3] = tensor(cb.rotation.data(), MNEMO_DTYPE_F32, {cb.d_out, cb.d_in});
        node.output = tensor(out.data(), MNEMO_DTYPE_F32, {n, cb.d_in});
        node.iparams[0] = cb.coarse_nbits;
        node.iparams[1] = cb.pq_nbits;
        mnemo::reference_compute(node);
        return out;
    }
    std::shared_ptr<FolderMemorySource> vq_;
};

class KbDeviceDecode : public KbCompress, public ::testing::WithParamInterface<std::string> {};

}  // namespace

TEST_P(KbDeviceDecode, MatchesTheHostDecode) {
    const BackendModule* b = test::backends().find(GetParam());
    if (!b) GTEST_SKIP() << "backend " << GetParam() << " was not built";
    if (b->api->device_count() == 0) GTEST_SKIP() << "backend " << GetParam() << " has no device";
    std::mt19937 rng(5);
    std::uniform_int_distribution<int32_t> token(3, 319);
    std::vector<int32_t> prompt(40);  // 3 chunks of 16: three blocks
    for (int32_t& t : prompt) t = token(rng);
    auto logits = [&](std::shared_ptr<MemorySource> src) {
        SessionOptions o;
        o.model_dir = test::model_dir("memory3-tiny-f32");
        o.backend = GetParam();
        o.n_ctx = 128;
        o.n_threads = 2;
        o.backends = &test::backends();
        o.plugins = &test::plugins();
        auto s = Session::open(o);
        s->set_memory_source(std::move(src));
        std::vector<float> l = s->append(0, prompt, /*all_logits=*/true);
        for (int32_t t = 40; t < 60; ++t) {  // generated chunk 1 retrieves again
            const auto& d = s->decode({{token(rng), t, 0, true}});
            l.insert(l.end(), d.begin(), d.end());
        }
        return l;
    };
    auto vq = std::make_shared<FolderMemorySource>(vq_dir(), *model_, RetrievalMode::Vector);
    const auto on_device = logits(vq);
    rng.seed(5);
    for (int i = 0; i < 40; ++i) (void)token(rng);
    const auto on_host = logits(std::make_shared<HostDecoded>(vq));
    EXPECT_LT(test::max_rel_error(on_device, on_host), 1e-5);
}

// With an f16 KV cache the explicit memories are f16 too: decoded on the device into f32 scratch
// and rounded into the state by KV_STORE, or decoded on the host and rounded there
// (memory_rows.hpp). Both round the same values, so the logits agree as closely as in f32; and
// they stay within f16's error of the f32 run.
TEST_P(KbDeviceDecode, MatchesTheHostDecodeWithAnF16Cache) {
    const BackendModule* b = test::backends().find(GetParam());
    if (!b) GTEST_SKIP() << "backend " << GetParam() << " was not built";
    if (b->api->device_count() == 0) GTEST_SKIP() << "backend " << GetParam() << " has no device";
    std::vector<int32_t> prompt(40);  // 3 chunks of 16: three blocks
    std::mt19937 rng(7);
    std::uniform_int_distribution<int32_t> token(3, 319);
    for (int32_t& t : prompt) t = token(rng);
    auto logits = [&](std::shared_ptr<MemorySource> src, int32_t cache_dtype) {
        SessionOptions o;
        o.model_dir = test::model_dir("memory3-tiny-f32");
        o.backend = GetParam();
        o.n_ctx = 128;
        o.n_threads = 2;
        o.cache_dtype = cache_dtype;
        o.backends = &test::backends();
        o.plugins = &test::plugins();
        auto s = Session::open(o);
        s->set_memory_source(std::move(src));
        return s->append(0, prompt, /*all_logits=*/true);
    };
    auto vq = std::make_shared<FolderMemorySource>(vq_dir(), *model_, RetrievalMode::Vector);
    const auto on_device = logits(vq, MNEMO_DTYPE_F16);
    const auto on_host = logits(std::make_shared<HostDecoded>(vq), MNEMO_DTYPE_F16);
    const auto f32 = logits(vq, MNEMO_DTYPE_F32);
    EXPECT_LT(test::max_rel_error(on_device, on_host), 1e-5);
    EXPECT_LT(test::max_rel_error(on_device, f32), 2e-3);
    EXPECT_GT(test::max_rel_error(on_device, f32), 0.0) << "the f16 cache was not used";
}

INSTANTIATE_TEST_SUITE_P(Backends, KbDeviceDecode, ::testing::Values("cpu", "vulkan", "cuda"),
                         [](const auto& info) { return info.param; });

TEST_F(KbCompress, RefusesACodebookWhoseHashDiffers) {
    const std::string copy = scratch("tampered");
    fs::remove_all(copy);
    fs::copy(vq_dir(), copy, fs::copy_options::recursive);
    {
        std::fstream f(fs::path(copy) / "keys.mvqc", std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(200);
        f.put('\x7f');
    }
    expect_error([&] { FolderMemorySource(copy, *model_, RetrievalMode::Vector); }, {"keys.mvqc", "SHA-256"});
}
