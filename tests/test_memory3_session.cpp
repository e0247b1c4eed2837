// Memory3 end to end on every backend device, against the float64 goldens of
// tools/reference/memory3.py (tests/data/models/memory3-tiny-f32/golden, see its meta.json):
// writing memories (kept token indices, post-RoPE keys, values, retrieval vectors), the
// reference BOS, retrieval vectors of query chunks, and logits of a 40-token prompt plus 24
// generated tokens with 0, 1 and 5 memories per chunk (prompt chunks each with their own,
// decoded chunk 0 keeping the last prompt chunk's, decoded chunk 1 retrieving anew), also
// through a source that prefetches; the same for memory3-ultramem-tiny-f32, whose checkpoint also
// has UltraMemV2 memory layers. Plus the memory folder round trip and its errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <unistd.h>

#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "model_test_util.hpp"
#include "npy.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using mnemo::test::load_npy;
using mnemo::test::NpyArray;

namespace {

const std::string kModel = "memory3-tiny-f32";

// memory3-tiny-f32's memory3 settings on a smaller backbone with UltraMemV2 memory layers
// (tools/test_models/make_memory3_test_models.sh); the same golden layout.
const std::string kUltraMemModel = "memory3-ultramem-tiny-f32";

std::string golden(const std::string& file, const std::string& model = kModel) {
    return test::model_dir(model) + "/golden/" + file;
}

std::unique_ptr<Session> open_on(const std::string& backend, int32_t n_ctx = 128, int32_t ubatch = 256,
                                 const std::string& model = kModel) {
    SessionOptions o;
    o.model_dir = test::model_dir(model);
    o.backend = backend;
    o.n_ctx = n_ctx;
    o.n_ubatch = ubatch;
    o.n_threads = 2;
    o.backends = &test::backends();
    o.plugins = &test::plugins();
    return Session::open(o);
}

std::vector<std::vector<int32_t>> golden_references(const std::string& model = kModel) {
    const NpyArray refs = load_npy(golden("references.npy", model));
    const std::vector<int32_t> ids = refs.as_i32();
    const std::vector<int32_t> lens = load_npy(golden("reference_lengths.npy", model)).as_i32();
    std::vector<std::vector<int32_t>> out;
    for (size_t i = 0; i < lens.size(); ++i)
        out.emplace_back(ids.begin() + static_cast<long>(i * refs.shape[1]), ids.begin() + static_cast<long>(i * refs.shape[1] + lens[i]));
    return out;
}

// Serves chunk i (in the order the session asks) the golden's fixed references for that chunk.
class ScriptedSource : public MemorySource {
public:
    ScriptedSource(std::vector<std::vector<int>> plan, std::vector<std::shared_ptr<const ExplicitMemory>> mems)
        : plan_(std::move(plan)), mems_(std::move(mems)) {}
    bool wants_vector() const override { return false; }
    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& q, int32_t k) override {
        EXPECT_NE(q.tokens, nullptr);
        EXPECT_LT(calls_, plan_.size()) << "more retrievals than chunks";
        std::vector<std::shared_ptr<const ExplicitMemory>> out;
        if (calls_ < plan_.size())
            for (int r : plan_[calls_]) out.push_back(mems_[static_cast<size_t>(r)]);
        EXPECT_LE(static_cast<int32_t>(out.size()), k);
        ++calls_;
        return out;
    }
    std::string describe() const override { return "scripted source"; }
    size_t calls() const { return calls_; }

    int32_t step = -1;  // the position the test decodes now (-1: the prompt)

private:
    std::vector<std::vector<int>> plan_;
    std::vector<std::shared_ptr<const ExplicitMemory>> mems_;
    size_t calls_ = 0;
};

// A source that prefetches (as a network client would), serving the same script: every query
// it is asked must have been announced first, equal, and while decoding a step ahead.
class PrefetchingSource : public ScriptedSource {
public:
    using ScriptedSource::ScriptedSource;
    bool wants_vector() const override { return true; }
    bool prefetches() const override { return true; }
    void prefetch(const ChunkQuery& q, int32_t k) override {
        EXPECT_EQ(k, 5);
        announced.push_back({copy(q), step});
    }
    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& q, int32_t k) override {
        const Query asked = copy(q);
        auto it = std::find_if(announced.begin(), announced.end(), [&](const Announced& a) { return a.query == asked; });
        EXPECT_NE(it, announced.end()) << "retrieve() without an equal prefetch() first";
        if (it != announced.end() && step >= 0) {
            EXPECT_LT(it->step, step) << "a decoded chunk's query is announced a step ahead";
        }
        return ScriptedSource::retrieve(q, k);
    }

    struct Query {
        int32_t seq;
        std::vector<int32_t> tokens;
        std::vector<float> vector;
        bool operator==(const Query&) const = default;
    };
    struct Announced {
        Query query;
        int32_t step;
    };
    std::vector<Announced> announced;

