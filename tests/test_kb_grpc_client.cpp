// The knowledge server's client (engine/src/kb, mnemo/kb/kb_source.hpp) against an
// in-test server: a KnowledgeBase service over a compressed memory folder written by the memory3
// test model, ranking with FolderMemorySource::rank, on 127.0.0.1 with a port the OS picks.
// Generation through the client must give the logits of the in-process folder source (with and
// without prefetch, one round trip or two); the cache must save refetching; a bad token, a
// stopped or slow server must cost the chunk its memories (one warning), never a hang; a
// restarted server must be used again; a bank for another model must be refused by name.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

#include "io/sha256.hpp"
#include "kb/kb_url.hpp"
#include "kb/outage.hpp"
#include "kb/record_cache.hpp"
#include "mnemo/error.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "fixtures/fake_bank_info.hpp"
#include "fixtures/random_codebook.hpp"
#include "fixtures/vq_memory_folder.hpp"
#include "mnemo/kb/kb_source.hpp"
#include "mnemo_kb.grpc.pb.h"
#include "model_test_util.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
namespace kbv1 = mnemo::kb::v1;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kReferences = 40;
constexpr int32_t kPrompt = 40, kEnd = 64;  // prompt positions 0..39, decoded 40..63
const std::string kToken = "s3cret-read-token";

std::unique_ptr<Session> open_memory3() { return test::open_model(test::model_dir("memory3-tiny-f32"), 128); }

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The served codebooks, parsed back as the client parses them.
VqCodebook random_codebook(uint32_t dim, std::mt19937& rng) {
    const std::vector<uint8_t> bytes = test::random_codebook(dim, rng, 0.1f).to_bytes();
    return parse_vq_codebook(bytes.data(), bytes.size(), "test codebook", "");
}

// The KnowledgeBase service over a memory folder, with knobs for the faults a test needs.
class FakeKnowledgeBase final : public kbv1::KnowledgeBase::Service {
public:
    FakeKnowledgeBase(const std::string& dir, const MemoryFolderModel& model)
        : model_(model), by_vector_(dir, model, RetrievalMode::Vector), by_tokens_(dir, model, RetrievalMode::BM25) {
        MemoryFolderContents c = read_memory_folder(dir);
        codec_ = std::move(c.codec);
        for (size_t i = 0; i < c.memories.size(); ++i)
            records_.push_back(encode_memory_record(c.memories[i].memory, static_cast<uint32_t>(i), model.spec, codec_.get()));
        references_ = std::move(c.references);
    }

    std::atomic<uint64_t> version{1};
    std::atomic<int> delay_ms{0};
    std::atomic<int> calls{0};
    std::atomic<int> records_sent{0};
    std::atomic<double> last_min_relative_score{-1};  // what the last Retrieve asked for
    std::atomic<int64_t> last_min_references{-1};
    void set_token(const std::string& t) {
        std::lock_guard<std::mutex> l(mu_);
        token_ = t;
    }
    void set_fingerprint(const std::string& f) {
        std::lock_guard<std::mutex> l(mu_);
        fingerprint_ = f;
    }

    grpc::Status Info(grpc::ServerContext* ctx, const kbv1::InfoRequest*, kbv1::InfoReply* reply) override {
        if (auto st = authorize(ctx); !st.ok()) return st;
        MemoryFolderModel m = model_;
        {
            std::lock_guard<std::mutex> l(mu_);
            if (!fingerprint_.empty()) m.fingerprint = fingerprint_;
        }
        mnemo::test::describe_bank(reply, m, codec_.get(), records_.front().size(), records_.size(), version);
        return grpc::Status::OK;
    }

    grpc::Status GetCodebook(grpc::ServerContext* ctx, const kbv1::CodebookRequest* req,
                             grpc::ServerWriter<kbv1::CodebookChunk>* out) override {
        if (auto st = authorize(ctx); !st.ok()) return st;
        const VqCodebook* cb = req->sha256() == codec_->keys.sha256 ? &codec_->keys : req->sha256() == codec_->values.sha256 ? &codec_->values : nullptr;
        if (!cb) return {grpc::StatusCode::NOT_FOUND, "no codebook " + req->sha256()};
        const std::vector<uint8_t> bytes = cb->to_bytes();
        // Small chunks, so the client's reassembly is exercised.
        for (size_t off = 0; off < bytes.size(); off += 4000) {
            kbv1::CodebookChunk c;
            c.set_offset(off);
            c.set_total_bytes(bytes.size());
            c.set_data(std::string(bytes.begin() + static_cast<long>(off), bytes.begin() + static_cast<long>(std::min(bytes.size(), off + 4000))));
            out->Write(c);
        }
        return grpc::Status::OK;
    }

