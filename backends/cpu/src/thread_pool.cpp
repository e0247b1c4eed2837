#include "thread_pool.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mnemo_cpu {
namespace {

// Roughly 100-300 microseconds of spinning depending on the CPU's pause latency: long enough to
// bridge the gap between two nodes, short enough not to matter when the engine goes idle.
constexpr int kWorkerSpins = 1 << 14;
constexpr int kMainSpins = 1 << 12;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

}  // namespace

int default_thread_count() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    workers_.reserve(static_cast<size_t>(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    stop_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    wake_sleepers();
    for (std::thread& t : workers_) t.join();
}

void ThreadPool::wake_sleepers() {
    { std::lock_guard<std::mutex> lock(sleep_mutex_); }
    wake_.notify_all();
}

void ThreadPool::run(ParallelFn fn, void* arg) {
    if (n_threads_ == 1) {
        fn(arg, 0, 1);
        return;
    }
    job_fn_ = fn;
    job_arg_ = arg;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    // seq_cst on both sides pairs with the worker's "sleepers_++ then wait" so that a worker is
    // either seen as sleeping (and woken) or sees the new generation before it blocks.
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) wake_sleepers();

    fn(arg, 0, n_threads_);

    int spins = 0;
    while (pending_.load(std::memory_order_acquire) != 0) {
        if (++spins < kMainSpins) {
            cpu_relax();
        } else {
            std::this_thread::yield();  // a worker may have been preempted (2-core machines)
        }
    }
}

void ThreadPool::worker_loop(int ith) {
    // Not generation_.load(): run() may already have published a job before this thread got
    // here, and that job must not be mistaken for one already done.
    uint64_t seen = 0;
    for (;;) {
        uint64_t now = generation_.load(std::memory_order_acquire);
        for (int spin = 0; now == seen && spin < kWorkerSpins; ++spin) {
            cpu_relax();
            now = generation_.load(std::memory_order_acquire);
        }
        if (now == seen) {
            // The generation is re-checked under the mutex after announcing ourselves, and run()
            // takes the mutex before notifying, so a wake-up cannot fall between check and wait.
            std::unique_lock<std::mutex> lock(sleep_mutex_);
            sleepers_.fetch_add(1, std::memory_order_seq_cst);
            while ((now = generation_.load(std::memory_order_seq_cst)) == seen) wake_.wait(lock);
            sleepers_.fetch_sub(1, std::memory_order_relaxed);
        }
        seen = now;
        if (stop_.load(std::memory_order_relaxed)) return;
        job_fn_(job_arg_, ith, n_threads_);
        pending_.fetch_sub(1, std::memory_order_release);
    }
}

}  // namespace mnemo_cpu