private:
    static Query copy(const ChunkQuery& q) {
        EXPECT_NE(q.tokens, nullptr);
        EXPECT_NE(q.vector, nullptr);
        return {q.seq, q.tokens ? *q.tokens : std::vector<int32_t>{}, q.vector ? *q.vector : std::vector<float>{}};
    }
};

// The golden's memories as the engine holds them (written by the reference, not by us).
std::vector<std::shared_ptr<const ExplicitMemory>> golden_memories(const std::string& model = kModel) {
    const std::vector<int32_t> idx = load_npy(golden("memory_indices.npy", model)).as_i32();
    const std::vector<float> k = load_npy(golden("memory_keys.npy", model)).as_f32();
    const std::vector<float> v = load_npy(golden("memory_values.npy", model)).as_f32();
    const std::vector<int32_t> lens = load_npy(golden("reference_lengths.npy", model)).as_i32();
    const size_t n = lens.size(), slots = idx.size() / n, per = k.size() / n;
    std::vector<std::shared_ptr<const ExplicitMemory>> out;
    for (size_t i = 0; i < n; ++i) {
        auto m = std::make_shared<ExplicitMemory>();
        m->id = static_cast<uint32_t>(i);
        m->n_valid = std::min(lens[i], 4);
        m->indices.assign(idx.begin() + static_cast<long>(i * slots), idx.begin() + static_cast<long>((i + 1) * slots));
        m->keys.assign(k.begin() + static_cast<long>(i * per), k.begin() + static_cast<long>((i + 1) * per));
        m->values.assign(v.begin() + static_cast<long>(i * per), v.begin() + static_cast<long>((i + 1) * per));
        out.push_back(m);
    }
    return out;
}

std::vector<std::vector<int>> plan_for(const std::string& k, const std::string& model = kModel) {
    const json::Value meta = json::parse_file(golden("meta.json", model));
    std::vector<std::vector<int>> plan;
    for (const json::Value& chunk : meta.find("memories_per_chunk")->find(k)->as_array()) {
        std::vector<int> refs;
        for (const json::Value& r : chunk.as_array()) refs.push_back(static_cast<int>(r.as_int()));
        plan.push_back(refs);
    }
    return plan;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
    return d;
}

class Memory3Session : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        const BackendModule* b = test::backends().find(GetParam());
        if (!b) GTEST_SKIP() << "backend " << GetParam() << " was not built";
        if (b->api->device_count() == 0) {
            const char* why = b->api->unavailable_reason ? b->api->unavailable_reason() : nullptr;
            GTEST_SKIP() << "backend " << GetParam() << " has no device" << (why ? std::string(": ") + why : "");
        }
    }
};

void check_written_memories(const std::string& backend, const std::string& model) {
    auto s = open_on(backend, 128, 256, model);
    ASSERT_TRUE(s->reads_memories());
    const MemorySpec& spec = s->memory_spec();
    EXPECT_EQ(spec.prefix_ids, load_npy(golden("reference_bos_ids.npy", model)).as_i32());
    const auto written = s->write_memories(golden_references(model));
    const std::vector<int32_t> idx = load_npy(golden("memory_indices.npy", model)).as_i32();
    const std::vector<float> k = load_npy(golden("memory_keys.npy", model)).as_f32();
    const std::vector<float> v = load_npy(golden("memory_values.npy", model)).as_f32();
    const std::vector<float> vec = load_npy(golden("retrieval_vectors.npy", model)).as_f32();
    ASSERT_EQ(written.size(), 8u);
    std::vector<int32_t> got_idx;
    std::vector<float> got_k, got_v, got_vec;
    for (const WrittenMemory& w : written) {
        got_idx.insert(got_idx.end(), w.memory.indices.begin(), w.memory.indices.end());
        got_k.insert(got_k.end(), w.memory.keys.begin(), w.memory.keys.end());
        got_v.insert(got_v.end(), w.memory.values.begin(), w.memory.values.end());
        got_vec.insert(got_vec.end(), w.vector.begin(), w.vector.end());
    }
    EXPECT_EQ(got_idx, idx) << "kept token indices per (explicit-memory layer, kv head)";
    EXPECT_LT(max_abs_diff(got_k, k), 2e-5);
    EXPECT_LT(max_abs_diff(got_v, v), 2e-5);
    EXPECT_LT(max_abs_diff(got_vec, vec), 2e-5);
}

