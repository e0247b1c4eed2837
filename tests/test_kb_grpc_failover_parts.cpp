// The failover client's parts without a server (docs/kb-client.md "Several servers"): a list of
// URLs (one scheme, no repeats), a host name's addresses as endpoints, and the order in which the
// pool offers its servers to a chunk (least outstanding, then round robin; backing off, behind,
// trial, caught up).
#include <gtest/gtest.h>

#include <chrono>

#include "kb/grpc_kb_pool.hpp"
#include "kb/kb_endpoints.hpp"
#include "kb/kb_url.hpp"
#include "mnemo/error.hpp"
#include "mnemo/kb/kb_source.hpp"

using namespace mnemo;
using Clock = std::chrono::steady_clock;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---------------------------------------------------------------- lists and names

TEST(KbGrpcFailoverParts, AUrlListIsOneSchemeWithoutRepeats) {
    EXPECT_NO_THROW(check_kb_urls({"grpcs://a.example:1", "grpcs://b.example:1", "grpcs://a.example:2"}));
    auto refused = [](const std::vector<std::string>& urls, const std::vector<std::string>& parts) {
        try {
            check_kb_urls(urls);
            ADD_FAILURE() << "accepted";
        } catch (const Error& e) {
            for (const std::string& p : parts) EXPECT_TRUE(contains(e.what(), p)) << e.what();
        }
    };
    refused({"grpc://127.0.0.1:1", "grpcs://kb.example:2"}, {"'grpc://127.0.0.1:1'", "'grpcs://kb.example:2'", "different schemes"});
    refused({"grpcs://kb.example:2", "grpcs://KB.example:2/"}, {"'grpcs://KB.example:2/' is given twice"});
    refused({"grpcs://kb.example:2", "http://x:1"}, {"'http://x:1'", "expected grpcs://"});
    refused({}, {"no knowledge server URL"});
    KbSourceOptions both;
    both.url = "grpc://127.0.0.1:1";
    both.urls = {"grpc://127.0.0.1:2"};
    EXPECT_THROW(connect_kb(both, MemoryFolderModel{}), Error) << "url and urls both set";
}

TEST(KbGrpcFailoverParts, AHostNameWithSeveralAddressesIsSeveralEndpoints) {
    auto resolver = [](const std::string& host) -> std::vector<std::string> {
        if (host == "kb.test") return {"10.0.0.1", "10.0.0.2", "10.0.0.1", "2001:db8::7"};
        if (host == "one.test") return {"10.0.0.9"};
        return {"192.0.2.1", "192.0.2.2"};
    };
    using detail::parse_kb_url;
    const auto e = detail::kb_endpoints({parse_kb_url("grpcs://kb.test:7443"), parse_kb_url("grpcs://one.test:1"),
                                         parse_kb_url("grpcs://10.1.1.1:2"), parse_kb_url("grpcs://localhost:3")},
                                        resolver);
    ASSERT_EQ(e.size(), 6u);
    EXPECT_EQ(e[0].target, "10.0.0.1:7443");
    EXPECT_EQ(e[0].tls_name, "kb.test");
    EXPECT_EQ(e[0].name, "grpcs://kb.test:7443 (10.0.0.1)");
    EXPECT_EQ(e[1].target, "10.0.0.2:7443");
    EXPECT_EQ(e[2].target, "[2001:db8::7]:7443") << "repeated addresses count once";
    EXPECT_EQ(e[3].target, "one.test:1") << "one address: the name, resolved again by gRPC when it reconnects";
    EXPECT_TRUE(e[3].tls_name.empty());
    EXPECT_EQ(e[4].target, "10.1.1.1:2") << "an address is not resolved";
    EXPECT_EQ(e[5].target, "localhost:3") << "localhost is one machine";
    // Plaintext is loopback only, never resolved into several.
    EXPECT_EQ(detail::kb_endpoints({parse_kb_url("grpc://localhost:4")}, resolver).size(), 1u);
}

// ---------------------------------------------------------------- the pool's order

TEST(KbGrpcFailoverParts, PoolOrdersByLoadThenRoundRobinAndSkipsServersBackingOff) {
    std::vector<std::unique_ptr<detail::KbClient>> clients;
    for (int port : {1, 2, 3}) clients.push_back(std::make_unique<detail::KbClient>(detail::parse_kb_url("grpc://127.0.0.1:" + std::to_string(port)), "", "", 1 << 20));
    detail::ServerPool pool(std::move(clients), std::chrono::milliseconds(100), std::chrono::milliseconds(400));
    const auto t = Clock::now();
    EXPECT_EQ(pool.plan(t), (std::vector<size_t>{0, 1, 2}));
    EXPECT_EQ(pool.plan(t), (std::vector<size_t>{1, 2, 0}));
    pool.begin_call(2);  // busy: last
    EXPECT_EQ(pool.plan(t), (std::vector<size_t>{0, 1, 2}));
    pool.end_call(2);
    EXPECT_TRUE(pool.failed(1, KbServerState::Down, "x", t)) << "its outage starts";
    EXPECT_FALSE(pool.failed(1, KbServerState::Down, "x", t));
    EXPECT_EQ(pool.plan(t), (std::vector<size_t>{0, 2})) << "backing off";
    EXPECT_EQ(pool.due(t).size(), 0u);
    ASSERT_TRUE(pool.next_due());
    const auto later = *pool.next_due();
    EXPECT_EQ(pool.due(later), std::vector<size_t>{1});
    EXPECT_EQ(pool.plan(later).back(), 1u) << "after its backoff: an inline trial, after the servers that are up";
    pool.probe_answered(1, 1, 1, later);
    EXPECT_TRUE(pool.due(later).empty()) << "a trial is pending";
    EXPECT_TRUE(pool.answered(1, 1)) << "came back";
    pool.lagging(0, 3, later);
    EXPECT_EQ(pool.plan(later), (std::vector<size_t>{2, 1})) << "behind: left out (the sixth plan starts at 2)";
    ASSERT_EQ(pool.behind().size(), 1u);
    EXPECT_EQ(pool.behind()[0].second, 3u);
    pool.probe_answered(0, 4, 4, later);
    EXPECT_EQ(pool.up(), 3u) << "caught up: up at once";
}

}  // namespace