    grpc::Status Retrieve(grpc::ServerContext* ctx, const kbv1::RetrieveRequest* req, kbv1::RetrieveReply* reply) override {
        return rank(ctx, *req, reply);
    }

    grpc::Status RetrieveMemories(grpc::ServerContext* ctx, const kbv1::RetrieveRequest* req, kbv1::RetrieveMemoriesReply* reply) override {
        if (auto st = rank(ctx, *req, reply->mutable_retrieval()); !st.ok()) return st;
        for (const kbv1::Hit& h : reply->retrieval().hits()) {
            if (std::find(req->have_ids().begin(), req->have_ids().end(), h.id()) != req->have_ids().end()) continue;
            kbv1::MemoryRecord* r = reply->add_records();
            r->set_id(h.id());
            r->set_record(records_[h.id()]);
            ++records_sent;
        }
        return grpc::Status::OK;
    }

    grpc::Status FetchMemories(grpc::ServerContext* ctx, const kbv1::FetchRequest* req, grpc::ServerWriter<kbv1::MemoryRecord>* out) override {
        if (auto st = authorize(ctx); !st.ok()) return st;
        ++calls;
        if (req->bank_version() != 0 && req->bank_version() != version) return {grpc::StatusCode::FAILED_PRECONDITION, "bank version changed"};
        for (uint32_t id : req->ids()) {
            if (id >= records_.size()) return {grpc::StatusCode::NOT_FOUND, "no record " + std::to_string(id)};
            kbv1::MemoryRecord r;
            r.set_id(id);
            r.set_record(records_[id]);
            out->Write(r);
            ++records_sent;
        }
        return grpc::Status::OK;
    }

private:
    grpc::Status authorize(grpc::ServerContext* ctx) {
        std::lock_guard<std::mutex> l(mu_);
        auto it = ctx->client_metadata().find("authorization");
        if (it == ctx->client_metadata().end() || std::string(it->second.data(), it->second.size()) != "Bearer " + token_)
            return {grpc::StatusCode::UNAUTHENTICATED, "missing or wrong bearer token"};
        return grpc::Status::OK;
    }

    grpc::Status rank(grpc::ServerContext* ctx, const kbv1::RetrieveRequest& req, kbv1::RetrieveReply* reply) {
        if (auto st = authorize(ctx); !st.ok()) return st;
        ++calls;
        last_min_relative_score = req.min_relative_score();
        last_min_references = req.min_references();
        // A slow server: wait, but give up when the client has (its deadline), bounded anyway.
        const auto t0 = Clock::now();
        while (seconds_since(t0) * 1000 < delay_ms && !ctx->IsCancelled() && seconds_since(t0) < 5)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (req.bank_version() != 0 && req.bank_version() != version) return {grpc::StatusCode::FAILED_PRECONDITION, "bank version changed"};
        if (!req.key_codebook_sha256().empty() && req.key_codebook_sha256() != codec_->keys.sha256)
            return {grpc::StatusCode::FAILED_PRECONDITION, "codebook changed"};
        std::vector<float> vec(req.vector().begin(), req.vector().end());
        std::vector<int32_t> toks(req.tokens().begin(), req.tokens().end());
        if (!vec.empty() && !toks.empty()) return {grpc::StatusCode::UNIMPLEMENTED, "the test server does not fuse rankings"};
        ChunkQuery q;
        q.vector = &vec;
        q.tokens = &toks;
        const auto ranked = (vec.empty() ? by_tokens_ : by_vector_).rank(q, static_cast<int32_t>(req.k()));
        for (const auto& [id, score] : ranked) {
            kbv1::Hit* h = reply->add_hits();
            h->set_id(id);
            h->set_score(static_cast<float>(score));
            if (!req.omit_texts()) {
                h->set_text(references_[id].text);
                h->set_source("ref" + std::to_string(id) + ".txt");
            }
        }
        reply->set_bank_version(version);
        return grpc::Status::OK;
    }

    MemoryFolderModel model_;
    FolderMemorySource by_vector_, by_tokens_;
    std::unique_ptr<MemoryCodec> codec_;
    std::vector<std::string> records_;
    std::vector<MemoryReference> references_;
    std::mutex mu_;
    std::string token_ = kToken;
    std::string fingerprint_;
};

