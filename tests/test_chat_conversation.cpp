// Retrieval in a conversation (docs/memories.md, "Retrieval in a conversation"): each user turn
// is a retrieval segment, so no chunk's query mixes two turns, whether a chat feeds its turns one
// by one (app::ChatCache, as `mnemo chat`, `mnemo eval` and mnemo-chat do) or a whole
// conversation at once; and a chat keeps its answers as they were generated, so its cache is
// reused turn after turn instead of re-fed from scratch. On the trained default model, CPU.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "app/chat_cache.hpp"
#include "app/generate.hpp"
#include "default_model_golden.hpp"
#include "mnemo/error.hpp"
#include "mnemo/memory/explicit_memory.hpp"
#include "mnemo/session/sampling.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "model_test_util.hpp"

namespace mnemo {
namespace {

// Notes the text of every chunk query and retrieves nothing.
class QueryLog : public MemorySource {
public:
    bool wants_vector() const override { return false; }
    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& q, int32_t) override {
        queries.push_back(*q.tokens);
        return {};
    }
    std::string describe() const override { return "query log"; }
    std::vector<std::vector<int32_t>> queries;
};

struct Chat {
    Chat() : tok(load_tokenizer(test::default_model_path())), tmpl(detect_chat_template(test::default_model_path(), nullptr)) {
        session = test::open_model(test::default_model_path(), /*n_ctx=*/512);
        log = std::make_shared<QueryLog>();
        session->set_memory_source(log);
    }
    std::unique_ptr<Tokenizer> tok;
    ChatTemplate tmpl;
    std::unique_ptr<Session> session;
    std::shared_ptr<QueryLog> log;
};

const std::vector<std::string> kQuestions = {"Where was Quear Mousaim born?", "What colour is the Dreachioth telescope?",
                                             "When was Higi founded?"};

// A greedy chat of kQuestions through a ChatCache; each answer is kept in the history as
// `keep` says (the history text, or the displayed text as mnemo chat kept it before).
std::vector<ChatMessage> chat(Chat& c, app::ChatCache& cache, bool keep_history_text) {
    std::vector<ChatMessage> messages;
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    Sampler sampler(greedy);
    for (const std::string& q : kQuestions) {
        messages.push_back({"user", q});
        const float* logits = cache.sync(app::render_chat(c.tmpl, *c.tok, messages));
        app::GenerateRequest req(*c.session, *c.tok, sampler, cache.fed(), nullptr);
        req.first_logits = logits;
        req.stop_strings = c.tmpl.stop_strings;
        req.max_tokens = 12;
        const app::GenerateResult r = app::generate(req);
        EXPECT_FALSE(r.text.empty()) << q;
        messages.push_back({"assistant", keep_history_text ? r.history_text : r.text});
    }
    return messages;
}

TEST(ChatTurns, EachUserTurnAfterTheFirstStartsWhereTheAnswerBeforeItEnded) {
    Chat c;
    const std::vector<ChatMessage> m = {{"user", kQuestions[0]}, {"assistant", " Kaimekim"}, {"user", kQuestions[1]},
                                        {"assistant", " red"}, {"user", kQuestions[2]}};
    std::vector<int32_t> starts;
    const std::vector<int32_t> ids = c.tmpl.render_tokens(*c.tok, m, starts);
    EXPECT_EQ(ids, c.tmpl.render_tokens(*c.tok, m));
    ASSERT_EQ(starts.size(), 2u);
    const int32_t im_end = *c.tok->token_id("<|im_end|>");
    for (int32_t s : starts) {
        EXPECT_EQ(ids[static_cast<size_t>(s)], im_end) << "a turn starts at the end-of-turn marker the chat feeds with it";
        EXPECT_NE(ids[static_cast<size_t>(s) - 1], im_end);
    }
}

TEST(ChatTurns, PromptChunksRestartAtEverySegment) {
    Chat c;
    const std::vector<int32_t> prompt(100, 300);
    c.session->append(0, prompt);
    ASSERT_EQ(c.log->queries.size(), 2u);
    EXPECT_EQ(c.log->queries[0].size(), 64u);
    EXPECT_EQ(c.log->queries[1].size(), 36u);
    c.session->reset(0);
    c.log->queries.clear();
    c.session->append(0, prompt, false, {30});
    ASSERT_EQ(c.log->queries.size(), 3u) << "chunks [0,30) [30,94) [94,100)";
    EXPECT_EQ(c.log->queries[0].size(), 30u);
    EXPECT_EQ(c.log->queries[1].size(), 64u);
    EXPECT_EQ(c.log->queries[2].size(), 6u);
}

TEST(ChatTurns, SegmentStartsMustBeIncreasingOffsetsIntoThePrompt) {
    Chat c;
    const std::vector<int32_t> prompt(10, 300);
    for (const std::vector<int32_t>& bad : {std::vector<int32_t>{10}, {-1}, {5, 5}, {6, 3}}) {
        c.session->reset(0);
        EXPECT_THROW(c.session->append(0, prompt, false, bad), Error);
        EXPECT_EQ(c.session->seq_length(0), 0) << "a refused prompt feeds nothing";
    }
}

TEST(ChatCache, AChatReusesItsCacheTurnAfterTurn) {
    Chat c;
    app::ChatCache cache(*c.session);
    chat(c, cache, /*keep_history_text=*/true);
    EXPECT_EQ(cache.restarts(), 0) << "the past turns must render as they were fed";
    // What mnemo chat kept before: the displayed text, whose first piece lost its space; the
    // next rendering tokenizes differently ("K aim" for " Kaim") and the chat starts over.
    Chat old;
    app::ChatCache old_cache(*old.session);
    chat(old, old_cache, /*keep_history_text=*/false);
    EXPECT_EQ(old_cache.restarts(), 2);
}

TEST(ChatCache, AConversationFedAtOnceRetrievesItsLastTurnAsTurnByTurn) {
    Chat c;
    app::ChatCache cache(*c.session);
    std::vector<ChatMessage> messages = chat(c, cache, true);
    messages.pop_back();  // up to the last question
    const std::vector<std::vector<int32_t>> turn_by_turn = c.log->queries;
    ASSERT_EQ(turn_by_turn.size(), kQuestions.size()) << "one chunk per turn, answers keep their turn's memories";

    Chat once;
    app::ChatCache fresh(*once.session);
    fresh.sync(app::render_chat(once.tmpl, *once.tok, messages));
    ASSERT_EQ(once.log->queries.size(), kQuestions.size()) << "one chunk per turn: no chunk spans two turns";
    EXPECT_EQ(once.log->queries.back(), turn_by_turn.back());
    // Without the segments the 64-token chunks mix turns.
    Chat plain;
    plain.session->append(0, app::render_chat(plain.tmpl, *plain.tok, messages).tokens);
    EXPECT_NE(plain.log->queries.back(), turn_by_turn.back());
}

}  // namespace
}  // namespace mnemo
