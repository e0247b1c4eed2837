// BatchScheduler on the default model: batched answers equal the answers alone, a long prompt fed
// in pieces reads what it reads whole, a conversation's next turn prefills only its new tokens,
// a cancelled request frees its slot, a full queue refuses.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "app/chat_cache.hpp"
#include "serve/batch_scheduler.hpp"
#include "serve_fixture.hpp"

namespace mnemo::serve::test {
namespace {

struct Result {
    std::string text;
    FinishReason finish = FinishReason::None;
    Usage usage;
    std::vector<RetrievedReference> references;
    int progress_events = 0;
    std::string error;
    std::string history_text;
};

Result wait_for(Job& job) {
    Result r;
    while (true) {
        std::optional<JobEvent> e = job.channel->pop(std::chrono::seconds(120));
        if (!e) {
            r.error = "no event in 120 s";
            return r;
        }
        if (e->kind == JobEvent::Kind::Progress) ++r.progress_events;
        if (e->kind == JobEvent::Kind::Text) r.text += e->text;
        if (e->kind == JobEvent::Kind::Failed) {
            r.error = e->error;
            return r;
        }
        if (e->kind == JobEvent::Kind::Done) {
            r.finish = e->finish;
            r.usage = e->usage;
            r.references = e->references;
            r.history_text = e->history_text;
            return r;
        }
    }
}

std::shared_ptr<Job> chat_job(const DefaultModel& m, const std::vector<ChatMessage>& messages, int32_t max_tokens = 24) {
    auto job = std::make_shared<Job>();
    const app::RenderedChat r = app::render_chat(m.tmpl, *m.tok, messages);
    job->prompt = r.tokens;
    job->segment_starts = r.turn_starts;
    job->sampling.temperature = 0;  // greedy
    job->stop = m.tmpl.stop_strings;
    job->max_tokens = max_tokens;
    return job;
}

class ServeScheduler : public DefaultModelSuite {
protected:
    Metrics metrics_;
};

TEST_F(ServeScheduler, AnswersFromMemoriesWithReferences) {
    BatchScheduler s(*model_->session, *model_->tok, model_->recorder, {}, metrics_);
    const Question q = held_out_questions(1)[0];
    auto job = chat_job(*model_, {{"user", q.question}});
    ASSERT_TRUE(s.submit(job));
    const Result r = wait_for(*job);
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.text, q.answer);
    EXPECT_EQ(r.finish, FinishReason::Stop);
    EXPECT_EQ(r.usage.prompt_tokens, static_cast<int32_t>(job->prompt.size()));
    ASSERT_FALSE(r.references.empty());
    bool names_entity = false;
    for (const RetrievedReference& ref : r.references) names_entity = names_entity || ref.text.find(q.answer) != std::string::npos;
    EXPECT_TRUE(names_entity) << "no reference read holds the answer '" << q.answer << "'";
}

// Eight questions at once, in one batch, each answer as it is alone (greedy).
TEST_F(ServeScheduler, ConcurrentAnswersEqualAnswersAlone) {
    BatchScheduler s(*model_->session, *model_->tok, model_->recorder, {}, metrics_);
    const std::vector<Question> qs = held_out_questions(8);
    std::vector<std::string> alone;
    for (const Question& q : qs) {
        auto job = chat_job(*model_, {{"system", "Answer briefly."}, {"user", q.question}});
        ASSERT_TRUE(s.submit(job));
        const Result r = wait_for(*job);
        ASSERT_EQ(r.error, "");
        alone.push_back(r.text);
    }
    std::vector<std::shared_ptr<Job>> jobs;
    for (const Question& q : qs) {
        jobs.push_back(chat_job(*model_, {{"user", q.question}}));
        jobs.back()->prompt = chat_job(*model_, {{"system", "Answer briefly."}, {"user", q.question}})->prompt;
        jobs.back()->segment_starts = chat_job(*model_, {{"system", "Answer briefly."}, {"user", q.question}})->segment_starts;
    }
    const uint64_t steps_before = metrics_.decode_steps.load(), rows_before = metrics_.decode_rows.load();
    for (auto& j : jobs) ASSERT_TRUE(s.submit(j));
    int right = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        const Result r = wait_for(*jobs[i]);
        ASSERT_EQ(r.error, "");
        EXPECT_EQ(r.text, alone[i]) << "question " << i << ": " << qs[i].question;
        right += r.text == qs[i].answer;
    }
    EXPECT_GE(right, 6) << "the held-out answers are read from memories: most must be right";
    const double mean_batch = static_cast<double>(metrics_.decode_rows.load() - rows_before) /
                              static_cast<double>(metrics_.decode_steps.load() - steps_before);
    EXPECT_GT(mean_batch, 1.5) << "the eight requests were not decoded together";
}