// The service on 127.0.0.1, stoppable and restartable on the same port.
class LoopbackServer {
public:
    explicit LoopbackServer(FakeKnowledgeBase& service) : service_(service) { start(); }
    ~LoopbackServer() { stop(); }
    void start() {
        grpc::ServerBuilder b;
        int selected = 0;
        b.AddListeningPort("127.0.0.1:" + std::to_string(port_), grpc::InsecureServerCredentials(), &selected);
        b.RegisterService(&service_);
        server_ = b.BuildAndStart();
        ASSERT_TRUE(server_) << "cannot listen on 127.0.0.1:" << port_;
        ASSERT_GT(selected, 0);
        port_ = selected;
    }
    void stop() {
        if (!server_) return;
        server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
        server_->Wait();
        server_.reset();
    }
    std::string url() const { return "grpc://127.0.0.1:" + std::to_string(port_); }

private:
    FakeKnowledgeBase& service_;
    int port_ = 0;
    std::unique_ptr<grpc::Server> server_;
};

// Warnings a source emitted.
struct Warnings {
    std::mutex mu;
    std::vector<std::string> lines;
    std::function<void(const std::string&)> sink() {
        return [this](const std::string& m) {
            std::lock_guard<std::mutex> l(mu);
            lines.push_back(m);
        };
    }
    std::vector<std::string> get() {
        std::lock_guard<std::mutex> l(mu);
        return lines;
    }
};

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

class KbGrpcClient : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        root_ = new fs::path(fs::temp_directory_path() / ("mnemo-kb-client-test-" + std::to_string(::getpid())));
        fs::remove_all(*root_);
        fs::create_directories(*root_);
        auto session = open_memory3();
        model_ = new MemoryFolderModel(memory_folder_model(*session));
        const MemorySpec& s = model_->spec;
        std::mt19937 rng(11);
        std::uniform_int_distribution<int32_t> token(3, session->vocab_size() - 1), length(1, 24);
        std::vector<std::vector<int32_t>> refs(kReferences);
        for (auto& r : refs) {
            r.resize(static_cast<size_t>(length(rng)));
            for (int32_t& t : r) t = token(rng);
        }
        std::vector<WrittenMemory> written = session->write_memories(refs);
        MemoryCodec codec{random_codebook(static_cast<uint32_t>(s.head_dim), rng), random_codebook(static_cast<uint32_t>(s.value_dim), rng)};
        mnemo::test::give_random_codes(written, s, rng);
        std::vector<MemoryReference> meta;
        for (size_t i = 0; i < refs.size(); ++i) meta.push_back({refs[i], "reference number " + std::to_string(i)});
        write_memory_folder(dir(), *model_, written, meta, false, &codec);
        vectors_ = new std::vector<std::vector<float>>();
        for (const WrittenMemory& w : written) vectors_->push_back(w.vector);
        // The context the sessions read: a random prompt and the tokens fed while decoding.
        context_ = new std::vector<int32_t>(kEnd);
        for (int32_t& t : *context_) t = token(rng);
    }
    static void TearDownTestSuite() {
        fs::remove_all(*root_);
        delete context_;
        delete vectors_;
        delete model_;
        delete root_;
    }
    static std::string dir() { return (*root_ / "vq").string(); }

    KbSourceOptions options(const std::string& url) {
        KbSourceOptions o;
        o.url = url;
        o.token = kToken;
        o.warn = warnings_.sink();
        o.backoff_initial_ms = 50;
        o.backoff_max_ms = 400;
        return o;
    }

    // The prompt through append() (its chunks retrieve), then one token per decode() step; every
    // position's logits. `between` runs before each decode step (a fault in mid-generation).
    static std::vector<float> generate(std::shared_ptr<MemorySource> source, const std::function<void(int32_t)>& between = {}) {
        auto s = open_memory3();
        if (source) s->set_memory_source(std::move(source));
        const std::vector<int32_t>& ctx = *context_;
        std::vector<float> got = s->append(0, std::vector<int32_t>(ctx.begin(), ctx.begin() + kPrompt), /*all_logits=*/true);
        for (int32_t t = kPrompt; t < kEnd; ++t) {
            if (between) between(t);
            const auto& l = s->decode({{ctx[static_cast<size_t>(t)], t, 0, true}});
            got.insert(got.end(), l.begin(), l.end());
        }
        return got;
    }
    static const std::vector<float>& folder_logits() {
        static const std::vector<float> v = generate(std::make_shared<FolderMemorySource>(dir(), *model_, RetrievalMode::Vector));
        return v;
    }
    static const std::vector<float>& no_memory_logits() {
        static const std::vector<float> v = generate(nullptr);
        return v;
    }
    ChunkQuery query_near(size_t ref, int32_t seq = 0) {
        ChunkQuery q;
        q.vector = &(*vectors_)[ref];
        q.tokens = &empty_tokens_;
        q.seq = seq;
        return q;
    }

    static inline fs::path* root_ = nullptr;
    static inline MemoryFolderModel* model_ = nullptr;
    static inline std::vector<std::vector<float>>* vectors_ = nullptr;
    static inline std::vector<int32_t>* context_ = nullptr;
    std::vector<int32_t> empty_tokens_;
    Warnings warnings_;
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double d = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
    return d;
}

