// `mnemo-kb serve` over a real gRPC connection on 127.0.0.1 (port 0), against a small bank made in
// memory (FakeBank below, so these tests do not depend on the bank's file format): every call,
// authentication, each validation rule with its exact status code, TLS with certificates made by
// `openssl`, reloads under a stream in flight, the per-client limit and the call-time cap. Every
// client call carries a short deadline, so a server bug fails a test instead of hanging it.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "fixtures/tls_certificates.hpp"
#include "io/sha256.hpp"
#include "mnemo/error.hpp"
#include "mnemo/memory/memory_record.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "mnemo_kb.grpc.pb.h"
#include "serve/kb_server.hpp"
#include "serve/listen_policy.hpp"

namespace {

using namespace mnemo::kb;
using grpc::StatusCode;
namespace fs = std::filesystem;
namespace v1 = mnemo::kb::v1;

constexpr int kDim = 4;  // retrieval_dim of the fake bank

// Words "tN" are token N; anything else is token 999 (matches no reference).
class WordTokenizer final : public mnemo::Tokenizer {
public:
    std::vector<int32_t> encode(std::string_view text, bool) const override {
        std::vector<int32_t> ids;
        std::istringstream in{std::string(text)};
        std::string w;
        while (in >> w) ids.push_back(w.size() > 1 && w[0] == 't' ? std::stoi(w.substr(1)) : 999);
        return ids;
    }
    std::string token_bytes(int32_t id) const override { return "t" + std::to_string(id); }
    std::string decode(const std::vector<int32_t>&, bool) const override { return ""; }
    int32_t vocab_size() const override { return 1000; }
    std::optional<int32_t> token_id(std::string_view) const override { return std::nullopt; }
    bool is_special(int32_t) const override { return false; }
};

mnemo::VqCodebook tiny_codebook(float shift) {
    mnemo::VqCodebook cb;
    cb.d_in = cb.d_out = 4;
    cb.coarse_m = 2;
    cb.coarse_nbits = 1;
    cb.pq_m = 1;
    cb.pq_nbits = 2;
    for (int i = 0; i < 8; ++i) cb.coarse.push_back(0.5f * static_cast<float>(i) + shift);
    for (int i = 0; i < 16; ++i) cb.pq.push_back(0.25f * static_cast<float>(i) - shift);
    const std::vector<uint8_t> bytes = cb.to_bytes();
    cb.sha256 = mnemo::sha256_hex(bytes.data(), bytes.size());
    return cb;
}

mnemo::MemoryFolderModel tiny_model() {
    mnemo::MemoryFolderModel m;
    m.model_type = "memory3";
    m.fingerprint = std::string(64, 'f');
    m.spec.memory_layers = {0};
    m.spec.kv_heads = 1;
    m.spec.head_dim = 4;
    m.spec.value_dim = 4;
    m.spec.tokens_per_head = 2;
    m.spec.reference_length = 8;
    m.spec.chunk_length = 8;
    m.spec.references_per_chunk = 2;
    m.spec.retrieval_dim = kDim;
    return m;
}

// A bank version in memory: `count` records whose codes depend on the version (so records of two
// versions differ), reference i with tokens {i, 100 + i % 2} and source "src/a" (even) or
// "src/b" (odd), and retrieval vector e_(i % 4) + 0.01 i e_((i + 1) % 4), normalised. record() can be slowed
// down, and tells when it starts, so tests can hold a stream open.
class FakeBank final : public Bank {
public:
    FakeBank(uint64_t version, uint32_t count, bool with_tokenizer) : version_(version), model_(tiny_model()) {
        codec_.keys = tiny_codebook(0.0f);
        codec_.values = tiny_codebook(1.0f);
        key_bytes_ = codec_.keys.to_bytes();
        value_bytes_ = codec_.values.to_bytes();
        if (with_tokenizer) tokenizer_ = std::make_unique<WordTokenizer>();
        for (uint32_t i = 0; i < count; ++i) {
            mnemo::ExplicitMemory m;
            m.n_valid = 2;
            m.indices = {0, 1};
            for (int32_t j = 0; j < 2; ++j) {
                m.key_codes.push_back(static_cast<int32_t>((version + i + j) % 4 | ((i % 4) << 8)));
                m.value_codes.push_back(static_cast<int32_t>((version * 3 + j) % 4 | (((i + 1) % 4) << 8)));
            }
            records_.push_back(mnemo::encode_memory_record(m, i, model_.spec, &codec_));
            BankReference r;
            r.text = "reference " + std::to_string(i) + " of version " + std::to_string(version);
            r.title = "title " + std::to_string(i);
            r.source = i % 2 == 0 ? "src/a" : "src/b";
            r.doc_id = "doc" + std::to_string(i / 2);
            r.tokens = {static_cast<int32_t>(i), static_cast<int32_t>(100 + i % 2)};
            refs_.push_back(r);
            std::vector<float> v(kDim, 0.0f);
            v[i % kDim] = 1.0f;
            v[(i + 1) % kDim] = 0.01f * static_cast<float>(i);
            const float norm = std::sqrt(1.0f + v[(i + 1) % kDim] * v[(i + 1) % kDim]);
            for (float& x : v) x /= norm;  // unit length, as the model's retrieval vectors
            vectors_.push_back(v);
        }
    }
    ~FakeBank() override {
        if (destroyed) destroyed->store(true);
    }

