#include "serve/batch_scheduler.hpp"

#include <algorithm>
#include <cmath>

#include "app/generate.hpp"
#include "app/grounding.hpp"
#include "mnemo/error.hpp"
#include "mnemo/kb/kb_source.hpp"

namespace mnemo::serve {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

struct BatchScheduler::Slot {
    int32_t seq = 0;
    std::vector<int32_t> fed;          // tokens in this sequence's cache, position by position
    std::shared_ptr<Job> job;          // null: free
    enum class Phase { Idle, Prefill, Generate } phase = Phase::Idle;
    // Prefill: the prompt's tokens the cache lacks, how many are fed, and where retrieval
    // segments begin in them.
    std::vector<int32_t> pending;
    std::vector<int32_t> pending_segments;
    size_t pending_pos = 0;
    std::unique_ptr<TokenStep> step;
    int32_t next_token = -1;           // Generate: the token to feed in the next decode step
    Usage usage;
    Clock::time_point started, first_token;
    uint64_t last_used = 0;
    uint64_t admitted = 0;             // admission order: prompts are prefilled first come, first served
};

BatchScheduler::BatchScheduler(Session& session, const Tokenizer& tokenizer, std::shared_ptr<RetrievalRecorder> recorder,
                               SchedulerOptions options, Metrics& metrics)
    : session_(session), tok_(tokenizer), recorder_(std::move(recorder)), options_(options), metrics_(metrics) {
    if (options_.prefill_chunk < 1) throw Error("the prefill piece must hold at least 1 token");
    vocab_ = app::sampled_vocab(session, tokenizer);
    if (vocab_ <= 0) throw Error("the tokenizer has an empty vocabulary");
    if (session.reads_memories()) chunk_length_ = std::max(1, session.memory_spec().chunk_length);
    for (int32_t s = 0; s < session.n_seq(); ++s) {
        slots_.push_back(std::make_unique<Slot>());
        slots_.back()->seq = s;
        session.reset(s);
    }
    metrics_.slots_total = static_cast<int64_t>(slots_.size());
    thread_ = std::thread([this] { loop(); });
}

BatchScheduler::~BatchScheduler() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
    JobEvent e;
    e.kind = JobEvent::Kind::Failed;
    e.status = 503;
    e.error = "the server is shutting down";
    for (auto& job : queue_) job->channel->push(e);
    for (auto& slot : slots_)
        if (slot->job) slot->job->channel->push(e);
}

bool BatchScheduler::submit(std::shared_ptr<Job> job) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        // A job that a free slot will take at once does not count against the queue's limit.
        const size_t free_slots = slots_.size() - static_cast<size_t>(std::max(0, busy_.load()));
        if (stop_ || queue_.size() >= options_.max_queue + free_slots) return false;
        queue_.push_back(std::move(job));
        metrics_.queued.store(static_cast<int64_t>(queue_.size()));
    }
    wake_.notify_all();
    return true;
}

size_t BatchScheduler::queued() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.size();
}

void BatchScheduler::loop() {
    while (true) {
        std::deque<std::shared_ptr<Job>> incoming;
        {
            std::unique_lock<std::mutex> lock(mu_);
            const auto busy = [&] {
                return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->job != nullptr; });
            };
            wake_.wait(lock, [&] { return stop_ || !queue_.empty() || busy(); });
            if (stop_) return;
            // As many jobs as there are free slots (embeddings need none: they run at once).
            size_t free_slots = static_cast<size_t>(
                std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return s->job == nullptr; }));
            for (auto it = queue_.begin(); it != queue_.end();) {
                if ((*it)->kind == Job::Kind::Embed || (*it)->channel->cancelled()) {
                    incoming.push_back(std::move(*it));
                    it = queue_.erase(it);
                } else if (free_slots > 0) {
                    --free_slots;
                    incoming.push_back(std::move(*it));
                    it = queue_.erase(it);
                } else {
                    ++it;
                }
            }
            metrics_.queued.store(static_cast<int64_t>(queue_.size()));
        }
        try {
            admit(incoming);
            drop_cancelled();
            decode_step();
            prefill_step();
            copy_memory_stats();
        } catch (const std::exception& e) {
            // Not expected (each step answers its own failures); if it happens, every request in
            // flight gets the error instead of a server whose loop is gone.
            for (auto& s : slots_)
                if (s->job) fail(*s, 500, std::string("internal error in the batch scheduler: ") + e.what());
        }
    }
}

