// Stopping numbered runs (generations, comparisons) from any thread. Runs get increasing ids in
// the order they are asked for and are queued to a worker thread; stopThrough(id) stops the run in
// progress if its id is <= id, and every run still queued up to id. The worker brackets each run
// with a Run: it lowers the flag the engine checks per step or token, and says whether the run was
// stopped before it began (a stop that raced the start is caught there, not lost).
#pragma once

#include <QtGlobal>
#include <atomic>

namespace mnemo::gui {

class RunCancellation {
public:
    // Any thread.
    void stopThrough(quint64 id) {
        quint64 prev = stopThrough_.load();
        while (prev < id && !stopThrough_.compare_exchange_weak(prev, id)) {
        }
        const quint64 running = running_.load();
        if (running != 0 && running <= id) flag_.store(true);
    }

    // The flag the engine polls (Session::set_cancel_flag, compare options, the token loop).
    std::atomic<bool>* flag() { return &flag_; }

    // Worker thread, for the length of run `id`.
    class Run {
    public:
        Run(RunCancellation& c, quint64 id) : c_(c) {
            c_.running_.store(id);
            c_.flag_.store(false);
            stoppedBeforeStart_ = c_.stopThrough_.load() >= id;
        }
        ~Run() { c_.running_.store(0); }
        Run(const Run&) = delete;
        Run& operator=(const Run&) = delete;
        bool stoppedBeforeStart() const { return stoppedBeforeStart_; }

    private:
        RunCancellation& c_;
        bool stoppedBeforeStart_ = false;
    };

private:
    std::atomic<bool> flag_{false};
    std::atomic<quint64> stopThrough_{0};  // runs with an id <= this are stopped
    std::atomic<quint64> running_{0};      // the run in progress (0: none)
};

}  // namespace mnemo::gui