    uint64_t version() const override { return version_; }
    const mnemo::MemoryFolderModel& model() const override { return model_; }
    const mnemo::MemoryCodec& codec() const override { return codec_; }
    const std::vector<uint8_t>* codebook_bytes(const std::string& sha) const override {
        if (sha == codec_.keys.sha256) return &key_bytes_;
        if (sha == codec_.values.sha256) return &value_bytes_;
        return nullptr;
    }
    uint64_t count() const override { return records_.size(); }
    uint64_t record_bytes() const override { return records_.empty() ? 0 : records_[0].size(); }
    uint32_t segments() const override { return 1; }
    const mnemo::Tokenizer* tokenizer() const override { return tokenizer_.get(); }

    std::vector<BankHit> retrieve(const BankQuery& q) const override {
        std::vector<std::pair<float, uint32_t>> by_vector, by_tokens;
        for (uint32_t i = 0; i < records_.size(); ++i) {
            const BankReference& r = refs_[i];
            bool pass = q.sources.empty() && q.source_prefix.empty();
            for (const std::string& s : q.sources) pass |= r.source == s;
            if (!q.source_prefix.empty()) pass |= r.source.rfind(q.source_prefix, 0) == 0;
            if (!pass) continue;
            if (q.vector) {
                if (q.vector->size() != kDim) throw mnemo::Error("fake bank: vector length");
                float dot = 0;
                for (int d = 0; d < kDim; ++d) dot += (*q.vector)[d] * vectors_[i][d];
                by_vector.push_back({dot, i});
            }
            if (q.tokens) {
                float shared = 0;
                for (int32_t t : *q.tokens)
                    for (int32_t u : r.tokens) shared += t == u ? 1.0f : 0.0f;
                if (shared > 0) by_tokens.push_back({shared, i});
            }
        }
        auto best_first = [](auto& v) {
            std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
        };
        best_first(by_vector);
        best_first(by_tokens);
        std::vector<std::pair<float, uint32_t>> fused;
        if (q.vector && q.tokens) {
            std::map<uint32_t, float> score;
            for (size_t r = 0; r < by_vector.size(); ++r) score[by_vector[r].second] += 1.0f / (60.0f + static_cast<float>(r + 1));
            for (size_t r = 0; r < by_tokens.size(); ++r) score[by_tokens[r].second] += 1.0f / (60.0f + static_cast<float>(r + 1));
            for (const auto& [id, s] : score) fused.push_back({s, id});
            best_first(fused);
        } else {
            fused = q.vector ? by_vector : by_tokens;
        }
        std::vector<BankHit> hits;
        for (size_t i = 0; i < fused.size() && hits.size() < static_cast<size_t>(q.k); ++i) hits.push_back({fused[i].second, fused[i].first});
        return hits;
    }
    std::string record(uint32_t id) const override {
        started.fetch_add(1);
        if (record_delay.count() > 0) std::this_thread::sleep_for(record_delay);
        if (id >= records_.size()) throw mnemo::Error("fake bank: no record " + std::to_string(id));
        return records_[id];
    }
    const BankReference& reference(uint32_t id) const override { return refs_.at(id); }
    const float* vector(uint32_t id) const override { return vectors_.at(id).data(); }

    const std::string& stored_record(uint32_t id) const { return records_.at(id); }
    const std::vector<float>& vector_of(uint32_t id) const { return vectors_.at(id); }

    std::chrono::milliseconds record_delay{0};
    mutable std::atomic<int> started{0};
    std::shared_ptr<std::atomic<bool>> destroyed;

private:
    uint64_t version_;
    mnemo::MemoryFolderModel model_;
    mnemo::MemoryCodec codec_;
    std::vector<uint8_t> key_bytes_, value_bytes_;
    std::unique_ptr<mnemo::Tokenizer> tokenizer_;
    std::vector<std::string> records_;
    std::vector<BankReference> refs_;
    std::vector<std::vector<float>> vectors_;
};

// What the provider hands out: the "published" bank, replaceable by the test; opening can be made
// to fail like a damaged publish.
struct Publisher {
    std::mutex mutex;
    std::shared_ptr<const Bank> published;
    bool fail_open = false;

    void publish(std::shared_ptr<const Bank> b) {
        std::lock_guard<std::mutex> lock(mutex);
        published = std::move(b);
    }
    BankProvider provider() {
        BankProvider p;
        p.describe = "test bank";
        p.open = [this] {
            std::lock_guard<std::mutex> lock(mutex);
            if (fail_open) throw mnemo::Error("test bank: manifest-000009.json: sha256 mismatch");
            return published;
        };
        p.current_version = [this] {
            std::lock_guard<std::mutex> lock(mutex);
            return published->version();
        };
        return p;
    }
};

const std::string kReadToken = "mkb_reader-token-for-tests-only";
const std::string kAdminToken = "mkb_admin-token-for-tests-only";

std::shared_ptr<const TokenTable> test_tokens() {
    const std::string text = "# test tokens\n"
                             "reader read sha256:" + mnemo::sha256_hex(kReadToken.data(), kReadToken.size()) + "\n"
                             "admin  admin sha256:" + mnemo::sha256_hex(kAdminToken.data(), kAdminToken.size()) + "\n";
    return TokenTable::parse(text, "test tokens");
}

// Log lines the server wrote, for checks on what they contain.
struct LogSink {
    std::mutex mutex;
    std::vector<std::string> lines;
    std::function<void(const std::string&)> fn() {
        return [this](const std::string& l) {
            std::lock_guard<std::mutex> lock(mutex);
            lines.push_back(l);
        };
    }
    std::string all() {
        std::lock_guard<std::mutex> lock(mutex);
        std::string s;
        for (const auto& l : lines) s += l + "\n";
        return s;
    }
};

struct Harness {
    Publisher publisher;
    LogSink log;
    std::unique_ptr<KbServer> server;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::KnowledgeBase::Stub> stub;

