#include "thread_pool.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mnemo_cpu {
namespace {

// Roughly 100-300 microseconds of spinning depending on the CPU's pause latency: long enough to
// bridge the gap between two nodes, short enough not to matter when the engine goes idle.
constexpr int kWorkerSpins = 1 << 14;
constexpr int kCallerSpins = 1 << 10;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

inline uint32_t gen_of(uint64_t s) { return static_cast<uint32_t>(s >> 32); }
inline uint32_t task_of(uint64_t s) { return static_cast<uint32_t>(s); }

}  // namespace

int default_thread_count() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    workers_.reserve(static_cast<size_t>(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
    stop_.store(true, std::memory_order_relaxed);
    job_tasks_.store(0, std::memory_order_relaxed);
    state_.store(static_cast<uint64_t>(++last_gen_) << 32, std::memory_order_seq_cst);
    wake_sleepers();
    for (std::thread& t : workers_) t.join();
}

void ThreadPool::wake_sleepers() {
    { std::lock_guard<std::mutex> lock(sleep_mutex_); }
    wake_.notify_all();
}

void ThreadPool::work_on(uint32_t gen) {
    for (;;) {
        uint64_t s = state_.load(std::memory_order_acquire);
        if (gen_of(s) != gen) return;
        // Read the job after seeing its generation. If the job changes before our claim, the
        // claim's CAS fails (the generation moved on) and these values are never used.
        const int tasks = job_tasks_.load(std::memory_order_relaxed);
        const ParallelFn fn = job_fn_.load(std::memory_order_relaxed);
        void* arg = job_arg_.load(std::memory_order_relaxed);
        if (static_cast<int>(task_of(s)) >= tasks) return;
        if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_relaxed)) continue;
        fn(arg, static_cast<int>(task_of(s)), tasks);
        done_.fetch_add(1, std::memory_order_release);
    }
}

void ThreadPool::run(ParallelFn fn, void* arg, int n_tasks) {
    if (n_tasks > n_threads_) n_tasks = n_threads_;
    if (n_tasks <= 1) {
        fn(arg, 0, 1);
        return;
    }
    job_fn_.store(fn, std::memory_order_relaxed);
    job_arg_.store(arg, std::memory_order_relaxed);
    job_tasks_.store(n_tasks, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    const uint32_t gen = ++last_gen_;
    // seq_cst on both sides pairs with the worker's "sleepers_++ then re-check" so that a worker
    // is either seen as sleeping (and woken) or sees the new job before it blocks.
    state_.store(static_cast<uint64_t>(gen) << 32, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) wake_sleepers();

    work_on(gen);

    int spins = 0;
    while (done_.load(std::memory_order_acquire) != n_tasks) {
        if (++spins < kCallerSpins) {
            cpu_relax();
        } else {
            std::this_thread::yield();  // a worker holding a task was preempted
        }
    }
}

void ThreadPool::worker_loop() {
    uint32_t seen = 0;
    for (;;) {
        uint32_t now = gen_of(state_.load(std::memory_order_acquire));
        for (int spin = 0; now == seen && spin < kWorkerSpins; ++spin) {
            cpu_relax();
            now = gen_of(state_.load(std::memory_order_acquire));
        }
        if (now == seen) {
            // The generation is re-checked under the mutex after announcing ourselves, and run()
            // takes the mutex before notifying, so a wake-up cannot fall between check and wait.
            std::unique_lock<std::mutex> lock(sleep_mutex_);
            sleepers_.fetch_add(1, std::memory_order_seq_cst);
            while ((now = gen_of(state_.load(std::memory_order_seq_cst))) == seen) wake_.wait(lock);
            sleepers_.fetch_sub(1, std::memory_order_relaxed);
        }
        seen = now;
        if (stop_.load(std::memory_order_relaxed)) return;
        work_on(seen);
    }
}

}  // namespace mnemo_cpu