void BatchScheduler::admit(std::deque<std::shared_ptr<Job>>& incoming) {
    for (auto& job : incoming) {
        if (job->channel->cancelled()) {
            metrics_.cancelled.fetch_add(1);
            continue;
        }
        if (job->kind == Job::Kind::Embed) {
            run_embedding(*job);
            continue;
        }
        // The free slot whose cache holds the longest prefix of this prompt; else the one used
        // least recently (its cache is the least likely to be continued).
        Slot* best = nullptr;
        size_t best_reuse = 0;
        for (auto& s : slots_) {
            if (s->job) continue;
            const std::vector<int32_t>& p = job->prompt;
            size_t reuse = 0;
            if (!s->fed.empty() && s->fed.size() < p.size() && std::equal(s->fed.begin(), s->fed.end(), p.begin()))
                reuse = s->fed.size();
            if (best == nullptr || reuse > best_reuse || (reuse == best_reuse && s->last_used < best->last_used)) {
                best = s.get();
                best_reuse = reuse;
            }
        }
        if (best == nullptr) throw Error("internal: a job was admitted without a free slot");
        start(*best, std::move(job));
    }
}

void BatchScheduler::start(Slot& slot, std::shared_ptr<Job> job) {
    const std::vector<int32_t>& p = job->prompt;
    size_t common = 0;
    if (slot.fed.size() < p.size() && std::equal(slot.fed.begin(), slot.fed.end(), p.begin())) common = slot.fed.size();
    if (common == 0 && !slot.fed.empty()) {
        session_.reset(slot.seq);
        slot.fed.clear();
    }
    slot.job = std::move(job);
    slot.phase = Slot::Phase::Prefill;
    slot.pending.assign(p.begin() + static_cast<std::ptrdiff_t>(common), p.end());
    slot.pending_segments.clear();
    for (int32_t s : slot.job->segment_starts)
        if (static_cast<size_t>(s) > common) slot.pending_segments.push_back(s - static_cast<int32_t>(common));
    slot.pending_pos = 0;
    slot.step = std::make_unique<TokenStep>(tok_, slot.job->sampling, slot.job->stop, slot.job->max_tokens,
                                            slot.job->top_logprobs, vocab_, slot.job->ignore_eos);
    slot.usage = Usage{};
    slot.usage.prompt_tokens = static_cast<int32_t>(p.size());
    slot.usage.cached_tokens = static_cast<int32_t>(common);
    slot.started = Clock::now();
    slot.last_used = ++clock_;
    slot.admitted = slot.last_used;
    if (recorder_) (void)recorder_->take(slot.seq);  // what an earlier request left unread
    busy_.fetch_add(1);
    metrics_.slots_busy.fetch_add(1);
}

void BatchScheduler::run_embedding(Job& job) {
    JobEvent e;
    try {
        e.embeddings = session_.retrieval_vectors(job.texts);
        e.kind = JobEvent::Kind::Done;
        for (const auto& t : job.texts) e.usage.prompt_tokens += static_cast<int32_t>(t.size());
    } catch (const std::exception& ex) {
        e.kind = JobEvent::Kind::Failed;
        e.status = 500;
        e.error = std::string("computing the embeddings failed: ") + ex.what();
    }
    job.channel->push(std::move(e));
}

void BatchScheduler::drop_cancelled() {
    for (auto& s : slots_)
        if (s->job && s->job->channel->cancelled()) {
            metrics_.cancelled.fetch_add(1);
            release(*s);
        }
}