    explicit Harness(std::shared_ptr<const Bank> bank, ServeLimits limits = {}, uint32_t watch_seconds = 0) {
        publisher.publish(std::move(bank));
        ServeOptions o;
        o.listen = "127.0.0.1:0";
        o.insecure = true;
        o.tokens = test_tokens();
        o.limits = limits;
        o.watch_seconds = watch_seconds;
        o.server_version = "test";
        o.log = log.fn();
        server = KbServer::start(publisher.provider(), o);
        channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server->port()), grpc::InsecureChannelCredentials());
        stub = v1::KnowledgeBase::NewStub(channel);
    }
    ~Harness() { server->shutdown(std::chrono::milliseconds(500)); }
};

std::unique_ptr<grpc::ClientContext> ctx(const std::string& token, int ms = 3000) {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
    if (!token.empty()) c->AddMetadata("authorization", "Bearer " + token);
    return c;
}

std::shared_ptr<FakeBank> make_bank(uint64_t version = 1, uint32_t count = 12, bool tokenizer = true) {
    return std::make_shared<FakeBank>(version, count, tokenizer);
}

v1::RetrieveRequest vector_query(const std::vector<float>& v, uint32_t k) {
    v1::RetrieveRequest r;
    for (float x : v) r.add_vector(x);
    r.set_k(k);
    return r;
}

// The stream's records and its status.
struct FetchResult {
    std::vector<v1::MemoryRecord> records;
    grpc::Status status;
};

FetchResult fetch(v1::KnowledgeBase::Stub& stub, const v1::FetchRequest& req, const std::string& token, int ms = 3000) {
    FetchResult out;
    auto c = ctx(token, ms);
    auto reader = stub.FetchMemories(c.get(), req);
    v1::MemoryRecord rec;
    while (reader->Read(&rec)) out.records.push_back(rec);
    out.status = reader->Finish();
    return out;
}

v1::FetchRequest fetch_ids(std::initializer_list<uint32_t> ids) {
    v1::FetchRequest r;
    for (uint32_t id : ids) r.add_ids(id);
    return r;
}

// Bounded wait for a condition another thread makes true.
template <class Pred>
bool eventually(Pred pred, int ms = 3000) {
    for (int i = 0; i < ms / 5; ++i) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return pred();
}

TEST(KbGrpcServe, InfoAndHealthDescribeTheBankAndTheLimits) {
    auto bank = make_bank(7);
    ServeLimits limits;
    limits.max_k = 9;
    limits.max_ids_per_request = 33;
    limits.max_streams_per_client = 5;
    Harness h(bank, limits);

    v1::InfoReply info;
    ASSERT_TRUE(h.stub->Info(ctx(kReadToken).get(), {}, &info).ok());
    EXPECT_EQ(info.bank().bank_version(), 7u);
    EXPECT_EQ(info.bank().model_type(), "memory3");
    EXPECT_EQ(info.bank().model_fingerprint(), std::string(64, 'f'));
    EXPECT_EQ(info.bank().key_codebook_sha256(), bank->codec().keys.sha256);
    EXPECT_EQ(info.bank().value_codebook_sha256(), bank->codec().values.sha256);
    EXPECT_EQ(info.bank().count(), 12u);
    EXPECT_EQ(info.bank().record_bytes(), bank->stored_record(0).size());
    EXPECT_EQ(info.bank().segments(), 1u);
    EXPECT_TRUE(info.bank().has_tokenizer());
    // model_json reads back as the same model facts.
    const mnemo::MemoryFolderModel back =
        mnemo::memory_model_from_json(mnemo::json::parse(info.bank().model_json(), "model_json"), "model_json");
    EXPECT_EQ(back.spec.retrieval_dim, kDim);
    EXPECT_EQ(back.spec.memory_layers, std::vector<int32_t>{0});
    EXPECT_EQ(info.server_version(), "test");
    EXPECT_EQ(info.max_k(), 9u);
    EXPECT_EQ(info.max_ids_per_request(), 33u);
    EXPECT_EQ(info.max_streams_per_client(), 5u);
    EXPECT_EQ(info.max_receive_message_bytes(), 4u << 20);
    EXPECT_EQ(info.max_call_seconds(), 60u);
    EXPECT_EQ(info.counters().at("requests.Info"), 1u);
    EXPECT_EQ(info.counters().at("in_flight"), 1u);  // this very call

    v1::HealthReply health;
    ASSERT_TRUE(h.stub->Health(ctx(kReadToken).get(), {}, &health).ok());
    EXPECT_EQ(health.status(), v1::HealthReply::SERVING);
    EXPECT_EQ(health.bank_version(), 7u);
}

