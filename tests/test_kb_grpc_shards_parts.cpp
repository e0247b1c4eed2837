// The pieces of a sharded index that need no bank folder and no running node
// (server/src/serve/shard_merge.hpp, shard_peers.hpp): `--shard I/N`, the peers' URLs and count,
// how deep a shard ranks, and a peer's reply checked before it is merged: a wrong shard, count,
// depth, id, order or score is refused with what is wrong.
#include <gtest/gtest.h>

#include "fixtures/kb_serve_harness.hpp"
#include "serve/shard_merge.hpp"
#include "serve/shard_peers.hpp"

namespace {

using namespace mnemo::kb;
namespace v1 = mnemo::kb::v1;

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

TEST(KbShardParts, ShardSpecIsIOfN) {
    const ShardSpec s = parse_shard_spec("2/3");
    EXPECT_EQ(s.shard, 2u);
    EXPECT_EQ(s.shards, 3u);
    EXPECT_TRUE(s.sharded());
    EXPECT_FALSE(parse_shard_spec("0/1").sharded());
    for (const char* bad : {"3/3", "1/0", "/3", "1/", "a/3", "1/b", "-1/3", "1/3/4", "13", "0/99999", "0/2000"})
        EXPECT_NE(error_of([&] { parse_shard_spec(bad); }).find("expected I/N"), std::string::npos) << bad;
}

TEST(KbShardParts, DepthIsKOrTheFusionDepth) {
    EXPECT_EQ(shard_depth(7, true, false), 7u);
    EXPECT_EQ(shard_depth(7, false, true), 7u);
    EXPECT_EQ(shard_depth(7, true, true), 100u);
    EXPECT_EQ(shard_depth(150, true, true), 150u);
    EXPECT_EQ(max_shard_depth(64), 100u);
    EXPECT_EQ(max_shard_depth(500), 500u);
}

TEST(KbShardParts, PeersAreCheckedAtStart) {
    ShardPeerOptions o;
    o.urls = {"grpc://127.0.0.1:7001"};
    EXPECT_NE(error_of([&] { ShardPeers({0, 3}, o); }).find("needs 2 --shard-peer"), std::string::npos);
    EXPECT_NE(error_of([&] { ShardPeers({0, 1}, o); }).find("not sharded"), std::string::npos);
    for (const auto& [url, needle] : std::vector<std::pair<std::string, std::string>>{
             {"http://127.0.0.1:7001", "expected grpcs://"},
             {"grpc://10.1.2.3:7001", "loopback address only"},
             {"grpcs://host", "HOST:PORT"},
             {"grpcs://host:0", "HOST:PORT"},
             {"grpcs://host:70000", "HOST:PORT"}}) {
        o.urls = {url};
        EXPECT_NE(error_of([&] { ShardPeers({1, 2}, o); }).find(needle), std::string::npos) << url;
    }
    o.urls = {"grpcs://node-a.example:7443"};
    EXPECT_EQ(error_of([&] { ShardPeers({1, 2}, o); }), "");
    o.urls = {"grpc://127.0.0.1:7001", "grpc://[::1]:7003"};
    ShardPeers peers({1, 3}, o);
    EXPECT_EQ(peers.expected(0).shard, 0u);
    EXPECT_EQ(peers.expected(1).shard, 2u) << "this node's own shard is left out of the list";
}

TEST(KbShardParts, TheShardScopeIsReadPlusShardRequests) {
    const std::string text = "r read sha256:" + std::string(64, 'a') + "\n" + "n shard sha256:" + std::string(64, 'b') + "\n" + "a admin sha256:" +
                             std::string(64, 'c') + "\n";
    const auto table = TokenTable::parse(text, "tokens");
    ASSERT_EQ(table->size(), 3u);
    const TokenEntry& reader = table->entry(0);
    const TokenEntry& node = table->entry(1);
    const TokenEntry& admin = table->entry(2);
    EXPECT_EQ(node.scope, TokenScope::Shard);
    EXPECT_STREQ(scope_name(node.scope), "shard");
    EXPECT_FALSE(reader.allows(TokenScope::Shard));
    EXPECT_TRUE(node.allows(TokenScope::Shard));
    EXPECT_TRUE(node.allows(TokenScope::Read)) << "the service narrows it to Info, Health and shard requests";
    EXPECT_FALSE(node.allows(TokenScope::Admin));
    EXPECT_TRUE(admin.allows(TokenScope::Shard));
    EXPECT_NE(error_of([] { TokenTable::parse("x write sha256:" + std::string(64, 'a') + "\n", "tokens"); }).find("not 'read', 'admin' or 'shard'"),
              std::string::npos);
}

v1::ShardReply reply_of(uint32_t shard, uint32_t shards, std::vector<uint32_t> ids, std::vector<double> scores) {
    v1::ShardReply r;
    r.set_shard(shard);
    r.set_shards(shards);
    for (uint32_t id : ids) r.mutable_bm25()->add_ids(id);
    for (double s : scores) r.mutable_bm25()->add_scores(s);
    return r;
}

TEST(KbShardParts, APeersReplyIsCheckedBeforeItIsMerged) {
    auto bank = serve_test::make_bank(1, 12);
    bank->retire_documents({"doc2"});  // records 4 and 5
    const ShardSpec want{1, 3};
    ShardRankings out;
    EXPECT_EQ(read_shard_reply(reply_of(1, 3, {7, 1, 10}, {3.0, 2.0, 2.0}), want, 5, *bank, &out), "");
    EXPECT_EQ(out.bm25.size(), 3u);
    const std::vector<std::pair<v1::ShardReply, std::string>> bad = {
        {reply_of(1, 2, {1}, {1.0}), "not one of 3 shards"},
        {reply_of(2, 3, {2}, {1.0}), "expected shard 1/3"},
        {reply_of(1, 3, {1, 7}, {1.0}), "2 ids but 1 scores"},
        {reply_of(1, 3, {1, 7, 10, 13, 16, 19}, {6, 5, 4, 3, 2, 1}), "more than the depth 5"},
        {reply_of(1, 3, {13}, {1.0}), "not a record of the bank"},
        {reply_of(1, 3, {2}, {1.0}), "not in shard 1/3"},
        {reply_of(1, 3, {4}, {1.0}), "retired"},
        {reply_of(1, 3, {1}, {std::nan("")}), "non-finite"},
        {reply_of(1, 3, {1, 1}, {2.0, 1.0}), "listed twice"},
        {reply_of(1, 3, {1, 7}, {1.0, 2.0}), "out of order"},
        {reply_of(1, 3, {7, 1}, {1.0, 1.0}), "out of order"},
    };
    for (const auto& [reply, needle] : bad) {
        const std::string problem = read_shard_reply(reply, want, 5, *bank, &out);
        EXPECT_NE(problem.find(needle), std::string::npos) << "'" << problem << "' lacks '" << needle << "'";
    }
}

TEST(KbShardParts, MergingKeepsTheGlobalOrderAndCuts) {
    // Two shards' BM25 lists; equal scores go to the lower id, whichever shard holds it.
    ShardRankings a, b;
    a.bm25 = {{4, 9.0}, {2, 5.0}, {0, 1.0}};
    b.bm25 = {{3, 9.0}, {1, 5.0}, {5, 4.0}};
    const std::vector<BankHit> top = merge_shard_rankings({a, b}, 4, false, true, 0, 0);
    ASSERT_EQ(top.size(), 4u);
    EXPECT_EQ(top[0].id, 3u);
    EXPECT_EQ(top[1].id, 4u);
    EXPECT_EQ(top[2].id, 1u);
    EXPECT_EQ(top[3].id, 2u);
    EXPECT_EQ(merge_shard_rankings({a, b}, 6, false, true, 0.5, 0).size(), 4u) << "the relative cut: >= 4.5";
    EXPECT_EQ(merge_shard_rankings({a, b}, 6, false, true, 0.5, 5).size(), 5u) << "the cut's floor: the best five";
}

}  // namespace