// A prompt fed in pieces of 8 tokens (ending on memory-chunk boundaries) answers as fed whole.
TEST_F(ServeScheduler, PromptInPiecesReadsWhatItReadsWhole) {
    std::vector<ChatMessage> conversation;
    const std::vector<Question> qs = held_out_questions(6);
    for (size_t i = 0; i + 1 < qs.size(); ++i) {
        conversation.push_back({"user", qs[i].question});
        conversation.push_back({"assistant", qs[i].answer});
    }
    conversation.push_back({"user", qs.back().question});
    Result whole, pieces;
    {
        BatchScheduler s(*model_->session, *model_->tok, model_->recorder, {}, metrics_);
        auto job = chat_job(*model_, conversation);
        ASSERT_GT(job->prompt.size(), 64u) << "the conversation must span several memory chunks";
        ASSERT_TRUE(s.submit(job));
        whole = wait_for(*job);
    }
    {
        SchedulerOptions o;
        o.prefill_chunk = 8;
        BatchScheduler s(*model_->session, *model_->tok, model_->recorder, o, metrics_);
        auto job = chat_job(*model_, conversation);
        ASSERT_TRUE(s.submit(job));
        pieces = wait_for(*job);
    }
    ASSERT_EQ(whole.error, "");
    ASSERT_EQ(pieces.error, "");
    EXPECT_EQ(whole.progress_events, 1);
    EXPECT_GT(pieces.progress_events, 1);
    EXPECT_EQ(pieces.text, whole.text);
    ASSERT_EQ(pieces.references.size(), whole.references.size());
    for (size_t i = 0; i < whole.references.size(); ++i) EXPECT_EQ(pieces.references[i].id, whole.references[i].id) << i;
}

TEST_F(ServeScheduler, NextTurnPrefillsOnlyItsNewTokens) {
    BatchScheduler s(*model_->session, *model_->tok, model_->recorder, {}, metrics_);
    const std::vector<Question> qs = held_out_questions(2);
    std::vector<ChatMessage> conv = {{"user", qs[0].question}};
    auto first = chat_job(*model_, conv);
    ASSERT_TRUE(s.submit(first));
    const Result r1 = wait_for(*first);
    ASSERT_EQ(r1.error, "");
    EXPECT_EQ(r1.usage.cached_tokens, 0);
    // The answer as generated (the HTTP layer renders it so: AnswerHistory).
    conv.push_back({"assistant", r1.history_text});
    conv.push_back({"user", qs[1].question});
    auto second = chat_job(*model_, conv);
    ASSERT_TRUE(s.submit(second));
    const Result r2 = wait_for(*second);
    ASSERT_EQ(r2.error, "");
    // The cache held the first prompt and every answer token but the last one sampled (never fed).
    EXPECT_GE(r2.usage.cached_tokens, r1.usage.prompt_tokens + r1.usage.completion_tokens - 1);
    EXPECT_EQ(r2.text, qs[1].answer);
}

// Cancelled while its long prompt is being prefilled (pieces of 8 tokens): the slot is free at
// the next step, and the rest of the prompt is never run.
TEST_F(ServeScheduler, CancelledRequestFreesItsSlot) {
    SchedulerOptions o;
    o.prefill_chunk = 8;
    BatchScheduler s(*model_->session, *model_->tok, model_->recorder, o, metrics_);
    std::string text;
    for (int i = 0; i < 60; ++i) text += "The birthplace of Quear Mousaim is Thaimubort. ";
    auto job = chat_job(*model_, {{"user", text}});
    ASSERT_GT(job->prompt.size(), 600u);
    const uint64_t prefilled_before = metrics_.prompt_tokens_prefilled.load();
    ASSERT_TRUE(s.submit(job));
    const std::optional<JobEvent> first = job->channel->pop(std::chrono::seconds(30));
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->kind, JobEvent::Kind::Progress);
    job->channel->cancel();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (metrics_.slots_busy.load() != 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(metrics_.slots_busy.load(), 0);
    EXPECT_EQ(metrics_.cancelled.load(), 1u);
    EXPECT_LT(metrics_.prompt_tokens_prefilled.load() - prefilled_before, job->prompt.size() / 2);
}

// With no queue beyond the slots: as many requests as slots are taken, the next is refused
// while they run.
TEST_F(ServeScheduler, FullQueueRefuses) {
    SchedulerOptions o;
    o.max_queue = 0;
    o.prefill_chunk = 1;  // long prompts, fed a token per step: the slots stay busy for seconds
    BatchScheduler s(*model_->session, *model_->tok, model_->recorder, o, metrics_);
    std::string text;
    for (int i = 0; i < 40; ++i) text += "The birthplace of Quear Mousaim is Thaimubort. ";
    std::vector<std::shared_ptr<Job>> jobs;
    for (int32_t i = 0; i < s.slots(); ++i) {
        jobs.push_back(chat_job(*model_, {{"user", text}}));
        EXPECT_TRUE(s.submit(jobs.back())) << i;
    }
    EXPECT_FALSE(s.submit(chat_job(*model_, {{"user", "Hello"}})));
    for (auto& j : jobs) j->channel->cancel();
}

}  // namespace
}  // namespace mnemo::serve::test
