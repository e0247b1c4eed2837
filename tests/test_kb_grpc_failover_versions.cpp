// The failover client and bank versions (docs/kb-client.md "Several servers"): nodes that serve
// different versions of one bank (one has picked up a renumbering publish, the other not yet)
// never give a chunk records of two versions; a node that ignores the pinned version is caught by
// the version its reply carries. And a host name with several addresses, over TLS, is one server
// per address. Nodes and bank: fixtures/kb_failover_bank.hpp.
#include <fstream>
#include <map>
#include <sstream>

#include "fixtures/kb_failover_suite.hpp"
#include "fixtures/tls_certificates.hpp"
#include "kb/grpc_kb_source.hpp"
#include "mnemo/error.hpp"

using namespace mnemo;
using namespace mnemo::test::failover;
using mnemo::test::BankNode;
using mnemo::test::NodeServer;

namespace {

class KbGrpcFailoverVersions : public KbFailoverTest {};

// ---------------------------------------------------------------- bank versions

// Two nodes on different versions (one has picked up a renumbering publish, the other not yet):
// every chunk is all of one version, the client moves to the newer one, falls back to the older
// one when the newer node dies, and moves on again when it is back.
TEST_F(KbGrpcFailoverVersions, NodesOnDifferentVersionsNeverMixAChunk) {
    start_nodes(2);
    KbSourceOptions o = options(urls());
    o.single_round_trip = true;
    const auto kb = connect_kb(o, *model_);
    int seq = 0;
    std::map<uint64_t, int> answered;  // by version
    auto ask = [&](int n) {
        for (int i = 0; i < n; ++i, ++seq) {
            const ChunkQuery q = query_near(static_cast<size_t>(seq * 7) % kReferences, seq % 3);
            kb->prefetch(q, 5);  // the worker and this thread: two chunks may be in flight
            const auto got = kb->retrieve(q, 5);
            if (got.empty()) continue;
            const uint64_t v = answering_version(q, got);
            ASSERT_NE(v, 0u) << "chunk " << seq << " is neither version's answer";
            answered[v]++;
        }
    };
    ask(20);
    EXPECT_EQ(answered[1], 20);
    nodes_[1]->version = 2;  // a renumbering publish, picked up by node 1 only
    ask(30);
    EXPECT_EQ(kb->status().bank_version, 2u);
    EXPECT_EQ(kb->status().servers[0].state, KbServerState::Behind);
    EXPECT_GT(answered[2], 20);
    const int v2_before = answered[2];

    servers_[1]->stop(0);  // the newer node dies: the older one still answers, with its version
    answered.clear();
    ask(20);
    EXPECT_GE(answered[1], 19) << "at most the chunk that met the dead node goes without";
    EXPECT_EQ(kb->status().bank_version, 1u);

    ASSERT_TRUE(servers_[1]->start());  // back, still on version 2: the client follows it
    for (int i = 0; i < 100 && kb->status().bank_version != 2; ++i) {
        ask(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(kb->status().bank_version, 2u);
    nodes_[0]->version = 2;  // node 0 catches up: it takes chunks again, without a trial
    for (int i = 0; i < 100 && kb->status().servers[0].state != KbServerState::Up; ++i) {
        ask(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(kb->status().servers[0].state, KbServerState::Up);
    const int node0 = nodes_[0]->retrievals;
    ask(6);
    EXPECT_GT(nodes_[0]->retrievals, node0);
    EXPECT_GT(v2_before, 0);
    for (const auto& [e, detail] : events_.get())
        EXPECT_TRUE(e == KbEvent::BankChanged || e == KbEvent::ServerDown || e == KbEvent::ServerUp) << static_cast<int>(e) << " " << detail;
}

// The checker above has teeth: a chunk of version 2's ids with version 1's records is neither.
TEST_F(KbGrpcFailoverVersions, AMixedChunkIsRecognised) {
    const ChunkQuery q = query_near(11);
    const std::vector<uint32_t> refs = bank_->rank(q, 5);
    std::vector<std::shared_ptr<const ExplicitMemory>> v1, mixed;
    for (uint32_t r : refs) {
        auto m = std::make_shared<ExplicitMemory>();
        m->id = bank_->id_of(1, r);
        m->key_codes = bank_->key_codes(r);
        v1.push_back(m);
        auto x = std::make_shared<ExplicitMemory>();
        x->id = bank_->id_of(2, r);                                   // version 2's id...
        x->key_codes = bank_->key_codes(bank_->reference_of(1, x->id));  // ...with version 1's record under it
        mixed.push_back(x);
    }
    EXPECT_EQ(answering_version(q, v1), 1u);
    EXPECT_EQ(answering_version(q, mixed), 0u);
}

// A node that ignores the version a request pins (an older or broken server) still cannot make the
// client read its cached records under another version's ids: the reply's version is checked.
TEST_F(KbGrpcFailoverVersions, AReplyOfAnotherVersionIsNotDecodedAgainstTheCache) {
    start_nodes(1);
    nodes_[0]->ignore_pin = true;
    KbSourceOptions o = options(urls());
    o.prefetch = false;
    const auto kb = connect_kb(o, *model_);
    for (size_t r = 0; r < 10; ++r) ASSERT_EQ(answering_version(query_near(r), kb->retrieve(query_near(r), 5)), 1u);
    nodes_[0]->version = 2;
    for (size_t r = 0; r < 10; ++r) EXPECT_EQ(answering_version(query_near(r), kb->retrieve(query_near(r), 5)), 2u) << r;
    EXPECT_EQ(kb->status().bank_changes, 1u);
    EXPECT_EQ(kb->status().failures, 0u);
}

// ---------------------------------------------------------------- a host name, several addresses

std::string read_text(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// grpcs://kb.test:PORT, whose name resolves (here: a resolver the test gives) to 127.0.0.1 and
// 127.0.0.2, each a node: chunks are spread over both, each address is checked against the
// certificate's name (which names no address), and one address dying leaves the other.
TEST_F(KbGrpcFailoverVersions, AHostNameWithSeveralAddressesIsOneServerPerAddress) {
    if (!mnemo::test::have_openssl()) GTEST_SKIP() << "no openssl command: the TLS certificates cannot be made";
    const fs::path dir = *root_ / "tls";
    fs::create_directories(dir);
    ASSERT_TRUE(mnemo::test::make_certificates(dir, "DNS:kb.test")) << read_text(dir / "log.txt");
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({read_text(dir / "server.key"), read_text(dir / "server.pem")});
    const auto creds = grpc::SslServerCredentials(ssl);
    BankNode a(*bank_, kToken), b(*bank_, kToken);
    NodeServer first(a, "127.0.0.1", 0, creds);
    ASSERT_TRUE(first.start());
    NodeServer second(b, "127.0.0.2", first.port(), creds);
    if (!second.start()) GTEST_SKIP() << "cannot listen on 127.0.0.2:" << first.port() << " (a loopback without 127.0.0.0/8)";

    const std::string url = "grpcs://kb.test:" + std::to_string(first.port());
    KbSourceOptions o = options({url});
    o.ca_file = (dir / "ca.pem").string();
    o.prefetch = false;
    const auto resolve = [](const std::string& host) {
        return host == "kb.test" ? std::vector<std::string>{"127.0.0.1", "127.0.0.2"} : std::vector<std::string>{};
    };
    const auto kb = std::make_shared<detail::GrpcKbSource>(o, *model_, resolve);
    for (size_t i = 0; i < 4; ++i) ASSERT_EQ(kb->retrieve(query_near(i), 5).size(), 5u);
    EXPECT_EQ(a.retrievals, 2);
    EXPECT_EQ(b.retrievals, 2);
    KbSourceStatus st = kb->status();
    ASSERT_EQ(st.servers.size(), 2u);
    EXPECT_EQ(st.servers[0].url, url + " (127.0.0.1)");
    EXPECT_EQ(st.servers[1].url, url + " (127.0.0.2)");
    EXPECT_EQ(st.url, url);
    EXPECT_TRUE(contains(kb->describe(), "knowledge server " + url + " (2 addresses)")) << kb->describe();

    second.stop(0);
    for (size_t i = 0; i < 4; ++i) ASSERT_EQ(kb->retrieve(query_near(i + 4), 5).size(), 5u);
    EXPECT_EQ(a.retrievals, 6);
    ASSERT_EQ(events_.count(KbEvent::ServerDown), 1u);
    EXPECT_TRUE(contains(events_.get()[0].second, url + " (127.0.0.2)")) << events_.get()[0].second;
    EXPECT_EQ(kb->status().failures, 0u);
}

}  // namespace