TEST(KbGrpcServe, RetrieveRanksByVectorTokensTextAndBoth) {
    auto bank = make_bank();
    Harness h(bank);

    // Vector: record 5's own vector finds record 5 first, then others on the same axis.
    v1::RetrieveReply r;
    ASSERT_TRUE(h.stub->Retrieve(ctx(kReadToken).get(), vector_query(bank->vector_of(5), 3), &r).ok());
    ASSERT_EQ(r.hits_size(), 3);
    EXPECT_EQ(r.hits(0).id(), 5u);
    EXPECT_EQ(r.hits(0).text(), "reference 5 of version 1");
    EXPECT_EQ(r.hits(0).title(), "title 5");
    EXPECT_EQ(r.hits(0).source(), "src/b");
    EXPECT_EQ(r.hits(0).doc_id(), "doc2");
    EXPECT_EQ(r.bank_version(), 1u);
    for (int i = 1; i < r.hits_size(); ++i) EXPECT_LE(r.hits(i).score(), r.hits(i - 1).score());

    // Tokens: token 3 is in reference 3 only; 101 in every odd one (fewer shared terms).
    v1::RetrieveRequest t;
    t.add_tokens(3);
    t.add_tokens(101);
    t.set_k(2);
    t.set_omit_texts(true);
    v1::RetrieveReply rt;
    ASSERT_TRUE(h.stub->Retrieve(ctx(kReadToken).get(), t, &rt).ok());
    ASSERT_EQ(rt.hits_size(), 2);
    EXPECT_EQ(rt.hits(0).id(), 3u);
    EXPECT_EQ(rt.hits(1).id(), 1u);
    EXPECT_TRUE(rt.hits(0).text().empty());
    EXPECT_TRUE(rt.hits(0).source().empty());
    EXPECT_EQ(rt.hits(0).doc_id(), "doc1");

    // Text: the bank's tokenizer turns "t3 t101" into the same tokens.
    v1::RetrieveRequest x;
    x.set_text("t3 t101");
    x.set_k(2);
    v1::RetrieveReply rx;
    ASSERT_TRUE(h.stub->Retrieve(ctx(kReadToken).get(), x, &rx).ok());
    ASSERT_EQ(rx.hits_size(), 2);
    EXPECT_EQ(rx.hits(0).id(), 3u);

    // Both, with a filter on the source: only even records ("src/a").
    v1::RetrieveRequest b = vector_query(bank->vector_of(4), 4);
    b.add_tokens(4);
    b.mutable_filter()->add_sources("src/a");
    v1::RetrieveReply rb;
    ASSERT_TRUE(h.stub->Retrieve(ctx(kReadToken).get(), b, &rb).ok());
    ASSERT_GE(rb.hits_size(), 1);
    EXPECT_EQ(rb.hits(0).id(), 4u);
    for (const auto& hit : rb.hits()) EXPECT_EQ(hit.id() % 2, 0u) << hit.id();
}

TEST(KbGrpcServe, FetchAndRetrieveMemoriesSendTheStoredRecords) {
    auto bank = make_bank();
    Harness h(bank);

    const FetchResult f = fetch(*h.stub, fetch_ids({9, 2, 9}), kReadToken);
    ASSERT_TRUE(f.status.ok()) << f.status.error_message();
    ASSERT_EQ(f.records.size(), 3u);
    const uint32_t want[] = {9, 2, 9};
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(f.records[i].id(), want[i]);
        EXPECT_EQ(f.records[i].record(), bank->stored_record(want[i]));
        // What a client does with it: the record checks out (magic, id, CRC, shapes).
        const std::string& bytes = f.records[i].record();
        EXPECT_NO_THROW(mnemo::decode_memory_record(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), want[i],
                                                    bank->model().spec, &bank->codec(), "fetched"));
    }

    // RetrieveMemories: the hits' records minus those the client holds, in hit order.
    v1::RetrieveRequest q = vector_query(bank->vector_of(1), 3);
    v1::RetrieveReply plain;
    ASSERT_TRUE(h.stub->Retrieve(ctx(kReadToken).get(), q, &plain).ok());
    ASSERT_EQ(plain.hits_size(), 3);
    q.add_have_ids(plain.hits(1).id());
    v1::RetrieveMemoriesReply rm;
    ASSERT_TRUE(h.stub->RetrieveMemories(ctx(kReadToken).get(), q, &rm).ok());
    ASSERT_EQ(rm.retrieval().hits_size(), 3);
    ASSERT_EQ(rm.records_size(), 2);
    EXPECT_EQ(rm.records(0).id(), plain.hits(0).id());
    EXPECT_EQ(rm.records(1).id(), plain.hits(2).id());
    EXPECT_EQ(rm.records(0).record(), bank->stored_record(plain.hits(0).id()));

    v1::InfoReply info;
    ASSERT_TRUE(h.stub->Info(ctx(kReadToken).get(), {}, &info).ok());
    EXPECT_EQ(info.counters().at("records_served"), 5u);
    EXPECT_EQ(info.counters().at("requests.FetchMemories"), 1u);
    EXPECT_EQ(info.counters().at("requests.RetrieveMemories"), 1u);
    EXPECT_GT(info.counters().at("bytes_sent"), 3 * bank->stored_record(0).size());
}

