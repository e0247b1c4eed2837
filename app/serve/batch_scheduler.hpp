// Continuous batching over one Session: `parallel` slots, each one of the session's sequences
// with its own KV range. One thread owns the session and loops:
//   1. admit queued requests into free slots (the slot whose cache already holds the longest
//      prefix of the prompt: the next turn of a conversation prefills only its new tokens);
//   2. one decode step for every slot that is generating, all in one batch (Session::decode),
//      with prompt tokens of prefilling slots in the same batch, up to `prefill_chunk` of them
//      (first come, first served): one run of the graph streams the weights once for both;
//   3. a model that reads explicit memories instead feeds one piece of at most `prefill_chunk`
//      prompt tokens for one slot in a run of its own (Session::append: prompts retrieve per
//      chunk, generated text by another schedule).
// Either way a long prompt arriving delays the others' next token by one piece, not by the
// whole prompt.
// Requests join and leave the batch at token boundaries; a cancelled channel (the client went
// away) frees its slot at the next step. Prompt pieces end on explicit-memory chunk boundaries
// (a model that reads memories retrieves per chunk_length chunk, restarting at each segment
// start), so a prompt fed in pieces reads exactly the memories it reads fed whole.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "serve/job.hpp"
#include "serve/metrics.hpp"
#include "mnemo/memory/retrieval_recorder.hpp"
#include "mnemo/session/session.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::serve {

struct SchedulerOptions {
    size_t max_queue = 64;        // requests waiting for a slot beyond the free ones; more are refused (submit() false)
    int32_t prefill_chunk = 256;  // prompt tokens per prefill piece
};

class BatchScheduler {
public:
    // The session's sequences are the slots (session.n_seq()). `recorder` (may be null) is the
    // session's memory source when it reads explicit memories: each answer's references.
    BatchScheduler(Session& session, const Tokenizer& tokenizer, std::shared_ptr<RetrievalRecorder> recorder,
                   SchedulerOptions options, Metrics& metrics);
    ~BatchScheduler();  // stops the loop; queued and running jobs get a Failed event
    BatchScheduler(const BatchScheduler&) = delete;
    BatchScheduler& operator=(const BatchScheduler&) = delete;

    // Queue a job. False when the queue is full (the caller answers 429).
    bool submit(std::shared_ptr<Job> job);
    // Queue length and busy slots (also in the metrics).
    size_t queued() const;
    int32_t slots() const { return static_cast<int32_t>(slots_.size()); }
    size_t max_queue() const { return options_.max_queue; }

private:
    struct Slot;
    void loop();
    void admit(std::deque<std::shared_ptr<Job>>& incoming);
    void start(Slot& slot, std::shared_ptr<Job> job);
    void run_embedding(Job& job);
    void decode_step();
    void prefill_step();
    // The slots prefilling, in the order they were admitted. Prompts are fed first come, first
    // served (not round robin), so the first prompt's first token is not delayed by every prompt
    // that arrived after it; generating slots still get a token every step.
    std::vector<Slot*> prefilling() const;
    // After a prompt piece of `slot` ran: the progress event, and when it was the prompt's last
    // piece, the first token from its logits.
    void prefilled(Slot& slot, const float* last_logits);
    // The end of the next prompt piece of `slot` after `pos` (see above).
    size_t piece_end(const Slot& slot, size_t pos) const;
    // Sample from `logits` for the slot; emits text and finishes the job when it ends.
    void take_token(Slot& slot, const float* logits);
    void finish(Slot& slot, FinishReason reason);
    void fail(Slot& slot, int status, const std::string& message);
    void release(Slot& slot);
    void drop_cancelled();
    void copy_memory_stats();

    Session& session_;
    const Tokenizer& tok_;
    std::shared_ptr<RetrievalRecorder> recorder_;
    SchedulerOptions options_;
    Metrics& metrics_;
    int32_t vocab_ = 0;
    int32_t chunk_length_ = 1;   // explicit-memory chunk (1: no memories, any piece end will do)

    std::vector<std::unique_ptr<Slot>> slots_;
    // A decode step's batch, the slot of each row that wants logits, and the prompt pieces in it:
    // kept between steps so that a step allocates nothing once they have grown.
    struct Piece {
        Slot* slot;
        size_t end;  // the piece ends here in the slot's pending prompt
    };
    std::vector<BatchToken> step_batch_;
    std::vector<Slot*> step_rows_;
    std::vector<Piece> step_pieces_;
    uint64_t clock_ = 0;         // for least-recently-used slot choice

    mutable std::mutex mu_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> queue_;
    std::atomic<int32_t> busy_{0};  // slots serving a job (written by the loop, read by submit)
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace mnemo::serve