void check_query_vectors(const std::string& backend, const std::string& model) {
    auto s = open_on(backend, 128, 256, model);
    const std::vector<int32_t> ctx = load_npy(golden("context_ids.npy", model)).as_i32();
    const json::Value meta = json::parse_file(golden("meta.json", model));
    const json::Value* ranges = meta.find("query_text_ranges");
    ASSERT_NE(ranges, nullptr);
    std::vector<std::vector<int32_t>> texts;
    for (const json::Value& r : ranges->as_array())
        texts.emplace_back(ctx.begin() + r.as_array()[0].as_int(), ctx.begin() + r.as_array()[1].as_int());
    const auto got = s->retrieval_vectors(texts);
    const std::vector<float> want = load_npy(golden("query_retrieval_vectors.npy", model)).as_f32();
    std::vector<float> flat;
    for (const auto& g : got) flat.insert(flat.end(), g.begin(), g.end());
    EXPECT_LT(max_abs_diff(flat, want), 2e-5);
}

TEST_P(Memory3Session, WritesTheGoldenMemories) { check_written_memories(GetParam(), kModel); }
TEST_P(Memory3Session, QueryRetrievalVectorsMatch) { check_query_vectors(GetParam(), kModel); }

// Prompt (40 tokens, 3 chunks) through append, then 24 tokens through decode one at a time.
void check_logits(const std::string& backend, const std::string& k, int32_t ubatch, bool prefetching = false,
                  const std::string& model = kModel) {
    auto s = open_on(backend, 128, ubatch, model);
    const auto plan = plan_for(k, model);
    const auto mems = golden_memories(model);
    const std::shared_ptr<ScriptedSource> source = prefetching ? std::make_shared<PrefetchingSource>(plan, mems)
                                                               : std::make_shared<ScriptedSource>(plan, mems);
    s->set_memory_source(source);
    const std::vector<int32_t> ctx = load_npy(golden("context_ids.npy", model)).as_i32();
    const NpyArray want_arr = load_npy(golden("logits_" + k + ".npy", model));
    const std::vector<float> want = want_arr.as_f32();
    const size_t vocab = static_cast<size_t>(want_arr.shape[1]);
    std::vector<float> got = s->append(0, std::vector<int32_t>(ctx.begin(), ctx.begin() + 40), /*all_logits=*/true);
    for (int32_t t = 40; t < 64; ++t) {
        source->step = t;
        const auto& l = s->decode({{ctx[static_cast<size_t>(t)], t, 0, true}});
        got.insert(got.end(), l.begin(), l.end());
    }
    ASSERT_EQ(got.size(), 64 * vocab);
    EXPECT_LT(test::max_rel_error(got, want), 2e-5) << k << " memories per chunk, ubatch " << ubatch;
    EXPECT_EQ(source->calls(), 4u) << "prompt chunks 0-2 and decoded chunk 1 retrieve; decoded chunk 0 does not";
    if (prefetching) {
        // The prompt's chunks before its first retrieval, decoded chunk 1 (positions 56..71, the
        // text of 40..55) while position 55 was decoded; each query vector computed once.
        const auto& announced = static_cast<const PrefetchingSource&>(*source).announced;
        ASSERT_EQ(announced.size(), 4u);
        EXPECT_EQ(announced[3].step, 55);
        EXPECT_EQ(announced[3].query.tokens, std::vector<int32_t>(ctx.begin() + 40, ctx.begin() + 56));
        for (const auto& a : announced) EXPECT_EQ(a.query.seq, 0);
        EXPECT_EQ(s->memory_stats().query_passes, 2u) << "one pass for the prompt's chunks, one for decoded chunk 1";
    }
}

TEST_P(Memory3Session, LogitsWithoutMemories) { check_logits(GetParam(), "0", 256); }
TEST_P(Memory3Session, LogitsWithOneMemoryPerChunk) { check_logits(GetParam(), "1", 256); }
TEST_P(Memory3Session, LogitsWithFiveMemoriesPerChunk) { check_logits(GetParam(), "5", 256); }
// Small runs: chunks split across runs and blocks reused between runs.
TEST_P(Memory3Session, LogitsWithFiveMemoriesInSmallBatches) { check_logits(GetParam(), "5", 7); }
// A prefetching source hears every query first and changes nothing.
TEST_P(Memory3Session, LogitsWithAPrefetchingSource) { check_logits(GetParam(), "5", 256, /*prefetching=*/true); }

