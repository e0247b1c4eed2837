// A request's work as the batch scheduler sees it (Job), and the channel its results come back
// through (JobChannel): the scheduler's thread pushes events, the HTTP thread that owns the
// request pops them (and writes them to the client as they come, when streaming). Cancelling the
// channel (the client went away) frees the request's slot at the scheduler's next step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mnemo/memory/explicit_memory.hpp"
#include "mnemo/session/sampling.hpp"
#include "serve/token_step.hpp"

namespace mnemo::serve {

struct Usage {
    int32_t prompt_tokens = 0;
    int32_t cached_tokens = 0;      // of prompt_tokens, those already in the slot's cache (not prefilled)
    int32_t completion_tokens = 0;
};

// llama-server's names, so tools that read its timings read these.
struct Timings {
    int32_t prompt_n = 0;           // tokens prefilled (cached ones excluded)
    double prompt_ms = 0;
    int32_t predicted_n = 0;
    double predicted_ms = 0;
    double queued_ms = 0;           // waiting for a free slot
};

struct JobEvent {
    enum class Kind { Progress, Text, Done, Failed };
    Kind kind = Kind::Text;
    // Progress: prompt tokens prefilled so far of the total to prefill.
    int32_t prefilled = 0, to_prefill = 0;
    // Text: what one token released, and its log-probability when asked.
    std::string text;
    std::optional<TokenLogprob> logprob;
    // Done.
    FinishReason finish = FinishReason::None;
    Usage usage;
    Timings timings;
    std::vector<RetrievedReference> references;    // the memories the answer's chunks read
    std::vector<std::vector<float>> embeddings;     // an embedding job's vectors
    std::string history_text;                       // the answer as it continues a conversation
    // Failed: the status and message of the error reply.
    int status = 500;
    std::string error;
};

class JobChannel {
public:
    void push(JobEvent e) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            events_.push_back(std::move(e));
        }
        cv_.notify_one();
    }
    // The next event, or nullopt after `wait` without one.
    template <class Duration>
    std::optional<JobEvent> pop(Duration wait) {
        std::unique_lock<std::mutex> lock(mu_);
        if (!cv_.wait_for(lock, wait, [&] { return !events_.empty(); })) return std::nullopt;
        JobEvent e = std::move(events_.front());
        events_.pop_front();
        return e;
    }
    void cancel() { cancelled_.store(true); }
    bool cancelled() const { return cancelled_.load(); }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<JobEvent> events_;
    std::atomic<bool> cancelled_{false};
};

struct Job {
    enum class Kind { Generate, Embed };
    Kind kind = Kind::Generate;
    // Generate: the whole prompt (the slot feeds only what its cache lacks) and where each
    // retrieval segment (a conversation's turn) begins in it (Session::append).
    std::vector<int32_t> prompt;
    std::vector<int32_t> segment_starts;
    SamplingParams sampling;
    std::vector<std::string> stop;
    int32_t max_tokens = -1;
    int32_t top_logprobs = -1;
    bool ignore_eos = false;
    // Grounded (app/grounding.hpp): the answer quotes the references its prompt read, and not the
    // words of `question` (the last user message, or the prompt).
    bool grounded = false;
    std::string question;
    // Embed: the texts, tokenized as references are.
    std::vector<std::vector<int32_t>> texts;

    std::shared_ptr<JobChannel> channel = std::make_shared<JobChannel>();
    std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now();
};

}  // namespace mnemo::serve
