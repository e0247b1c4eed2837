// The knowledge server's client with several servers over one bank (KbSourceOptions::urls,
// engine/src/kb/grpc_kb_failover.cpp, docs/kb-client.md "Several servers"), against in-test nodes
// (fixtures/kb_failover_bank.hpp) on 127.0.0.1: chunks are spread over the nodes; a node stopped
// in the middle of a generation (between calls, or in the middle of one) costs no chunk its
// memories and changes no token; with every node down the chunk goes without memories at once,
// with one warning, and a node that comes back is used again. Bank versions and host names:
// test_kb_grpc_failover_versions.cpp; URL lists and the pool's order: test_kb_grpc_failover_parts.cpp;
// real `mnemo-kb serve` processes killed with SIGKILL: test_kb_grpc_failover_processes.cpp.
#include <future>

#include "fixtures/kb_failover_suite.hpp"
#include "mnemo/error.hpp"

using namespace mnemo;
using namespace mnemo::test::failover;

namespace {

class KbGrpcFailover : public KbFailoverTest {};

// ---------------------------------------------------------------- spreading

TEST_F(KbGrpcFailover, ChunksAreSpreadRoundRobinOverTheServers) {
    start_nodes(3);
    KbSourceOptions o = options(urls());
    o.prefetch = false;  // one chunk at a time: the order is round robin exactly
    const auto kb = connect_kb(o, *model_);
    for (int i = 0; i < 30; ++i) ASSERT_EQ(kb->retrieve(query_near(static_cast<size_t>(i) % kReferences), 5).size(), 5u);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(nodes_[i]->retrievals, 10) << "node " << i;
    const KbSourceStatus st = kb->status();
    ASSERT_EQ(st.servers.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(st.servers[i].url, servers_[i]->url());
        EXPECT_EQ(st.servers[i].chunks, 10u);
        EXPECT_EQ(st.servers[i].state, KbServerState::Up);
        EXPECT_EQ(st.servers[i].bank_version, 1u);
    }
    EXPECT_EQ(st.url, urls()[0] + ", " + urls()[1] + ", " + urls()[2]);
    EXPECT_TRUE(contains(kb->describe(), "knowledge servers " + urls()[0] + ", ")) << kb->describe();
    EXPECT_EQ(st.failovers, 0u);
    EXPECT_TRUE(events_.get().empty());
    // The host cache is shared: a record fetched from one node is not fetched from the next.
    EXPECT_LT(st.records_fetched, 30u * 5u);
}

// ---------------------------------------------------------------- a node dies while generating

struct KillVariant {
    const char* name;
    bool prefetch;
    bool single_round_trip;
};
class KbGrpcFailoverKill : public KbGrpcFailover, public ::testing::WithParamInterface<KillVariant> {};

// The generation of three nodes, one stopped (calls in flight cancelled) in the middle, gives the
// tokens and logits of the generation through one node: every chunk failed over within itself.
TEST_P(KbGrpcFailoverKill, SameTokensAsOneServer) {
    const KillVariant v = GetParam();
    start_nodes(3);
    KbSourceOptions one = options({urls()[0]});
    one.prefetch = v.prefetch;
    one.single_round_trip = v.single_round_trip;
    const Generation base = generate(connect_kb(one, *model_));
    ASSERT_EQ(base.empty_chunks, 0);
    ASSERT_GE(base.chunks, 10);
    ASSERT_NE(base.tokens, without_memories().tokens) << "the memories must change the tokens, or this test proves nothing";

    KbSourceOptions o = options(urls());
    o.prefetch = v.prefetch;
    o.single_round_trip = v.single_round_trip;
    const auto kb = connect_kb(o, *model_);
    const auto t0 = Clock::now();
    const Generation got = generate(kb, [&](int32_t pos) {
        if (pos == 70) servers_[1]->stop(0);
    });
    EXPECT_LT(seconds_since(t0), 20.0) << "no hang";
    EXPECT_EQ(got.empty_chunks, 0) << "the chunk that met the dead node went to another one";
    EXPECT_EQ(got.tokens, base.tokens);
    EXPECT_LE(max_abs_diff(got.logits, base.logits), 1e-6);
    const KbSourceStatus st = kb->status();
    EXPECT_EQ(st.failures, 0u) << st.last_error;
    EXPECT_EQ(st.state, KbSourceState::Connected);
    EXPECT_EQ(st.outages, 0u);
    if (!v.prefetch) {
        // One chunk at a time, round robin: the dead node is first in line for one of the next
        // three chunks, which then fails over; it is never tried again (no probe answers).
        EXPECT_GE(st.failovers, 1u);
        EXPECT_EQ(st.servers[1].state, KbServerState::Down);
        EXPECT_EQ(events_.count(KbEvent::ServerDown), 1u);
    }
    for (const auto& [e, detail] : events_.get()) {
        EXPECT_EQ(e, KbEvent::ServerDown) << detail;
        EXPECT_TRUE(contains(detail, servers_[1]->url())) << detail;
    }
}

INSTANTIATE_TEST_SUITE_P(KbGrpcFailover, KbGrpcFailoverKill,
                         ::testing::Values(KillVariant{"OneRoundTrip", false, true}, KillVariant{"TwoCalls", false, false},
                                           KillVariant{"Prefetch", true, true}),
                         [](const auto& info) { return std::string(info.param.name); });

// A node that dies with the chunk's call in flight: the chunk is asked of the next node and
// answered well within one call deadline.
TEST_F(KbGrpcFailover, NodeDyingInTheMiddleOfACallFailsOverWithinTheChunk) {
    start_nodes(2);
    KbSourceOptions o = options(urls());
    o.prefetch = false;
    const auto kb = connect_kb(o, *model_);
    nodes_[0]->delay_ms = 5000;  // the first chunk goes to node 0 (round robin starts there) and hangs
    const auto t0 = Clock::now();
    auto pending = std::async(std::launch::async, [&] { return kb->retrieve(query_near(6), 5); });
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    servers_[0]->stop(0);
    const auto got = pending.get();
    const double took = seconds_since(t0);
    EXPECT_LT(took, 0.9) << "before the call deadline (1 s)";
    ASSERT_EQ(got.size(), 5u);
    EXPECT_EQ(answering_version(query_near(6), got), 1u);
    EXPECT_EQ(nodes_[1]->retrievals, 1);
    const KbSourceStatus st = kb->status();
    EXPECT_EQ(st.failovers, 1u);
    EXPECT_EQ(st.failures, 0u);
    EXPECT_EQ(st.servers[0].state, KbServerState::Down);
    ASSERT_EQ(events_.count(KbEvent::ServerDown), 1u);
    EXPECT_TRUE(contains(events_.get()[0].second, servers_[0]->url())) << events_.get()[0].second;
}

// A node that never answers costs one call deadline; the chunk's deadline (twice the call's)
// leaves the next node a whole call.
TEST_F(KbGrpcFailover, HungNodeCostsOneDeadlineThenTheNextAnswers) {
    start_nodes(2);
    KbSourceOptions o = options(urls());
    o.prefetch = false;
    o.call_timeout_ms = 300;
    o.backoff_initial_ms = 2000;  // the next chunk surely comes while node 0 backs off
    const auto kb = connect_kb(o, *model_);
    nodes_[0]->delay_ms = 3000;
    const auto t0 = Clock::now();
    ASSERT_EQ(kb->retrieve(query_near(2), 5).size(), 5u);
    const double took = seconds_since(t0);
    EXPECT_GE(took, 0.25);
    EXPECT_LT(took, 0.6) << "one deadline, then an answer";
    ASSERT_EQ(events_.count(KbEvent::ServerDown), 1u);
    EXPECT_TRUE(contains(events_.get()[0].second, "DEADLINE_EXCEEDED")) << events_.get()[0].second;
    // While node 0 backs off, chunks go straight to node 1.
    const auto t1 = Clock::now();
    ASSERT_EQ(kb->retrieve(query_near(3), 5).size(), 5u);
    EXPECT_LT(seconds_since(t1), 0.2);
    nodes_[0]->delay_ms = 0;
}

// ---------------------------------------------------------------- all down, then back

TEST_F(KbGrpcFailover, AllDownIsTheOutagePathThenEachNodeIsUsedAgain) {
    start_nodes(2);
    KbSourceOptions o = options(urls());
    o.prefetch = false;
    const auto kb = connect_kb(o, *model_);
    ASSERT_EQ(kb->retrieve(query_near(1), 5).size(), 5u);
    servers_[0]->stop(0);
    servers_[1]->stop(0);
    auto t0 = Clock::now();
    EXPECT_TRUE(kb->retrieve(query_near(1), 5).empty());
    EXPECT_LT(seconds_since(t0), 2.0) << "within the chunk's deadline (2 x 1 s); refused connections fail at once";
    KbSourceStatus st = kb->status();
    EXPECT_EQ(st.state, KbSourceState::Unavailable);
    EXPECT_EQ(st.failures, 1u);
    EXPECT_EQ(st.outages, 1u);
    auto ev = events_.get();
    ASSERT_EQ(ev.size(), 1u) << "one warning for the outage, none per node";
    EXPECT_EQ(ev[0].first, KbEvent::Outage);
    EXPECT_TRUE(contains(ev[0].second, servers_[0]->url()) && contains(ev[0].second, servers_[1]->url())) << ev[0].second;
    // Further chunks: answered at once, without memories and without another warning.
    for (int i = 0; i < 5; ++i) {
        t0 = Clock::now();
        EXPECT_TRUE(kb->retrieve(query_near(2), 5).empty());
        EXPECT_LT(seconds_since(t0), 0.5);
    }
    EXPECT_EQ(events_.get().size(), 1u);

    // Node 1 back: memories are back (the prober finds it, a chunk confirms it).
    ASSERT_TRUE(servers_[1]->start());
    bool back = false;
    for (int i = 0; i < 200 && !back; ++i) {  // bounded: 10 s
        back = kb->retrieve(query_near(3), 5).size() == 5;
        if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(back) << "no memories 10 s after a node came back";
    ev = events_.get();
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[1].first, KbEvent::Recovered);
    EXPECT_EQ(ev[1].second, servers_[1]->url());
    EXPECT_EQ(kb->status().state, KbSourceState::Connected);
    EXPECT_EQ(kb->status().servers[0].state, KbServerState::Down);

    // Node 0 back: it takes chunks again.
    ASSERT_TRUE(servers_[0]->start());
    const int before = nodes_[0]->retrievals;
    for (int i = 0; i < 200 && nodes_[0]->retrievals == before; ++i) {
        ASSERT_EQ(kb->retrieve(query_near(static_cast<size_t>(i) % kReferences), 5).size(), 5u);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_GT(nodes_[0]->retrievals, before) << "node 0 was not used again within 10 s of coming back";
    EXPECT_EQ(kb->status().servers[0].state, KbServerState::Up);
    EXPECT_EQ(events_.count(KbEvent::ServerUp), 1u);
    EXPECT_EQ(events_.count(KbEvent::Outage), 1u);
}

// Connecting while one node is down: the others serve; the one down is warned about and probed.
TEST_F(KbGrpcFailover, ConnectsWhileANodeIsDownAndPicksItUpLater) {
    start_nodes(2);
    servers_[1]->stop(0);
    KbSourceOptions o = options(urls());
    o.prefetch = false;
    o.connect_timeout_ms = 500;
    const auto kb = connect_kb(o, *model_);
    ASSERT_EQ(events_.count(KbEvent::ServerDown), 1u);
    EXPECT_TRUE(contains(events_.get()[0].second, servers_[1]->url() + ": Info failed")) << events_.get()[0].second;
    for (int i = 0; i < 4; ++i) ASSERT_EQ(kb->retrieve(query_near(static_cast<size_t>(i)), 5).size(), 5u);
    EXPECT_EQ(nodes_[0]->retrievals, 4);
    ASSERT_TRUE(servers_[1]->start());
    for (int i = 0; i < 200 && nodes_[1]->retrievals == 0; ++i) {
        ASSERT_EQ(kb->retrieve(query_near(static_cast<size_t>(i) % kReferences), 5).size(), 5u);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_GT(nodes_[1]->retrievals, 0);
    // Nothing answering at all is still an error when connecting, naming every server.
    servers_[0]->stop(0);
    servers_[1]->stop(0);
    try {
        connect_kb(o, *model_);
        ADD_FAILURE() << "connected to nothing";
    } catch (const Error& e) {
        EXPECT_TRUE(contains(e.what(), servers_[0]->url()) && contains(e.what(), servers_[1]->url())) << e.what();
        EXPECT_TRUE(contains(e.what(), "no answer within 500 ms")) << e.what();
    }
}

}  // namespace
