// A sharded index on loopback (docs/kb-protocol.md, "Shards"): one bank folder served by 1, 2 and
// 3 in-process nodes, each holding one shard (`serve --shard I/N`) and asking the others. What
// must hold: every node answers every query (vector, BM25, text, hybrid, filters, relative cut,
// k = 1..50) byte for byte as an unsharded node does, ids, scores and texts; records of any shard
// come from any node; a peer that is down, hangs, serves another version or holds another shard
// fails the call with UNAVAILABLE naming the shard, within the client's deadline; shard requests
// need the shard scope. The bank (60 documents in 5 sources, two of them deleted, so BM25's
// statistics leave retired records out) is built once per suite.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <thread>

#include "bank/bank_delete.hpp"
#include "fixtures/kb_corrected_bank.hpp"
#include "fixtures/kb_shard_cluster.hpp"
#include "serve/shard_merge.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using namespace mnemo::kb;
using namespace mnemo::kb::shard_test;
using grpc::StatusCode;

namespace {

const char* const kSources[] = {"news/world", "news/local", "wiki/a", "wiki/b", "blog"};

class KbGrpcShards : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        root_ = new fs::path(fs::temp_directory_path() / ("mnemo-kb-shards-" + std::to_string(::getpid())));
        fs::remove_all(*root_);
        std::string corpus;
        for (int d = 0; d < 60; ++d) {
            std::string line = test::kb_doc_line("d" + std::to_string(d), 500 + d);
            line.insert(1, "\"source\": \"" + std::string(kSources[d % 5]) + "\", ");
            corpus += line;
        }
        test::write_text(*root_ / "corpus.jsonl", corpus);
        std::unique_ptr<Session> session = test::open_model(test::model_dir("memory3-tiny-bpe"), 128);
        build_bank(*session, test::kb_small_build(base(), (*root_ / "corpus.jsonl").string()));
        delete_documents(open_folder_storage(base().string(), false), {"d3", "d17"});
        // A later version beside it, for nodes that disagree.
        test::copy_kb_bank(base(), newer());
        delete_documents(open_folder_storage(newer().string(), false), {"d5"});
    }
    static void TearDownTestSuite() {
        fs::remove_all(*root_);
        delete root_;
    }
    static fs::path base() { return *root_ / "base"; }
    static fs::path newer() { return *root_ / "newer"; }
    static std::shared_ptr<const Bank> whole() { return test::open_kb_bank(base()); }

    static inline fs::path* root_ = nullptr;
};

// Varied queries over the bank: record vectors and random ones, a reference's tokens and random
// ones, texts, both kinds fused, source lists and prefixes, relative cuts, k from 1 to 50.
std::vector<v1::RetrieveRequest> queries(const Bank& bank, size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    const auto dim = static_cast<size_t>(bank.model().spec.retrieval_dim);
    std::vector<v1::RetrieveRequest> out;
    for (size_t i = 0; i < n; ++i) {
        v1::RetrieveRequest r;
        const auto id = static_cast<uint32_t>(rng() % bank.count());
        const BankReference& ref = bank.reference(id);
        const int kind = static_cast<int>(i % 5);  // vector, tokens, text, vector + tokens, vector + text
        if (kind == 0 || kind >= 3) {
            if (rng() % 3 == 0) {
                std::normal_distribution<float> g;
                std::vector<float> v(dim);
                float norm = 0;
                for (float& x : v) {
                    x = g(rng);
                    norm += x * x;
                }
                for (float x : v) r.add_vector(x / std::sqrt(norm));
            } else {
                // A shard holds only its own vectors: take them from the file, through the whole bank.
                const float* v = bank.vector(id);
                r.mutable_vector()->Add(v, v + dim);
            }
        }
        if (kind == 1 || kind == 3) {
            const size_t terms = 1 + rng() % 5;
            for (size_t t = 0; t < terms && t < ref.tokens.size(); ++t) r.add_tokens(ref.tokens[(t * 7 + rng()) % ref.tokens.size()]);
            if (rng() % 4 == 0) r.add_tokens(static_cast<int32_t>(rng() % 300));
        }
        if (kind == 2 || kind == 4) r.set_text(ref.text.substr(0, 10 + rng() % 30));
        r.set_k(1 + static_cast<uint32_t>(i % 50));
        if (rng() % 4 == 0) r.mutable_filter()->add_sources(kSources[rng() % 5]);
        if (rng() % 6 == 0) r.mutable_filter()->add_sources(kSources[rng() % 5]);
        if (rng() % 5 == 0) r.mutable_filter()->set_source_prefix(rng() % 2 ? "news/" : "wiki/");
        if (rng() % 5 == 0) r.set_min_relative_score(0.6);
        if (rng() % 3 == 0) r.set_min_references(rng() % 6);  // the cut's floor (ignored without a cut)
        if (rng() % 3 == 0) r.set_omit_texts(true);
        out.push_back(r);
    }
    return out;
}