void BatchScheduler::decode_step() {
    std::vector<BatchToken>& batch = step_batch_;
    std::vector<Slot*>& rows = step_rows_;  // the slot of each row that wants logits, in row order
    std::vector<Piece>& pieces = step_pieces_;
    batch.clear();
    rows.clear();
    pieces.clear();
    for (auto& s : slots_)
        if (s->job && s->phase == Slot::Phase::Generate) {
            batch.push_back({s->next_token, static_cast<int32_t>(s->fed.size()), s->seq, true});
            rows.push_back(s.get());
        }
    const size_t generating = rows.size();
    // A model without explicit memories takes prompt tokens in the same batch (one graph run
    // streams the weights once for both); a prompt's last token wants logits.
    if (chunk_length_ <= 1 && !slots_.empty()) {
        size_t budget = std::min(static_cast<size_t>(options_.prefill_chunk), static_cast<size_t>(session_.n_ubatch()) - batch.size());
        for (Slot* sp : prefilling()) {
            if (budget == 0) break;
            Slot& s = *sp;
            const size_t end = std::min(s.pending.size(), s.pending_pos + budget);
            for (size_t i = s.pending_pos; i < end; ++i) {
                const bool last = i + 1 == s.pending.size();
                batch.push_back({s.pending[i], static_cast<int32_t>(s.fed.size() + (i - s.pending_pos)), s.seq, last});
                if (last) rows.push_back(&s);
            }
            budget -= end - s.pending_pos;
            pieces.push_back({&s, end});
        }
    }
    if (batch.empty()) return;
    const float* logits = nullptr;
    try {
        logits = session_.decode(batch).data();
    } catch (const std::exception& e) {
        for (auto& s : slots_)
            if (s->job && (s->phase == Slot::Phase::Generate || std::any_of(pieces.begin(), pieces.end(), [&](const Piece& p) { return p.slot == s.get(); })))
                fail(*s, 500, std::string("decoding failed: ") + e.what());
        return;
    }
    if (generating > 0) {
        metrics_.decode_steps.fetch_add(1);
        metrics_.decode_rows.fetch_add(generating);
    }
    const size_t vocab = static_cast<size_t>(session_.vocab_size());
    for (size_t i = 0; i < generating; ++i) {
        rows[i]->fed.push_back(rows[i]->next_token);
        take_token(*rows[i], logits + i * vocab);
    }
    size_t row = generating;
    for (const Piece& p : pieces) {
        Slot& s = *p.slot;
        s.fed.insert(s.fed.end(), s.pending.begin() + static_cast<std::ptrdiff_t>(s.pending_pos),
                     s.pending.begin() + static_cast<std::ptrdiff_t>(p.end));
        metrics_.prompt_tokens_prefilled.fetch_add(p.end - s.pending_pos);
        s.pending_pos = p.end;
        prefilled(s, p.end == s.pending.size() ? logits + (row++) * vocab : nullptr);
    }
}

void BatchScheduler::prefilled(Slot& slot, const float* last_logits) {
    JobEvent progress;
    progress.kind = JobEvent::Kind::Progress;
    progress.prefilled = static_cast<int32_t>(slot.pending_pos);
    progress.to_prefill = static_cast<int32_t>(slot.pending.size());
    slot.job->channel->push(std::move(progress));
    if (last_logits != nullptr) {
        slot.first_token = Clock::now();
        slot.phase = Slot::Phase::Generate;
        if (slot.job->grounded && recorder_) {  // the references the whole prompt read, before its answer
            auto grounding = std::make_unique<app::AnswerGrounding>(tok_, vocab_, slot.job->stop);
            grounding->set_references(app::reference_texts(recorder_->peek(slot.seq)), slot.job->question);
            slot.step->ground(std::move(grounding));
        }
        take_token(slot, last_logits);
    }
}

std::vector<BatchScheduler::Slot*> BatchScheduler::prefilling() const {
    std::vector<Slot*> out;
    for (const auto& s : slots_)
        if (s->job && s->phase == Slot::Phase::Prefill) out.push_back(s.get());
    std::sort(out.begin(), out.end(), [](const Slot* a, const Slot* b) { return a->admitted < b->admitted; });
    return out;
}

size_t BatchScheduler::piece_end(const Slot& slot, size_t pos) const {
    const size_t n = slot.pending.size();
    const size_t limit = std::min(n, pos + static_cast<size_t>(options_.prefill_chunk));
    if (chunk_length_ <= 1) return limit;
    // Chunk boundaries: every segment start s (and 0), then s + k * chunk_length inside it.
    size_t best = 0, first_after = n;
    size_t seg_begin = 0;
    for (size_t i = 0; i <= slot.pending_segments.size(); ++i) {
        const size_t seg_end = i < slot.pending_segments.size() ? static_cast<size_t>(slot.pending_segments[i]) : n;
        for (size_t b = seg_begin; b < seg_end; b += static_cast<size_t>(chunk_length_)) {
            if (b > pos && b <= limit) best = std::max(best, b);
            if (b > pos) first_after = std::min(first_after, b);
        }
        seg_begin = seg_end;
    }
    if (limit == n) return n;
    if (best > pos) return best;
    return first_after;  // one chunk longer than a piece: the chunk whole
}

