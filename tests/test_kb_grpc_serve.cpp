// `mnemo-kb serve` over a real gRPC connection on 127.0.0.1 (port 0), against a small bank made in
// memory (FakeBank, fixtures/kb_serve_harness.hpp, so these tests do not depend on the bank's file
// format): every call, authentication, each validation rule with its exact status code, TLS with
// certificates made by `openssl`, reloads under a stream in flight, the per-client limit and the
// call-time cap. Every client call carries a short deadline, so a server bug fails a test instead
// of hanging it. Hostile clients and inputs: test_kb_grpc_serve_hostile.cpp.
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

#include "fixtures/kb_serve_harness.hpp"
#include "fixtures/tls_certificates.hpp"
#include "serve/listen_policy.hpp"

namespace {

using namespace mnemo::kb;
using namespace mnemo::kb::serve_test;
using grpc::StatusCode;
namespace fs = std::filesystem;

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
    // When the call reached the service (gRPC may refuse it before), its log line says what may
    // have happened: gRPC tells the service no reason.
    if (eventually([&] { return !h.log.all().empty(); }, 1000)) {
        EXPECT_NE(h.log.all().find("larger than max_receive_message_bytes"), std::string::npos) << h.log.all();
    }
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