std::string hit_ids(const v1::RetrieveReply& r) {
    std::string s;
    for (const v1::Hit& h : r.hits()) s += std::to_string(h.id()) + ":" + std::to_string(h.score()) + " ";
    return s;
}

v1::RetrieveRequest probe() {
    v1::RetrieveRequest r;
    r.add_tokens(5);
    r.set_k(3);
    return r;
}

TEST_F(KbGrpcShards, EveryNodeAnswersAsTheUnshardedNode) {
    Node plain(base().string(), {}, {});
    const auto bank = whole();
    ASSERT_GT(bank->retired_count(), 0u) << "BM25's statistics must leave retired records out in every shard";
    const std::vector<v1::RetrieveRequest> qs = queries(*bank, 240, 7);
    for (uint32_t shards : {1u, 2u, 3u}) {
        Cluster cluster(base().string(), shards);
        for (auto& node : cluster.nodes) ASSERT_TRUE(wait_until_ready(*node, probe()).ok());
        size_t compared = 0, with_hits = 0, hits_in_other_shards = 0;
        for (size_t i = 0; i < qs.size(); ++i) {
            v1::RetrieveReply want, got;
            const grpc::Status ws = plain.stub->Retrieve(ctx(kReadToken).get(), qs[i], &want);
            ASSERT_TRUE(ws.ok()) << ws.error_message();
            Node& node = *cluster.nodes[i % shards];
            const grpc::Status gs = node.stub->Retrieve(ctx(kReadToken).get(), qs[i], &got);
            ASSERT_TRUE(gs.ok()) << shards << " shards, query " << i << ": " << gs.error_message() << "\n" << node.log.all();
            EXPECT_EQ(want.SerializeAsString(), got.SerializeAsString())
                << shards << " shards, node " << i % shards << ", query " << i << " (k " << qs[i].k() << ")\nwant " << hit_ids(want) << "\ngot  "
                << hit_ids(got);
            ++compared;
            with_hits += want.hits_size() > 0;
            for (const v1::Hit& h : got.hits()) hits_in_other_shards += h.id() % shards != i % shards;
        }
        EXPECT_EQ(compared, qs.size());
        EXPECT_GT(with_hits, qs.size() * 3 / 4) << "the queries must find something to compare";
        if (shards > 1) {
            EXPECT_GT(hits_in_other_shards, 0u) << "the answers must hold other shards' records";
        }
    }
}