// ---------------------------------------------------------------- same memories, same logits

struct Variant {
    const char* name;
    KbRetrieval retrieval;
    bool prefetch;
    bool single_round_trip;
};

class KbGrpcClientLogits : public KbGrpcClient, public ::testing::WithParamInterface<Variant> {};

TEST_P(KbGrpcClientLogits, EqualTheFolderSource) {
    const Variant v = GetParam();
    FakeKnowledgeBase service(dir(), *model_);
    LoopbackServer server(service);
    KbSourceOptions o = options(server.url());
    o.retrieval = v.retrieval;
    o.prefetch = v.prefetch;
    o.single_round_trip = v.single_round_trip;
    const auto kb = connect_kb(o, *model_);
    EXPECT_EQ(kb->prefetches(), v.prefetch);
    const RetrievalMode mode = v.retrieval == KbRetrieval::BM25 ? RetrievalMode::BM25 : RetrievalMode::Vector;
    const std::vector<float> want = v.retrieval == KbRetrieval::Vector
                                        ? folder_logits()
                                        : generate(std::make_shared<FolderMemorySource>(dir(), *model_, mode));
    const std::vector<float> got = generate(kb);
    EXPECT_LE(max_abs_diff(got, want), 1e-6);
    if (v.retrieval == KbRetrieval::Vector) {
        EXPECT_GT(max_abs_diff(got, no_memory_logits()), 1e-3) << "the memories must change the logits, or this test proves nothing";
    }
    const KbSourceStatus st = kb->status();
    EXPECT_EQ(st.retrievals, 4u) << "prompt chunks 0-2 and decoded chunk 1";
    EXPECT_EQ(st.failures, 0u);
    EXPECT_EQ(st.state, KbSourceState::Connected);
    EXPECT_EQ(st.bank_version, 1u);
    EXPECT_EQ(st.prefetches, v.prefetch ? 4u : 0u) << "every chunk announced once";
    // An announced query the worker has not started yet is asked inline (two calls in flight
    // instead of one queue), so how many the worker answered depends on timing (PrefetchedAnswer
    // checks one deterministically).
    EXPECT_LE(st.prefetch_hits, v.prefetch ? 4u : 0u);
    if (v.retrieval == KbRetrieval::Vector) {
        EXPECT_EQ(st.cache_hits + st.cache_misses, 20u) << "5 memories for each of 4 chunks";
    }
    EXPECT_EQ(st.cache_misses, st.records_fetched);
    EXPECT_EQ(st.records_fetched, static_cast<uint64_t>(service.records_sent));
    EXPECT_GT(st.record_bytes, 0u);
    EXPECT_TRUE(warnings_.get().empty());
    if (v.retrieval == KbRetrieval::Vector) {
        EXPECT_EQ(kb->last_references(0).size(), 5u);
        for (const RetrievedReference& r : kb->last_references(0)) {
            EXPECT_EQ(r.text, "reference number " + std::to_string(r.id));
            EXPECT_EQ(r.source, "ref" + std::to_string(r.id) + ".txt");
        }
    }
}

