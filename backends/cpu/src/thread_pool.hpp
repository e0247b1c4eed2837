// A fixed set of worker threads that run one parallel job at a time. Workers are created once
// (open / set_threads) and reused for every node of every graph run: dispatching a job costs an
// atomic store (plus a futex wake when workers have gone to sleep), never an allocation.
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

// fn(arg, ith, nth): the calling thread is ith == 0, workers are 1..nth-1.
using ParallelFn = void (*)(void* arg, int ith, int nth);

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Runs fn on every thread of the pool and returns when all have finished. Not reentrant.
    void run(ParallelFn fn, void* arg);

private:
    void worker_loop(int ith);
    void wake_sleepers();

    int n_threads_;
    std::vector<std::thread> workers_;
    ParallelFn job_fn_ = nullptr;
    void* job_arg_ = nullptr;
    // Each job bumps the generation; workers run the job when they see a new value.
    alignas(64) std::atomic<uint64_t> generation_{0};
    alignas(64) std::atomic<int> pending_{0};
    alignas(64) std::atomic<int> sleepers_{0};
    std::atomic<bool> stop_{false};
    std::mutex sleep_mutex_;
    std::condition_variable wake_;
};

int default_thread_count();

}  // namespace mnemo_cpu