// The merge on its own, for more shard counts than the wire test starts: the shards' rankings of
// every query merge into exactly the whole bank's retrieve().
TEST_F(KbGrpcShards, MergedShardRankingsAreTheWholeBanksRanking) {
    const auto bank = whole();
    const std::vector<v1::RetrieveRequest> qs = queries(*bank, 150, 11);
    for (uint32_t shards : {2u, 4u, 7u}) {
        std::vector<std::shared_ptr<const Bank>> parts;
        for (uint32_t s = 0; s < shards; ++s) parts.push_back(Bank::open(open_folder_storage(base().string(), false), {s, shards}));
        for (const v1::RetrieveRequest& r : qs) {
            std::vector<float> vec(r.vector().begin(), r.vector().end());
            std::vector<int32_t> tokens(r.tokens().begin(), r.tokens().end());
            if (!r.text().empty()) tokens = bank->tokenizer()->encode(r.text(), false);
            BankQuery q;
            q.vector = vec.empty() ? nullptr : &vec;
            q.tokens = tokens.empty() ? nullptr : &tokens;
            q.k = static_cast<int32_t>(r.k());
            q.sources.assign(r.filter().sources().begin(), r.filter().sources().end());
            q.source_prefix = r.filter().source_prefix();
            q.min_relative_score = r.min_relative_score();
            q.min_references = r.min_references();
            if (!q.vector && !q.tokens) continue;
            const uint32_t depth = shard_depth(r.k(), q.vector != nullptr, q.tokens != nullptr);
            std::vector<ShardRankings> rankings;
            for (const auto& p : parts) {
                ShardRankings sr;
                if (q.vector) sr.vector = p->vector_ranking(q, depth);
                if (q.tokens) sr.bm25 = p->bm25_ranking(q, depth);
                for (const BankHit& h : sr.vector) EXPECT_EQ(h.id % shards, p->shard());
                rankings.push_back(sr);
            }
            const std::vector<BankHit> want = bank->retrieve(q);
            const std::vector<BankHit> got = merge_shard_rankings(rankings, r.k(), q.vector != nullptr, q.tokens != nullptr, q.min_relative_score,
                                                                  q.min_references);
            // As (id, score) lists, so that a failure prints both rankings.
            const auto pairs = [](const std::vector<BankHit>& hits) {
                std::vector<std::pair<uint32_t, double>> out;
                for (const BankHit& h : hits) out.emplace_back(h.id, h.score);
                return out;
            };
            EXPECT_EQ(pairs(want), pairs(got)) << shards << " shards, k " << r.k() << (q.vector ? " vector" : "") << (q.tokens ? " tokens" : "");
        }
    }
}

TEST_F(KbGrpcShards, RecordsOfEveryShardComeFromAnyNode) {
    Node plain(base().string(), {}, {});
    Cluster cluster(base().string(), 3);
    ASSERT_TRUE(wait_until_ready(*cluster.nodes[1], probe()).ok());
    const auto bank = whole();
    const std::vector<v1::RetrieveRequest> qs = queries(*bank, 30, 3);
    size_t records = 0;
    for (const v1::RetrieveRequest& q : qs) {
        v1::RetrieveMemoriesReply want, got;
        ASSERT_TRUE(plain.stub->RetrieveMemories(ctx(kReadToken).get(), q, &want).ok());
        const grpc::Status s = cluster.nodes[1]->stub->RetrieveMemories(ctx(kReadToken).get(), q, &got);
        ASSERT_TRUE(s.ok()) << s.error_message();
        EXPECT_EQ(want.SerializeAsString(), got.SerializeAsString());
        records += got.records_size();
    }
    EXPECT_GT(records, 30u);
    // FetchMemories needs no fan-out: every node reads every record from the shared folder.
    v1::FetchRequest f;
    for (uint32_t id : {0u, 1u, 2u, 4u, 5u}) f.add_ids(id);
    const serve_test::FetchResult fetched = serve_test::fetch(*cluster.nodes[2]->stub, f, kReadToken);
    ASSERT_TRUE(fetched.status.ok()) << fetched.status.error_message();
    ASSERT_EQ(fetched.records.size(), 5u);
    for (const v1::MemoryRecord& r : fetched.records) EXPECT_EQ(r.record(), bank->record(r.id()));
}