INSTANTIATE_TEST_SUITE_P(KbGrpcClient, KbGrpcClientLogits,
                         ::testing::Values(Variant{"VectorPrefetchOneTrip", KbRetrieval::Vector, true, true},
                                           Variant{"VectorNoPrefetchOneTrip", KbRetrieval::Vector, false, true},
                                           Variant{"VectorPrefetchTwoCalls", KbRetrieval::Vector, true, false},
                                           Variant{"Bm25NoPrefetchTwoCalls", KbRetrieval::BM25, false, false}),
                         [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------- prefetch

// An announced query is fetched by the worker; retrieve() then takes that answer without a call
// of its own, and it is the answer a plain retrieve gives.
TEST_F(KbGrpcClient, PrefetchedAnswerIsTakenWithoutASecondCall) {
    FakeKnowledgeBase service(dir(), *model_);
    LoopbackServer server(service);
    const auto kb = connect_kb(options(server.url()), *model_);
    ASSERT_TRUE(kb->prefetches());
    kb->prefetch(query_near(9, 2), 5);
    for (int i = 0; i < 400 && kb->status().calls == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(kb->status().calls, 1u) << "the worker did not fetch the announced query within 2 s";
    const int calls = service.calls;
    const auto got = kb->retrieve(query_near(9, 2), 5);
    EXPECT_EQ(service.calls, calls) << "answered from the prefetch";
    EXPECT_EQ(kb->status().prefetch_hits, 1u);
    ASSERT_EQ(got.size(), 5u);
    EXPECT_EQ(got.front()->id, 9u);
    // The same query again, not announced: the same memories (from the cache), by a call.
    const auto plain = kb->retrieve(query_near(9, 2), 5);
    ASSERT_EQ(plain.size(), 5u);
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(plain[i].get(), got[i].get());
    EXPECT_EQ(service.calls, calls + 1);
    EXPECT_EQ(kb->last_references(2).size(), 5u);
    EXPECT_TRUE(kb->last_references(0).empty()) << "references are kept per sequence";
}

// The relative score cut is the server's to apply (it ranks): the client sends the option with
// every retrieval and names it in describe().
TEST_F(KbGrpcClient, SendsTheRelativeScoreCut) {
    FakeKnowledgeBase service(dir(), *model_);
    LoopbackServer server(service);
    KbSourceOptions o = options(server.url());
    o.min_relative_score = 0.7;
    o.min_references = 3;
    o.prefetch = false;
    const auto kb = connect_kb(o, *model_);
    EXPECT_NE(kb->describe().find("min relative score 0.7, at least 3 kept"), std::string::npos) << kb->describe();
    kb->retrieve(query_near(9, 0), 5);
    EXPECT_DOUBLE_EQ(service.last_min_relative_score.load(), 0.7);
    EXPECT_EQ(service.last_min_references.load(), 3);
    o.min_relative_score = 1.5;
    try {
        connect_kb(o, *model_);
        ADD_FAILURE() << "a cut outside [0, 1] was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("minimum relative score must be in [0, 1]"), std::string::npos) << e.what();
    }
}

// ---------------------------------------------------------------- the cache

TEST_F(KbGrpcClient, CacheAvoidsRefetching) {
    FakeKnowledgeBase service(dir(), *model_);
    LoopbackServer server(service);
    for (bool one_trip : {true, false}) {
        KbSourceOptions o = options(server.url());
        o.prefetch = false;
        o.single_round_trip = one_trip;
        const auto kb = connect_kb(o, *model_);
        const int before = service.records_sent;
        const auto first = kb->retrieve(query_near(7), 5);
        ASSERT_EQ(first.size(), 5u);
        EXPECT_EQ(first.front()->id, 7u) << "a reference's own vector ranks it first";
        EXPECT_EQ(service.records_sent - before, 5);
        const auto again = kb->retrieve(query_near(7), 5);
        EXPECT_EQ(service.records_sent - before, 5) << "nothing fetched twice";
        ASSERT_EQ(again.size(), 5u);
        for (size_t i = 0; i < 5; ++i) EXPECT_EQ(again[i].get(), first[i].get()) << "the cached records themselves";
        const KbSourceStatus st = kb->status();
        EXPECT_EQ(st.records_fetched, 5u);
        EXPECT_EQ(st.cache_misses, 5u);
        EXPECT_EQ(st.cache_hits, 5u);
        EXPECT_EQ(st.calls, one_trip ? 2u : 3u) << "Retrieve + FetchMemories, then Retrieve alone";
    }
}

TEST_F(KbGrpcClient, RecordCacheEvictsTheLeastRecentlyUsed) {
    detail::RecordCache cache(2);
    auto mem = [](uint32_t id) {
        auto m = std::make_shared<ExplicitMemory>();
        m->id = id;
        return m;
    };
    cache.put(1, mem(1));
    cache.put(2, mem(2));
    EXPECT_TRUE(cache.get(1));
    cache.put(3, mem(3));  // evicts 2, used before 1
    EXPECT_TRUE(cache.get(1));
    EXPECT_FALSE(cache.get(2));
    const auto recent = cache.recent(5);
    ASSERT_EQ(recent.size(), 2u);
    EXPECT_EQ(recent[0].first, 1u);
    EXPECT_EQ(recent[1].first, 3u);
}

// ---------------------------------------------------------------- faults

TEST_F(KbGrpcClient, WrongTokenIsRefusedWhenConnecting) {
    FakeKnowledgeBase service(dir(), *model_);
    LoopbackServer server(service);
    KbSourceOptions o = options(server.url());
    o.token = "not-the-token";
    try {
        connect_kb(o, *model_);
        ADD_FAILURE() << "connected with a wrong token";
    } catch (const Error& e) {
        EXPECT_TRUE(contains(e.what(), "knowledge server " + server.url() + ": Info failed: UNAUTHENTICATED")) << e.what();
    }
}

TEST_F(KbGrpcClient, RevokedTokenWarnsOnceAndGenerationGoesOnWithoutMemories) {
    FakeKnowledgeBase service(dir(), *model_);
    LoopbackServer server(service);
    KbSourceOptions o = options(server.url());
    const auto kb = connect_kb(o, *model_);
    service.set_token("another");
    const std::vector<float> got = generate(kb);
    EXPECT_LE(max_abs_diff(got, no_memory_logits()), 1e-6) << "every chunk without memories";
    const auto w = warnings_.get();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_TRUE(contains(w[0], "RetrieveMemories failed: UNAUTHENTICATED")) << w[0];
    EXPECT_TRUE(contains(w[0], server.url())) << w[0];
    EXPECT_TRUE(contains(w[0], "generating without memories until it is back")) << w[0];
    const KbSourceStatus st = kb->status();
    EXPECT_EQ(st.state, KbSourceState::Unavailable);
    EXPECT_EQ(st.retrievals, 4u);
    EXPECT_GE(st.failures, 1u);
    EXPECT_EQ(st.outages, 1u);
    EXPECT_TRUE(kb->last_references(0).empty());
}

TEST_F(KbGrpcClient, ServerStoppedMidGenerationThenRestarted) {
    FakeKnowledgeBase service(dir(), *model_);
    LoopbackServer server(service);
    const auto kb = connect_kb(options(server.url()), *model_);
    const auto t0 = Clock::now();
    const std::vector<float> got = generate(kb, [&](int32_t t) {
        if (t == 50) server.stop();  // before decoded chunk 1's query is announced (step 55)
    });
    EXPECT_LT(seconds_since(t0), 10.0) << "no hang";
    const std::vector<float>& with = folder_logits();
    const size_t vocab = got.size() / kEnd;
    // Up to the stop the memories are the folder's; decoded chunk 1 (positions 56..) has none.
    std::vector<float> head(got.begin(), got.begin() + static_cast<long>(56 * vocab)), want(with.begin(), with.begin() + static_cast<long>(56 * vocab));
    EXPECT_LE(max_abs_diff(head, want), 1e-6);
    const KbSourceStatus down = kb->status();
    EXPECT_EQ(down.state, KbSourceState::Unavailable);
    EXPECT_EQ(down.retrievals, 4u);
    EXPECT_EQ(down.failures, 1u);
    auto w = warnings_.get();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_TRUE(contains(w[0], "knowledge server " + server.url() + ": RetrieveMemories failed: UNAVAILABLE")) << w[0];

    // More chunks while it is down: no more warnings, answered at once.
    for (int i = 0; i < 3; ++i) {
        const auto t1 = Clock::now();
        EXPECT_TRUE(kb->retrieve(query_near(3), 5).empty());
        EXPECT_LT(seconds_since(t1), 1.0);
    }
    EXPECT_EQ(warnings_.get().size(), 1u);

    server.start();  // same port
    bool back = false;
    for (int i = 0; i < 200 && !back; ++i) {  // bounded: 10 s
        back = kb->retrieve(query_near(3), 5).size() == 5;
        if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(back) << "no memories 10 s after the server came back";
    w = warnings_.get();
    ASSERT_EQ(w.size(), 2u);
    EXPECT_TRUE(contains(w[1], "answers again")) << w[1];
    EXPECT_EQ(kb->status().state, KbSourceState::Connected);
    EXPECT_EQ(kb->status().outages, 1u);
}

// A program that words the warnings itself gets them as events (KbSourceOptions::on_event):
// the outage with the failed call's error, then the recovery; `warn` is not called.
TEST_F(KbGrpcClient, EventsInsteadOfWarnings) {
    FakeKnowledgeBase service(dir(), *model_);
    LoopbackServer server(service);
    KbSourceOptions o = options(server.url());
    auto events = std::make_shared<std::vector<std::pair<KbEvent, std::string>>>();
    auto mu = std::make_shared<std::mutex>();
    o.on_event = [events, mu](KbEvent e, const std::string& detail) {
        std::lock_guard<std::mutex> lock(*mu);
        events->emplace_back(e, detail);
    };
    const auto kb = connect_kb(o, *model_);
    server.stop();
    EXPECT_TRUE(kb->retrieve(query_near(3), 5).empty());
    server.start();  // same port
    bool back = false;
    for (int i = 0; i < 200 && !back; ++i) {  // bounded: 10 s
        back = kb->retrieve(query_near(3), 5).size() == 5;
        if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(back) << "no memories 10 s after the server came back";
    std::lock_guard<std::mutex> lock(*mu);
    ASSERT_EQ(events->size(), 2u);
    EXPECT_EQ((*events)[0].first, KbEvent::Outage);
    EXPECT_TRUE(contains((*events)[0].second, "RetrieveMemories failed: UNAVAILABLE")) << (*events)[0].second;
    EXPECT_EQ((*events)[1].first, KbEvent::Recovered);
    EXPECT_TRUE(warnings_.get().empty()) << "warn is not called when on_event is set";
}

TEST_F(KbGrpcClient, SlowServerCostsOneDeadline) {
    FakeKnowledgeBase service(dir(), *model_);
    LoopbackServer server(service);
    KbSourceOptions o = options(server.url());
    o.call_timeout_ms = 200;
    o.backoff_initial_ms = 2000;  // the second chunk surely comes while backing off
    o.prefetch = false;
    const auto kb = connect_kb(o, *model_);
    service.delay_ms = 3000;
    const auto t0 = Clock::now();
    EXPECT_TRUE(kb->retrieve(query_near(1), 5).empty());
    const double took = seconds_since(t0);
    EXPECT_GE(took, 0.15);
    EXPECT_LT(took, 1.0) << "bounded by the call deadline";
    const auto w = warnings_.get();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_TRUE(contains(w[0], "DEADLINE_EXCEEDED")) << w[0];
    // Backing off: the next chunk is answered without a call.
    const int calls = service.calls;
    const auto t1 = Clock::now();
    EXPECT_TRUE(kb->retrieve(query_near(1), 5).empty());
    EXPECT_LT(seconds_since(t1), 0.05);
    EXPECT_EQ(service.calls, calls);
    EXPECT_EQ(kb->status().skipped, 1u);
    service.delay_ms = 0;
}

TEST_F(KbGrpcClient, PrefetchedRetrievalOfASlowServerIsBounded) {
    FakeKnowledgeBase service(dir(), *model_);
    LoopbackServer server(service);
    KbSourceOptions o = options(server.url());
    o.call_timeout_ms = 200;
    const auto kb = connect_kb(o, *model_);
    service.delay_ms = 3000;
    kb->prefetch(query_near(2), 5);
    const auto t0 = Clock::now();
    EXPECT_TRUE(kb->retrieve(query_near(2), 5).empty());
    EXPECT_LT(seconds_since(t0), 1.0);
    EXPECT_EQ(warnings_.get().size(), 1u);
    service.delay_ms = 0;
}

// ---------------------------------------------------------------- the bank

TEST_F(KbGrpcClient, BankForAnotherModelIsRefused) {
    FakeKnowledgeBase service(dir(), *model_);
    service.set_fingerprint(std::string(64, '0'));
    LoopbackServer server(service);
    try {
        connect_kb(options(server.url()), *model_);
        ADD_FAILURE() << "connected to a bank for another checkpoint";
    } catch (const Error& e) {
        EXPECT_TRUE(contains(e.what(), "knowledge server " + server.url() + ": bank version 1")) << e.what();
        EXPECT_TRUE(contains(e.what(), "another checkpoint (fingerprint 000000000000")) << e.what();
    }
}

TEST_F(KbGrpcClient, NewBankVersionDropsTheCacheAndGoesOn) {
    FakeKnowledgeBase service(dir(), *model_);
    LoopbackServer server(service);
    KbSourceOptions o = options(server.url());
    o.prefetch = false;
    const auto kb = connect_kb(o, *model_);
    ASSERT_EQ(kb->retrieve(query_near(4), 5).size(), 5u);
    service.version = 2;  // same model and codec, records possibly renumbered
    ASSERT_EQ(kb->retrieve(query_near(4), 5).size(), 5u);
    KbSourceStatus st = kb->status();
    EXPECT_EQ(st.bank_version, 2u);
    EXPECT_EQ(st.bank_changes, 1u);
    EXPECT_EQ(st.records_fetched, 10u) << "the records of version 1 are not reused";
    EXPECT_EQ(st.failures, 0u);
    // Version 3 for another checkpoint: refused, no memories, one warning.
    service.set_fingerprint(std::string(64, 'f'));
    service.version = 3;
    EXPECT_TRUE(kb->retrieve(query_near(4), 5).empty());
    st = kb->status();
    EXPECT_EQ(st.state, KbSourceState::Incompatible);
    const auto w = warnings_.get();
    ASSERT_EQ(w.size(), 2u);  // "now serving bank version 2", then the refusal
    EXPECT_TRUE(contains(w[1], "another checkpoint")) << w[1];
}

// ---------------------------------------------------------------- addresses, tokens, backoff

TEST_F(KbGrpcClient, Urls) {
    const detail::KbUrl a = detail::parse_kb_url("grpcs://kb.example.org:7443");
    EXPECT_TRUE(a.tls);
    EXPECT_EQ(a.target, "kb.example.org:7443");
    const detail::KbUrl b = detail::parse_kb_url("grpc://[::1]:9000");
    EXPECT_FALSE(b.tls);
    EXPECT_EQ(b.target, "[::1]:9000");
    EXPECT_FALSE(detail::parse_kb_url("grpc://localhost:1").tls);
    EXPECT_FALSE(detail::parse_kb_url("grpc://127.1.2.3:1").tls);
    auto refused = [](const std::string& url, const std::string& why) {
        try {
            detail::parse_kb_url(url);
            ADD_FAILURE() << url << " accepted";
        } catch (const Error& e) {
            EXPECT_TRUE(contains(e.what(), why)) << e.what();
        }
    };
    refused("grpc://10.0.0.1:9000", "only allowed to a loopback host");
    refused("grpc://kb.example.org:9000", "only allowed to a loopback host");
    refused("http://localhost:1", "expected grpcs://HOST:PORT");
    refused("grpcs://host", "port is missing");
    refused("grpcs://host:99999", "1..65535");
    refused("grpcs://:80", "host is missing");
    refused("grpcs://2001:db8::1:80", "[ADDRESS]:PORT");
}

TEST_F(KbGrpcClient, TokenFileIsTrimmed) {
    const fs::path p = *root_ / "token";
    std::ofstream(p) << "  abc.def-123 \n\n";
    EXPECT_EQ(read_kb_token(p.string()), "abc.def-123");
    std::ofstream(p) << " \n";
    EXPECT_THROW(read_kb_token(p.string()), Error);
    std::ofstream(p) << "two\nlines\n";
    EXPECT_THROW(read_kb_token(p.string()), Error);
    EXPECT_THROW(read_kb_token((*root_ / "absent").string()), Error);
}

TEST_F(KbGrpcClient, BackoffDoublesUpToItsMaximum) {
    detail::Outage o(std::chrono::milliseconds(250), std::chrono::milliseconds(1000));
    const auto t = Clock::now();
    EXPECT_FALSE(o.waiting(t));
    EXPECT_TRUE(o.failed(t)) << "the first failure starts an outage";
    EXPECT_TRUE(o.waiting(t + std::chrono::milliseconds(249)));
    EXPECT_FALSE(o.waiting(t + std::chrono::milliseconds(250)));
    EXPECT_FALSE(o.failed(t));
    EXPECT_EQ(o.delay().count(), 500);
    o.failed(t);
    o.failed(t);
    EXPECT_EQ(o.delay().count(), 1000);
    EXPECT_TRUE(o.succeeded()) << "a success ends it";
    EXPECT_FALSE(o.succeeded());
    EXPECT_TRUE(o.failed(t));
    EXPECT_EQ(o.delay().count(), 250);
}

TEST_F(KbGrpcClient, UnreachableServerFailsToConnectWithinTheTimeout) {
    // A port nobody listens on: take one from the OS, then close it.
    int port = 0;
    {
        FakeKnowledgeBase service(dir(), *model_);
        LoopbackServer server(service);
        port = std::stoi(server.url().substr(server.url().rfind(':') + 1));
    }
    KbSourceOptions o = options("grpc://127.0.0.1:" + std::to_string(port));
    o.connect_timeout_ms = 300;
    const auto t0 = Clock::now();
    try {
        connect_kb(o, *model_);
        ADD_FAILURE() << "connected to nothing";
    } catch (const Error& e) {
        EXPECT_TRUE(contains(e.what(), "Info failed")) << e.what();
    }
    EXPECT_LT(seconds_since(t0), 2.0);
}

}  // namespace