TEST(KbGrpcServe, GetCodebookChunksReassembleToTheHashedBytes) {
    auto bank = make_bank();
    Harness h(bank);
    for (const mnemo::VqCodebook* cb : {&bank->codec().keys, &bank->codec().values}) {
        for (uint32_t chunk : {7u, 0u}) {
            v1::CodebookRequest req;
            req.set_sha256(cb->sha256);
            req.set_chunk_bytes(chunk);
            auto c = ctx(kReadToken);
            auto reader = h.stub->GetCodebook(c.get(), req);
            std::string bytes;
            v1::CodebookChunk msg;
            size_t chunks = 0;
            while (reader->Read(&msg)) {
                EXPECT_EQ(msg.offset(), bytes.size());
                EXPECT_EQ(msg.total_bytes(), cb->to_bytes().size());
                bytes += msg.data();
                ++chunks;
            }
            ASSERT_TRUE(reader->Finish().ok());
            EXPECT_EQ(mnemo::sha256_hex(bytes.data(), bytes.size()), cb->sha256);
            const size_t total = cb->to_bytes().size();
            EXPECT_EQ(chunks, chunk == 0 ? 1u : (total + chunk - 1) / chunk);
        }
    }
}

TEST(KbGrpcServe, TokensAndScopesAreCheckedOnEveryCall) {
    Harness h(make_bank());
    v1::HealthReply health;
    EXPECT_EQ(h.stub->Health(ctx("").get(), {}, &health).error_code(), StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(h.stub->Health(ctx("mkb_not-a-token").get(), {}, &health).error_code(), StatusCode::UNAUTHENTICATED);
    {
        auto c = ctx("");
        c->AddMetadata("authorization", "Basic " + kReadToken);
        EXPECT_EQ(h.stub->Health(c.get(), {}, &health).error_code(), StatusCode::UNAUTHENTICATED);
    }
    const FetchResult f = fetch(*h.stub, fetch_ids({1}), "wrong");
    EXPECT_EQ(f.status.error_code(), StatusCode::UNAUTHENTICATED);
    EXPECT_TRUE(f.records.empty());

    v1::ReloadReply rr;
    const grpc::Status denied = h.stub->Reload(ctx(kReadToken).get(), {}, &rr);
    EXPECT_EQ(denied.error_code(), StatusCode::PERMISSION_DENIED);
    EXPECT_NE(denied.error_message().find("reader"), std::string::npos) << denied.error_message();
    // Admin implies read.
    EXPECT_TRUE(h.stub->Health(ctx(kAdminToken).get(), {}, &health).ok());
    ASSERT_TRUE(h.stub->Reload(ctx(kAdminToken).get(), {}, &rr).ok());
    EXPECT_EQ(rr.previous_version(), 1u);
    EXPECT_EQ(rr.bank_version(), 1u);  // nothing new was published

    // One line per request; client names, never the tokens.
    const std::string log = h.log.all();
    EXPECT_NE(log.find("client=reader method=Reload status=PERMISSION_DENIED"), std::string::npos) << log;
    EXPECT_NE(log.find("client=admin method=Reload status=OK"), std::string::npos) << log;
    EXPECT_NE(log.find("client=- method=Health status=UNAUTHENTICATED"), std::string::npos) << log;
    EXPECT_EQ(log.find(kReadToken), std::string::npos) << log;
    EXPECT_EQ(log.find(kAdminToken), std::string::npos) << log;
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 7) << log;

    v1::InfoReply info;
    ASSERT_TRUE(h.stub->Info(ctx(kReadToken).get(), {}, &info).ok());
    EXPECT_EQ(info.counters().at("errors.UNAUTHENTICATED"), 4u);
    EXPECT_EQ(info.counters().at("errors.PERMISSION_DENIED"), 1u);
}