TEST_F(KbGrpcShards, HealthAndInfoReportTheShard) {
    Cluster cluster(base().string(), 3);
    Node plain(base().string(), {}, {});
    v1::HealthReply health;
    ASSERT_TRUE(cluster.nodes[2]->stub->Health(ctx(kReadToken).get(), {}, &health).ok());
    EXPECT_EQ(health.shard(), 2u);
    EXPECT_EQ(health.shards(), 3u);
    v1::InfoReply info;
    ASSERT_TRUE(cluster.nodes[1]->stub->Info(ctx(kReadToken).get(), {}, &info).ok());
    EXPECT_EQ(info.shard(), 1u);
    EXPECT_EQ(info.shards(), 3u);
    EXPECT_EQ(info.shard_peers(), 2u);
    EXPECT_EQ(info.bank().count(), whole()->count()) << "the bank's facts are the whole bank's";
    ASSERT_TRUE(plain.stub->Info(ctx(kReadToken).get(), {}, &info).ok());
    EXPECT_EQ(info.shards(), 1u);
    EXPECT_EQ(info.shard_peers(), 0u);
}

// A failed fan-out: UNAVAILABLE, the shard named, in time, and nothing partial.
void expect_unavailable(Node& node, const std::vector<std::string>& needles, int deadline_ms, int within_ms) {
    v1::RetrieveReply reply;
    const auto t0 = std::chrono::steady_clock::now();
    const grpc::Status s = node.stub->Retrieve(ctx(kReadToken, deadline_ms).get(), probe(), &reply);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE) << s.error_message();
    for (const std::string& n : needles) EXPECT_NE(s.error_message().find(n), std::string::npos) << s.error_message();
    EXPECT_EQ(reply.hits_size(), 0);
    EXPECT_LT(ms, within_ms) << s.error_message();
}

TEST_F(KbGrpcShards, APeerThatIsDownFailsTheCallAtOnce) {
    ReservedPort down;  // bound, never listening: connections are refused
    Node node(base().string(), {0, 2}, {down.url()});
    expect_unavailable(node, {"shard 1/2", "no partial result"}, 5000, 2000);
    EXPECT_NE(node.log.all().find(down.url()), std::string::npos) << "the log names the peer's node";
}

TEST_F(KbGrpcShards, APeerThatHangsFailsTheCallWithinTheDeadline) {
    ReservedPort hung;
    hung.hang();  // accepts connections, never answers
    {
        // The client's deadline bounds the wait, and the node answers before it.
        Node node(base().string(), {1, 2}, {hung.url()});
        expect_unavailable(node, {"shard 0/2", "took longer than"}, 1500, 1600);
    }
    {
        // --shard-peer-timeout-ms bounds it when the client's deadline is far.
        Node node(base().string(), {1, 2}, {hung.url()}, "127.0.0.1:0", kShardToken, std::chrono::milliseconds(300));
        expect_unavailable(node, {"shard 0/2", "took longer than"}, 20000, 2500);
    }
}