INSTANTIATE_TEST_SUITE_P(Backends, Memory3Session, ::testing::Values("cpu", "vulkan", "cuda"),
                         [](const auto& info) { return info.param; });

// The same with UltraMemV2 memory layers in the checkpoint: they run in the writer's and the
// retrieval query's passes too (keys, values and retrieval vectors depend on them), and in
// reading, prompt and decode alike.
class Memory3UltraMemSession : public Memory3Session {};

TEST_P(Memory3UltraMemSession, WritesTheGoldenMemories) { check_written_memories(GetParam(), kUltraMemModel); }
TEST_P(Memory3UltraMemSession, QueryRetrievalVectorsMatch) { check_query_vectors(GetParam(), kUltraMemModel); }
TEST_P(Memory3UltraMemSession, LogitsWithoutMemories) { check_logits(GetParam(), "0", 256, false, kUltraMemModel); }
TEST_P(Memory3UltraMemSession, LogitsWithOneMemoryPerChunk) { check_logits(GetParam(), "1", 256, false, kUltraMemModel); }
TEST_P(Memory3UltraMemSession, LogitsWithFiveMemoriesPerChunk) {
    check_logits(GetParam(), "5", 256, false, kUltraMemModel);
}
TEST_P(Memory3UltraMemSession, LogitsWithFiveMemoriesInSmallBatches) {
    check_logits(GetParam(), "5", 7, false, kUltraMemModel);
}

INSTANTIATE_TEST_SUITE_P(Backends, Memory3UltraMemSession, ::testing::Values("cpu", "vulkan", "cuda"),
                         [](const auto& info) { return info.param; });

// ---------------------------------------------------------------- memory folders

class MemoryFolder : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("mnemo-memories-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        session_ = open_on("cpu");
        model_ = memory_folder_model(*session_);
        const auto refs = golden_references();
        written_ = session_->write_memories(refs);
        for (const auto& r : refs) meta_.push_back({r, "reference"});
        write_memory_folder(dir_.string(), model_, written_, meta_, false);
    }
    void TearDown() override { fs::remove_all(dir_); }
    fs::path dir_;
    std::unique_ptr<Session> session_;
    MemoryFolderModel model_;
    std::vector<WrittenMemory> written_;
    std::vector<MemoryReference> meta_;
};

TEST_F(MemoryFolder, RoundTripsAndRetrieves) {
    FolderMemorySource src(dir_.string(), model_, RetrievalMode::Vector);
    EXPECT_EQ(src.size(), 8u);
    for (uint32_t i = 0; i < 8; ++i) {
        auto m = src.load(i);
        EXPECT_EQ(m->keys, written_[i].memory.keys);
        EXPECT_EQ(m->values, written_[i].memory.values);
        EXPECT_EQ(m->indices, written_[i].memory.indices);
    }
    // A reference's own vector finds it first.
    ChunkQuery q;
    q.vector = &written_[5].vector;
    const auto ranked = src.rank(q, 3);
    ASSERT_FALSE(ranked.empty());
    EXPECT_EQ(ranked[0].first, 5u);
    // BM25: a reference's own tokens find it first.
    FolderMemorySource lex(dir_.string(), model_, RetrievalMode::BM25);
    ChunkQuery qt;
    qt.tokens = &meta_[2].tokens;
    EXPECT_EQ(lex.rank(qt, 1).at(0).first, 2u);
    // Existing folders are not overwritten by accident.
    EXPECT_THROW(write_memory_folder(dir_.string(), model_, written_, meta_, false), Error);
}

TEST_F(MemoryFolder, GeneratesWithAFolderSource) {
    session_->set_memory_source(std::make_shared<FolderMemorySource>(dir_.string(), model_, RetrievalMode::Vector));
    const std::vector<int32_t> ctx = load_npy(golden("context_ids.npy")).as_i32();
    const auto& l = session_->append(0, std::vector<int32_t>(ctx.begin(), ctx.begin() + 40));
    EXPECT_TRUE(test::all_finite(l));
    EXPECT_EQ(session_->memory_stats().retrievals, 3u);
    EXPECT_GT(session_->memory_stats().memories_read, 0u);
}