// Every validation rule, from a raw stub, with the exact status code.
TEST(KbGrpcServe, BadRequestsGetPreciseStatusCodes) {
    auto bank = make_bank(3);
    ServeLimits limits;
    limits.max_k = 8;
    limits.max_ids_per_request = 4;
    Harness h(bank, limits);
    auto retrieve_code = [&](const v1::RetrieveRequest& req) {
        v1::RetrieveReply r;
        const grpc::Status s = h.stub->Retrieve(ctx(kReadToken).get(), req, &r);
        v1::RetrieveMemoriesReply rm;
        const grpc::Status s2 = h.stub->RetrieveMemories(ctx(kReadToken).get(), req, &rm);
        EXPECT_EQ(s.error_code(), s2.error_code()) << "Retrieve and RetrieveMemories check alike: " << s2.error_message();
        return s.error_code();
    };
    const std::vector<float> good = bank->vector_of(0);

    EXPECT_EQ(retrieve_code(vector_query(good, 0)), StatusCode::INVALID_ARGUMENT);   // k == 0
    EXPECT_EQ(retrieve_code(vector_query(good, 9)), StatusCode::INVALID_ARGUMENT);   // k > max_k
    EXPECT_EQ(retrieve_code(vector_query(good, 8)), StatusCode::OK);                  // k == max_k
    EXPECT_EQ(retrieve_code(vector_query({1, 0, 0}, 2)), StatusCode::INVALID_ARGUMENT);  // wrong length
    EXPECT_EQ(retrieve_code(vector_query({1, 0, 0, 0, 0}, 2)), StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(retrieve_code(vector_query({1, NAN, 0, 0}, 2)), StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(retrieve_code(vector_query({1, 0, INFINITY, 0}, 2)), StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(retrieve_code(vector_query({}, 2)), StatusCode::INVALID_ARGUMENT);  // no query at all
    {
        v1::RetrieveRequest r = vector_query({}, 2);
        r.add_tokens(1);
        r.set_text("t1");
        EXPECT_EQ(retrieve_code(r), StatusCode::INVALID_ARGUMENT);  // tokens and text
        r.clear_text();
        r.add_tokens(-5);
        EXPECT_EQ(retrieve_code(r), StatusCode::INVALID_ARGUMENT);  // negative token id
    }
    {
        v1::RetrieveRequest r = vector_query(good, 2);
        r.set_bank_version(2);
        EXPECT_EQ(retrieve_code(r), StatusCode::FAILED_PRECONDITION);
        r.set_bank_version(3);
        EXPECT_EQ(retrieve_code(r), StatusCode::OK);
        r.set_key_codebook_sha256(bank->codec().values.sha256);  // the other codebook
        EXPECT_EQ(retrieve_code(r), StatusCode::FAILED_PRECONDITION);
        r.set_key_codebook_sha256(bank->codec().keys.sha256);
        r.set_value_codebook_sha256(std::string(64, '0'));
        EXPECT_EQ(retrieve_code(r), StatusCode::FAILED_PRECONDITION);
        r.set_value_codebook_sha256(bank->codec().values.sha256);
        EXPECT_EQ(retrieve_code(r), StatusCode::OK);
    }

    auto fetch_code = [&](const v1::FetchRequest& req) {
        const FetchResult f = fetch(*h.stub, req, kReadToken);
        EXPECT_TRUE(f.status.ok() || f.records.empty()) << "nothing is streamed before the request is checked";
        return f.status.error_code();
    };
    EXPECT_EQ(fetch_code(fetch_ids({})), StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(fetch_code(fetch_ids({0, 1, 2, 3, 4})), StatusCode::INVALID_ARGUMENT);  // > max_ids
    EXPECT_EQ(fetch_code(fetch_ids({0, 1, 2, 11})), StatusCode::OK);
    EXPECT_EQ(fetch_code(fetch_ids({0, 12})), StatusCode::NOT_FOUND);
    EXPECT_EQ(fetch_code(fetch_ids({4000000000u})), StatusCode::NOT_FOUND);
    {
        v1::FetchRequest r = fetch_ids({1});
        r.set_bank_version(4);
        EXPECT_EQ(fetch_code(r), StatusCode::FAILED_PRECONDITION);
        r.set_bank_version(0);
        r.set_value_codebook_sha256(bank->codec().keys.sha256);
        EXPECT_EQ(fetch_code(r), StatusCode::FAILED_PRECONDITION);
    }

    auto codebook_code = [&](const std::string& sha, uint32_t chunk) {
        v1::CodebookRequest req;
        req.set_sha256(sha);
        req.set_chunk_bytes(chunk);
        auto c = ctx(kReadToken);
        auto reader = h.stub->GetCodebook(c.get(), req);
        v1::CodebookChunk msg;
        while (reader->Read(&msg)) {
        }
        return reader->Finish().error_code();
    };
    EXPECT_EQ(codebook_code(std::string(64, 'a'), 0), StatusCode::NOT_FOUND);
    EXPECT_EQ(codebook_code("not a hash", 0), StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(codebook_code(bank->codec().keys.sha256, (4u << 20) + 1), StatusCode::INVALID_ARGUMENT);
    std::string upper = bank->codec().keys.sha256;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(codebook_code(upper, 0), StatusCode::OK);

    // Queries never reach the log: the text of a query is not in it.
    v1::RetrieveRequest secret = vector_query({}, 1);
    secret.set_text("t2 confidential-words");
    EXPECT_EQ(retrieve_code(secret), StatusCode::OK);
    EXPECT_EQ(h.log.all().find("confidential"), std::string::npos);
}

TEST(KbGrpcServe, TextQueriesNeedTheBanksTokenizer) {
    Harness h(make_bank(1, 6, /*tokenizer=*/false));
    v1::RetrieveRequest r;
    r.set_text("t1");
    r.set_k(1);
    v1::RetrieveReply reply;
    EXPECT_EQ(h.stub->Retrieve(ctx(kReadToken).get(), r, &reply).error_code(), StatusCode::FAILED_PRECONDITION);
    v1::InfoReply info;
    ASSERT_TRUE(h.stub->Info(ctx(kReadToken).get(), {}, &info).ok());
    EXPECT_FALSE(info.bank().has_tokenizer());
}

TEST(KbGrpcServe, TooLargeRequestsAreRefusedByTheMessageLimit) {
    ServeLimits limits;
    limits.max_receive_bytes = 4096;
    Harness h(make_bank(), limits);
    v1::RetrieveRequest r;
    r.set_text(std::string(8192, 'x'));
    r.set_k(1);
    v1::RetrieveReply reply;
    EXPECT_EQ(h.stub->Retrieve(ctx(kReadToken).get(), r, &reply).error_code(), StatusCode::RESOURCE_EXHAUSTED);
}

// A reload while a stream is in flight: the stream ends on the version it started with, new calls
// get the new one, and the old version is released once its last call is done.
TEST(KbGrpcServe, ReloadSwapsBanksWithoutDisturbingAStreamInFlight) {
    auto v1bank = make_bank(1);
    v1bank->record_delay = std::chrono::milliseconds(60);
    auto destroyed = std::make_shared<std::atomic<bool>>(false);
    v1bank->destroyed = destroyed;
    FakeBank* old_raw = v1bank.get();
    Harness h(std::move(v1bank));

    FetchResult slow;
    std::thread streamer([&] { slow = fetch(*h.stub, fetch_ids({0, 1, 2, 3, 4, 5}), kReadToken, 5000); });
    ASSERT_TRUE(eventually([&] { return old_raw->started.load() >= 1; }));

    auto v2bank = make_bank(2);
    const std::string v2_record0 = v2bank->stored_record(0);
    h.publisher.publish(v2bank);
    v1::ReloadReply rr;
    ASSERT_TRUE(h.stub->Reload(ctx(kAdminToken).get(), {}, &rr).ok());
    EXPECT_EQ(rr.previous_version(), 1u);
    EXPECT_EQ(rr.bank_version(), 2u);
    v1::HealthReply health;
    ASSERT_TRUE(h.stub->Health(ctx(kReadToken).get(), {}, &health).ok());
    EXPECT_EQ(health.bank_version(), 2u);
    const FetchResult fresh = fetch(*h.stub, fetch_ids({0}), kReadToken);
    ASSERT_TRUE(fresh.status.ok());
    EXPECT_EQ(fresh.records.at(0).record(), v2_record0);
    EXPECT_FALSE(destroyed->load()) << "version 1 must live while its stream runs";

    streamer.join();
    ASSERT_TRUE(slow.status.ok()) << slow.status.error_message();
    ASSERT_EQ(slow.records.size(), 6u);
    const auto reference = make_bank(1);
    for (uint32_t i = 0; i < 6; ++i) EXPECT_EQ(slow.records[i].record(), reference->stored_record(i)) << "record " << i;
    EXPECT_NE(reference->stored_record(0), v2_record0);
    EXPECT_TRUE(eventually([&] { return destroyed->load(); })) << "version 1 is released after its last call";

    v1::InfoReply info;
    ASSERT_TRUE(h.stub->Info(ctx(kReadToken).get(), {}, &info).ok());
    EXPECT_EQ(info.counters().at("reloads"), 1u);
}

TEST(KbGrpcServe, AFailedReloadKeepsServingTheOldBank) {
    Harness h(make_bank(1));
    h.publisher.publish(make_bank(2));
    h.publisher.fail_open = true;
    v1::ReloadReply rr;
    const grpc::Status s = h.stub->Reload(ctx(kAdminToken).get(), {}, &rr);
    EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(s.error_message().find("sha256 mismatch"), std::string::npos) << s.error_message();
    EXPECT_NE(s.error_message().find("still serving version 1"), std::string::npos) << s.error_message();
    v1::HealthReply health;
    ASSERT_TRUE(h.stub->Health(ctx(kReadToken).get(), {}, &health).ok());
    EXPECT_EQ(health.bank_version(), 1u);
    h.publisher.fail_open = false;
    ASSERT_TRUE(h.stub->Reload(ctx(kAdminToken).get(), {}, &rr).ok());
    EXPECT_EQ(rr.bank_version(), 2u);
    v1::InfoReply info;
    ASSERT_TRUE(h.stub->Info(ctx(kReadToken).get(), {}, &info).ok());
    EXPECT_EQ(info.counters().at("reload_failures"), 1u);
    EXPECT_EQ(info.counters().at("reloads"), 1u);
}

TEST(KbGrpcServe, WatchPicksUpANewlyPublishedVersion) {
    Harness h(make_bank(1), {}, /*watch_seconds=*/1);
    h.publisher.publish(make_bank(5));
    EXPECT_TRUE(eventually(
        [&] {
            v1::HealthReply health;
            return h.stub->Health(ctx(kReadToken).get(), {}, &health).ok() && health.bank_version() == 5u;
        },
        4000));
    EXPECT_NE(h.log.all().find("now serving version 5 (was 1)"), std::string::npos) << h.log.all();
}

TEST(KbGrpcServe, EachClientHasItsOwnLimitOfCallsInFlight) {
    auto bank = make_bank();
    bank->record_delay = std::chrono::milliseconds(80);
    FakeBank* raw = bank.get();
    ServeLimits limits;
    limits.max_streams_per_client = 1;
    Harness h(bank, limits);

    FetchResult slow;
    std::thread streamer([&] { slow = fetch(*h.stub, fetch_ids({0, 1, 2, 3}), kReadToken, 5000); });
    ASSERT_TRUE(eventually([&] { return raw->started.load() >= 1; }));
    v1::HealthReply health;
    const grpc::Status busy = h.stub->Health(ctx(kReadToken).get(), {}, &health);
    EXPECT_EQ(busy.error_code(), StatusCode::RESOURCE_EXHAUSTED) << busy.error_message();
    EXPECT_EQ(fetch(*h.stub, fetch_ids({1}), kReadToken).status.error_code(), StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_TRUE(h.stub->Health(ctx(kAdminToken).get(), {}, &health).ok()) << "another client is not limited by this one";
    streamer.join();
    ASSERT_TRUE(slow.status.ok()) << slow.status.error_message();
    EXPECT_TRUE(h.stub->Health(ctx(kReadToken).get(), {}, &health).ok()) << "the slot is given back";
}

TEST(KbGrpcServe, ALongStreamStopsAtTheServersCallTimeCap) {
    auto bank = make_bank();
    bank->record_delay = std::chrono::milliseconds(300);
    ServeLimits limits;
    limits.max_call_seconds = 1;
    Harness h(bank, limits);
    const FetchResult f = fetch(*h.stub, fetch_ids({0, 1, 2, 3, 4, 5, 6, 7}), kReadToken, 6000);
    EXPECT_EQ(f.status.error_code(), StatusCode::DEADLINE_EXCEEDED) << f.status.error_message();
    EXPECT_GE(f.records.size(), 2u);
    EXPECT_LT(f.records.size(), 8u);
}

// --- TLS, with a CA and a server certificate made by `openssl` for this test -------------------

struct TempDir {
    fs::path path;
    TempDir() {
        std::string t = (fs::temp_directory_path() / "mnemo_kb_serve_XXXXXX").string();
        path = mkdtemp(t.data());
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::string read_text(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

TEST(KbGrpcServe, TlsClientsNeedTheCaAndPlaintextClientsAreRefused) {
    if (!mnemo::test::have_openssl()) GTEST_SKIP() << "no openssl command";
    TempDir tmp;
    ASSERT_TRUE(mnemo::test::make_certificates(tmp.path)) << read_text(tmp.path / "log.txt");

    Publisher publisher;
    publisher.publish(make_bank(4));
    ServeOptions o;
    o.listen = "127.0.0.1:0";
    o.tls_cert_pem = read_text(tmp.path / "server.pem");
    o.tls_key_pem = read_text(tmp.path / "server.key");
    o.tokens = test_tokens();
    auto server = KbServer::start(publisher.provider(), o);
    const std::string target = "127.0.0.1:" + std::to_string(server->port());

    grpc::SslCredentialsOptions with_ca;
    with_ca.pem_root_certs = read_text(tmp.path / "ca.pem");
    auto tls = v1::KnowledgeBase::NewStub(grpc::CreateChannel(target, grpc::SslCredentials(with_ca)));
    v1::HealthReply health;
    const grpc::Status ok = tls->Health(ctx(kReadToken).get(), {}, &health);
    ASSERT_TRUE(ok.ok()) << ok.error_message();
    EXPECT_EQ(health.bank_version(), 4u);
    EXPECT_EQ(tls->Health(ctx("").get(), {}, &health).error_code(), StatusCode::UNAUTHENTICATED);

    auto plain = v1::KnowledgeBase::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
    EXPECT_EQ(plain->Health(ctx(kReadToken).get(), {}, &health).error_code(), StatusCode::UNAVAILABLE);

    auto no_ca = v1::KnowledgeBase::NewStub(grpc::CreateChannel(target, grpc::SslCredentials(grpc::SslCredentialsOptions())));
    EXPECT_EQ(no_ca->Health(ctx(kReadToken).get(), {}, &health).error_code(), StatusCode::UNAVAILABLE);
    server->shutdown(std::chrono::milliseconds(200));
}

TEST(KbGrpcServe, StartRefusesPlaintextOrNoAuthAwayFromLoopback) {
    Publisher publisher;
    publisher.publish(make_bank());
    auto start_error = [&](const std::string& listen, bool insecure, bool no_auth) -> std::string {
        ServeOptions o;
        o.listen = listen;
        o.insecure = insecure;
        o.no_auth = no_auth;
        if (!no_auth) o.tokens = test_tokens();
        try {
            KbServer::start(publisher.provider(), o)->shutdown(std::chrono::milliseconds(0));
            return "";
        } catch (const mnemo::Error& e) {
            return e.what();
        }
    };
    EXPECT_NE(start_error("0.0.0.0:0", true, false).find("only a loopback address"), std::string::npos);
    EXPECT_NE(start_error("127.0.0.1:0", false, false).find("no TLS"), std::string::npos);
    EXPECT_EQ(start_error("127.0.0.1:0", true, false), "");
    EXPECT_EQ(start_error("127.0.0.1:0", true, true), "");  // --no-auth: local tests only

    // Without tokens every call is allowed, as "anonymous".
    ServeOptions o;
    o.listen = "127.0.0.1:0";
    o.insecure = o.no_auth = true;
    o.log = [](const std::string&) {};
    auto server = KbServer::start(publisher.provider(), o);
    auto stub = v1::KnowledgeBase::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(server->port()), grpc::InsecureChannelCredentials()));
    v1::ReloadReply rr;
    EXPECT_TRUE(stub->Reload(ctx("").get(), {}, &rr).ok());
    server->shutdown(std::chrono::milliseconds(200));
}

}  // namespace