void BatchScheduler::prefill_step() {
    if (chunk_length_ <= 1) return;  // decode_step took the prompt tokens into its batch
    const std::vector<Slot*> waiting = prefilling();
    if (waiting.empty()) return;
    Slot* slot = waiting.front();
    const size_t pos = slot->pending_pos, end = piece_end(*slot, pos);
    const std::vector<int32_t> piece(slot->pending.begin() + static_cast<std::ptrdiff_t>(pos),
                                     slot->pending.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<int32_t> segments;
    for (int32_t s : slot->pending_segments)
        if (static_cast<size_t>(s) > pos && static_cast<size_t>(s) < end) segments.push_back(s - static_cast<int32_t>(pos));
    const float* logits = nullptr;
    try {
        logits = session_.append(slot->seq, piece, /*all_logits=*/false, segments).data();
    } catch (const std::exception& e) {
        session_.reset(slot->seq);
        slot->fed.clear();
        fail(*slot, 500, std::string("processing the prompt failed: ") + e.what());
        return;
    }
    slot->fed.insert(slot->fed.end(), piece.begin(), piece.end());
    slot->pending_pos = end;
    metrics_.prompt_tokens_prefilled.fetch_add(piece.size());
    prefilled(*slot, end == slot->pending.size() ? logits : nullptr);
}

void BatchScheduler::take_token(Slot& slot, const float* logits) {
    StepResult r;
    try {
        r = slot.step->step(logits, slot.fed, static_cast<int32_t>(slot.fed.size()) < session_.n_ctx());
    } catch (const NonFiniteLogits& e) {
        fail(slot, 500, "the model produced NaN/Inf logits at position " + std::to_string(slot.fed.size()) +
                            ": its weights or activations are not finite (the logit of token " + std::to_string(e.token) + ")");
        return;
    }
    if (!r.text.empty() || r.logprob) {
        JobEvent e;
        e.kind = JobEvent::Kind::Text;
        e.text = std::move(r.text);
        e.logprob = std::move(r.logprob);
        slot.job->channel->push(std::move(e));
    }
    if (r.finish != FinishReason::None) {
        finish(slot, r.finish);
        return;
    }
    slot.next_token = r.token;
}

void BatchScheduler::finish(Slot& slot, FinishReason reason) {
    const std::string tail = slot.step->finish_text();
    if (!tail.empty()) {
        JobEvent t;
        t.kind = JobEvent::Kind::Text;
        t.text = tail;
        slot.job->channel->push(std::move(t));
    }
    const Clock::time_point now = Clock::now();
    JobEvent done;
    done.kind = JobEvent::Kind::Done;
    done.finish = reason;
    done.usage = slot.usage;
    done.usage.completion_tokens = slot.step->generated();
    done.timings.prompt_n = slot.usage.prompt_tokens - slot.usage.cached_tokens;
    done.timings.prompt_ms = ms_between(slot.started, slot.first_token);
    done.timings.predicted_n = slot.step->generated();
    done.timings.predicted_ms = ms_between(slot.first_token, now);
    done.timings.queued_ms = ms_between(slot.job->submitted, slot.started);
    if (recorder_) done.references = recorder_->take(slot.seq);
    done.history_text = slot.step->history_text();
    metrics_.prompt_tokens.fetch_add(static_cast<uint64_t>(done.usage.prompt_tokens));
    metrics_.prompt_tokens_cached.fetch_add(static_cast<uint64_t>(done.usage.cached_tokens));
    metrics_.generated_tokens.fetch_add(static_cast<uint64_t>(done.usage.completion_tokens));
    slot.job->channel->push(std::move(done));
    release(slot);
}

void BatchScheduler::fail(Slot& slot, int status, const std::string& message) {
    JobEvent e;
    e.kind = JobEvent::Kind::Failed;
    e.status = status;
    e.error = message;
    slot.job->channel->push(std::move(e));
    // The cache may hold part of a run that failed: start this sequence over next time.
    session_.reset(slot.seq);
    slot.fed.clear();
    release(slot);
}

void BatchScheduler::release(Slot& slot) {
    slot.job.reset();
    slot.step.reset();
    slot.phase = Slot::Phase::Idle;
    slot.pending.clear();
    slot.pending_segments.clear();
    slot.last_used = ++clock_;
    busy_.fetch_sub(1);
    metrics_.slots_busy.fetch_sub(1);
}

void BatchScheduler::copy_memory_stats() {
    if (!session_.reads_memories()) return;
    const MemoryStats& m = session_.memory_stats();
    metrics_.retrievals.store(m.retrievals);
    metrics_.memories_read.store(m.memories_read);
    if (recorder_ && recorder_->kb()) {
        const KbSourceStatus s = recorder_->kb()->status();
        metrics_.kb_records_fetched.store(s.records_fetched);
        metrics_.kb_cache_hits.store(s.cache_hits);
        metrics_.kb_cache_lookups.store(s.cache_hits + s.cache_misses);
        metrics_.kb_failures.store(s.failures);
    }
}

}  // namespace mnemo::serve
