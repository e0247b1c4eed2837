// A fixed set of worker threads that run one parallel job at a time. Workers are created once
// (open / set_threads) and reused for every node of every graph run: dispatching a job costs an
// atomic store (plus a futex wake when workers have gone to sleep), never an allocation.
//
// A job is split into `n_tasks` tasks that any thread — the caller included — claims with a CAS
// on one counter. The caller never waits for a worker to *arrive*: when a worker is asleep or
// preempted (another process on the core, common on 2-core machines) the caller runs the
// unclaimed tasks itself and only waits for tasks already being run. A barrier that hands task i
// to thread i would instead stall every node for a scheduler time slice under load.
//
// Waiting is spin-then-sleep: after a job, workers spin for a short while because the next node
// usually follows within microseconds, then block on a condition variable so that an idle engine
// does not burn CPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace mnemo_cpu {

// fn(arg, task, n_tasks): each task index in [0, n_tasks) runs exactly once, on some thread; no
// two threads run the same task index at the same time, so per-task scratch is safe.
using ParallelFn = void (*)(void* arg, int task, int n_tasks);

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Runs tasks 0..n_tasks-1 (n_tasks clamped to 1..size()) and returns when all have finished.
    // n_tasks == 1 runs inline with no synchronisation at all. Not reentrant.
    void run(ParallelFn fn, void* arg, int n_tasks);
    void run(ParallelFn fn, void* arg) { run(fn, arg, n_threads_); }

private:
    void worker_loop();
    // Claim and run tasks of job `gen` until none is left (or a newer job was published).
    void work_on(uint32_t gen);
    void wake_sleepers();

    int n_threads_;
    std::vector<std::thread> workers_;
    uint32_t last_gen_ = 0;  // caller side only
    // The published job. Written by the caller before `state_` announces it, and only rewritten
    // after every task of the previous job has finished.
    std::atomic<ParallelFn> job_fn_{nullptr};
    std::atomic<void*> job_arg_{nullptr};
    std::atomic<int> job_tasks_{0};
    // High 32 bits: job generation; low 32 bits: next unclaimed task.
    alignas(64) std::atomic<uint64_t> state_{0};
    alignas(64) std::atomic<int> done_{0};
    alignas(64) std::atomic<int> sleepers_{0};
    std::atomic<bool> stop_{false};
    std::mutex sleep_mutex_;
    std::condition_variable wake_;
};

int default_thread_count();

}  // namespace mnemo_cpu