TEST_F(KbGrpcShards, ShardsOnTwoVersionsFailTheCall) {
    ReservedPort p0, p1;
    Node old_node(base().string(), {0, 2}, {p1.url()}, p0.listen());
    Node new_node(newer().string(), {1, 2}, {p0.url()}, p1.listen());
    const uint64_t v = old_node.bank->version();
    ASSERT_EQ(new_node.bank->version(), v + 1);
    // Both directions: each names the other's version and its own, and the shard.
    for (int attempt = 0; attempt < 40; ++attempt) {  // until the channels connect
        v1::RetrieveReply r;
        const grpc::Status s = old_node.stub->Retrieve(ctx(kReadToken).get(), probe(), &r);
        if (s.error_message().find("serves bank version") != std::string::npos) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    expect_unavailable(old_node, {"shard 1/2", "serves bank version " + std::to_string(v + 1), "version " + std::to_string(v)}, 5000, 2000);
    expect_unavailable(new_node, {"shard 0/2", "serves bank version " + std::to_string(v), "version " + std::to_string(v + 1)}, 5000, 2000);
}

TEST_F(KbGrpcShards, PeersListedOutOfShardOrderAreRefused) {
    ReservedPort p0, p1, p2;
    Node n1(base().string(), {1, 3}, {p0.url(), p2.url()}, p1.listen());
    Node n2(base().string(), {2, 3}, {p0.url(), p1.url()}, p2.listen());
    Node n0(base().string(), {0, 3}, {p2.url(), p1.url()}, p0.listen());  // shard 2's node listed first
    for (int attempt = 0; attempt < 40; ++attempt) {
        v1::RetrieveReply r;
        if (n0.stub->Retrieve(ctx(kReadToken).get(), probe(), &r).error_message().find("expected shard") != std::string::npos) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    expect_unavailable(n0, {"shard 1/3", "it holds shard 2/3, expected shard 1/3"}, 5000, 2000);
}

TEST_F(KbGrpcShards, ShardRequestsNeedTheShardScope) {
    ReservedPort p0, p1;
    Node n0(base().string(), {0, 2}, {p1.url()}, p0.listen());
    // Node 1 asks with a read token: node 0 refuses it, and node 1's clients learn why.
    Node n1(base().string(), {1, 2}, {p0.url()}, p1.listen(), kReadToken);
    for (int attempt = 0; attempt < 40; ++attempt) {
        v1::RetrieveReply r;
        if (n1.stub->Retrieve(ctx(kReadToken).get(), probe(), &r).error_message().find("PERMISSION_DENIED") != std::string::npos) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    expect_unavailable(n1, {"shard 0/2", "PERMISSION_DENIED", "needs shard or admin"}, 5000, 2000);

    v1::RetrieveRequest shard_request = probe();
    shard_request.clear_tokens();
    const auto bank = whole();
    for (int32_t t : bank->reference(0).tokens) shard_request.add_tokens(t);  // record 0 is in shard 0
    shard_request.mutable_shard()->set_depth(3);
    shard_request.mutable_shard()->set_shards(2);
    v1::RetrieveReply reply;
    EXPECT_EQ(n0.stub->Retrieve(ctx(kReadToken).get(), shard_request, &reply).error_code(), StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(n0.stub->Retrieve(ctx("").get(), shard_request, &reply).error_code(), StatusCode::UNAUTHENTICATED);
    // The shard token: shard requests, Info and Health; no client Retrieve, no records.
    const grpc::Status ok = n0.stub->Retrieve(ctx(kShardToken).get(), shard_request, &reply);
    ASSERT_TRUE(ok.ok()) << ok.error_message();
    EXPECT_TRUE(reply.has_shard());
    EXPECT_EQ(reply.hits_size(), 0);
    EXPECT_EQ(reply.shard().shard(), 0u);
    EXPECT_GT(reply.shard().bm25().ids_size(), 0);
    for (uint32_t id : reply.shard().bm25().ids()) EXPECT_EQ(id % 2, 0u);
    EXPECT_EQ(n0.stub->Retrieve(ctx(kShardToken).get(), probe(), &reply).error_code(), StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(serve_test::fetch(*n0.stub, serve_test::fetch_ids({0}), kShardToken).status.error_code(), StatusCode::PERMISSION_DENIED);
    v1::HealthReply health;
    EXPECT_TRUE(n0.stub->Health(ctx(kShardToken).get(), {}, &health).ok());
    // Checked like any request, and for the shard count.
    shard_request.mutable_shard()->set_depth(100000);
    EXPECT_EQ(n0.stub->Retrieve(ctx(kAdminToken).get(), shard_request, &reply).error_code(), StatusCode::INVALID_ARGUMENT);
    shard_request.mutable_shard()->set_depth(3);
    shard_request.mutable_shard()->set_shards(3);
    EXPECT_EQ(n0.stub->Retrieve(ctx(kAdminToken).get(), shard_request, &reply).error_code(), StatusCode::FAILED_PRECONDITION);
    v1::RetrieveMemoriesReply memories;
    shard_request.mutable_shard()->set_shards(2);
    EXPECT_EQ(n0.stub->RetrieveMemories(ctx(kAdminToken).get(), shard_request, &memories).error_code(), StatusCode::INVALID_ARGUMENT);
}

// A node's shard token carries many clients' retrievals at once: a peer does not hold it to
// max_streams_per_client (each client is held to it on the node it called).
TEST_F(KbGrpcShards, ANodesCallsAreNotHeldToThePerClientLimit) {
    ReservedPort p0, p1;
    ServeLimits one;
    one.max_streams_per_client = 1;
    Node n1(base().string(), {1, 2}, {p0.url()}, p1.listen(), kShardToken, std::chrono::milliseconds(5000), one);
    Node n0(base().string(), {0, 2}, {p1.url()}, p0.listen());
    ASSERT_TRUE(wait_until_ready(n0, probe()).ok());
    const auto bank = whole();
    const std::vector<v1::RetrieveRequest> qs = queries(*bank, 48, 5);
    std::atomic<int> failed{0};
    std::vector<std::thread> clients;
    for (int t = 0; t < 8; ++t)
        clients.emplace_back([&, t] {
            for (size_t i = static_cast<size_t>(t); i < qs.size(); i += 8) {
                v1::RetrieveReply r;
                if (!n0.stub->Retrieve(ctx(kReadToken).get(), qs[i], &r).ok()) ++failed;
            }
        });
    for (std::thread& c : clients) c.join();
    EXPECT_EQ(failed.load(), 0) << n0.log.all();
    // The limit itself still holds for every other token on that peer.
    EXPECT_EQ(n1.server->service().limits().max_streams_per_client, 1u);
}

TEST_F(KbGrpcShards, AShardNodeWithoutPeersAnswersNoClient) {
    Node lone(base().string(), {1, 2}, {});
    v1::RetrieveReply reply;
    const grpc::Status s = lone.stub->Retrieve(ctx(kReadToken).get(), probe(), &reply);
    EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(s.error_message().find("only shard 1/2"), std::string::npos) << s.error_message();
}

// Not a bound to pass: the fan-out's cost on loopback, printed for docs/kb-protocol.md ("Shards").
// Each configuration answers the same queries through node 0 (the unsharded node for 1 shard).
TEST_F(KbGrpcShards, FanOutLatencyOnLoopback) {
    const auto bank = whole();
    const std::vector<v1::RetrieveRequest> qs = queries(*bank, 400, 21);
    Node plain(base().string(), {}, {});
    Cluster two(base().string(), 2), three(base().string(), 3);
    for (Node* n : {&plain, two.nodes[0].get(), three.nodes[0].get()}) ASSERT_TRUE(wait_until_ready(*n, probe()).ok());
    const auto percentiles = [&](Node& node) {
        std::vector<double> ms;
        for (int pass = 0; pass < 2; ++pass) {  // the first pass warms up
            ms.clear();
            for (const v1::RetrieveRequest& q : qs) {
                v1::RetrieveReply r;
                const auto t0 = std::chrono::steady_clock::now();
                const grpc::Status s = node.stub->Retrieve(ctx(kReadToken).get(), q, &r);
                ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
                EXPECT_TRUE(s.ok()) << s.error_message();
            }
        }
        std::sort(ms.begin(), ms.end());
        return std::make_pair(ms[ms.size() / 2], ms[ms.size() * 99 / 100]);
    };
    const auto [p50_1, p99_1] = percentiles(plain);
    const auto [p50_2, p99_2] = percentiles(*two.nodes[0]);
    const auto [p50_3, p99_3] = percentiles(*three.nodes[0]);
    std::printf("Retrieve on loopback, %zu queries (vector, BM25, text, hybrid; k 1..50), %llu records:\n"
                "  1 shard (unsharded): p50 %.3f ms  p99 %.3f ms\n"
                "  2 shards:            p50 %.3f ms  p99 %.3f ms\n"
                "  3 shards:            p50 %.3f ms  p99 %.3f ms\n",
                qs.size(), static_cast<unsigned long long>(bank->count()), p50_1, p99_1, p50_2, p99_2, p50_3, p99_3);
    RecordProperty("p50_ms_1_2_3", std::to_string(p50_1) + " " + std::to_string(p50_2) + " " + std::to_string(p50_3));
    RecordProperty("p99_ms_1_2_3", std::to_string(p99_1) + " " + std::to_string(p99_2) + " " + std::to_string(p99_3));
}

}  // namespace