void expect_error(const std::function<void()>& f, const std::string& needle) {
    try {
        f();
        ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

TEST_F(MemoryFolder, RefusesAnotherModel) {
    MemoryFolderModel other = model_;
    other.fingerprint = std::string(64, '0');
    expect_error([&] { FolderMemorySource(dir_.string(), other, RetrievalMode::Vector); }, "fingerprint");
    other = model_;
    other.spec.head_dim = 32;
    expect_error([&] { FolderMemorySource(dir_.string(), other, RetrievalMode::Vector); }, "head_dim");
}

TEST_F(MemoryFolder, DetectsTruncationAndDamage) {
    const fs::path rec = dir_ / "records.bin";
    {  // a flipped byte inside record 3's payload
        std::fstream f(rec, std::ios::in | std::ios::out | std::ios::binary);
        const uint64_t record = (fs::file_size(rec) - 16) / 8;
        f.seekp(static_cast<std::streamoff>(16 + 3 * record + 40));
        f.put('\x55');
    }
    FolderMemorySource src(dir_.string(), model_, RetrievalMode::Vector);
    EXPECT_NO_THROW(src.load(2));
    expect_error([&] { src.load(3); }, "record 3: checksum mismatch");
    fs::resize_file(rec, fs::file_size(rec) - 10);
    expect_error([&] { FolderMemorySource(dir_.string(), model_, RetrievalMode::Vector); }, "truncated");
}

TEST(Memory3Errors, ReferencesOutOfRange) {
    auto s = open_on("cpu");
    expect_error([&] { s->write_memories({std::vector<int32_t>(25, 7)}); }, "1..24 are allowed");
    expect_error([&] { s->write_memories({{}}); }, "holds 0 tokens");
    expect_error([&] { s->write_memories({{100000}}); }, "outside the vocabulary");
}

TEST(Memory3Errors, PlainModelsDoNotReadMemories) {
    auto s = test::open_model(test::model_dir("llama-tiny-f32"));
    EXPECT_FALSE(s->reads_memories());
    expect_error([&] { s->memory_spec(); }, "does not read explicit memories");
}

}  // namespace

// A source whose memories change under the same ids without the session being told (a knowledge
// server whose bank was rebuilt and renumbered): the blocks filled from the old objects must not
// serve the new ones (same_memories compares objects, not only ids).
class SwappableSource : public MemorySource {
public:
    explicit SwappableSource(std::vector<std::vector<int>> plan) : plan_(std::move(plan)) {}
    bool wants_vector() const override { return false; }
    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery&, int32_t) override {
        std::vector<std::shared_ptr<const ExplicitMemory>> out;
        for (int r : plan_[calls++ % plan_.size()]) out.push_back(memories[static_cast<size_t>(r)]);
        return out;
    }
    std::string describe() const override { return "swappable source"; }

    std::vector<std::shared_ptr<const ExplicitMemory>> memories;
    size_t calls = 0;

private:
    std::vector<std::vector<int>> plan_;
};

std::vector<float> generate_golden_context(Session& s, SwappableSource& source) {
    const std::vector<int32_t> ctx = load_npy(golden("context_ids.npy")).as_i32();
    s.reset_all();
    source.calls = 0;
    std::vector<float> got = s.append(0, std::vector<int32_t>(ctx.begin(), ctx.begin() + 40), /*all_logits=*/true);
    for (int32_t t = 40; t < 64; ++t) {
        const auto& l = s.decode({{ctx[static_cast<size_t>(t)], t, 0, true}});
        got.insert(got.end(), l.begin(), l.end());
    }
    return got;
}

TEST(Memory3Blocks, NewMemoriesUnderOldIdsAreUploadedAgain) {
    const auto v1 = golden_memories();
    std::vector<std::shared_ptr<const ExplicitMemory>> v2;
    for (const auto& m : v1) {
        auto changed = std::make_shared<ExplicitMemory>(*m);  // same id, other values
        for (float& x : changed->values) x = -x;
        v2.push_back(changed);
    }
    auto source = std::make_shared<SwappableSource>(plan_for("5"));
    auto s = open_on("cpu");
    s->set_memory_source(source);
    source->memories = v1;
    const std::vector<float> with_v1 = generate_golden_context(*s, *source);
    source->memories = v2;  // the session is not told
    const std::vector<float> got = generate_golden_context(*s, *source);

    auto fresh_source = std::make_shared<SwappableSource>(plan_for("5"));
    fresh_source->memories = v2;
    auto fresh = open_on("cpu");
    fresh->set_memory_source(fresh_source);
    const std::vector<float> want = generate_golden_context(*fresh, *fresh_source);
    ASSERT_GT(max_abs_diff(want, with_v1), 1e-3) << "the two versions must differ, or this test proves nothing";
    EXPECT_LT(max_abs_diff(got, want), 1e-6);
}
