// The first test of a cross build run under an emulator (scripts/edge-arm64.sh runs it before
// the others): starts a second thread and hands work back and forth through an atomic (spinning,
// as the CPU backend's thread pool does) and a condition variable (futex wait and wake). Under
// qemu-user it takes well under a second. When the emulator is given an arm64 dynamic loader and a
// libc from different glibc builds, the first pthread_create never returns (docs/edge.md, "Threads
// under emulation"); this test then fails at its 60-s timeout, instead of every
// multi-threaded test hanging until its own.
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

int main() {
    constexpr int kRounds = 10000;
    std::atomic<int> turn{0};  // even: main's turn, odd: the worker's
    std::thread worker([&] {
        for (int i = 0; i < kRounds; ++i) {
            while (turn.load(std::memory_order_acquire) != 2 * i + 1) std::this_thread::yield();
            turn.store(2 * i + 2, std::memory_order_release);
        }
    });
    for (int i = 0; i < kRounds; ++i) {
        turn.store(2 * i + 1, std::memory_order_release);
        while (turn.load(std::memory_order_acquire) != 2 * i + 2) std::this_thread::yield();
    }
    worker.join();

    std::mutex m;
    std::condition_variable cv;
    bool ready = false;
    std::thread sleeper([&] {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return ready; });
    });
    {
        std::lock_guard<std::mutex> lock(m);
        ready = true;
    }
    cv.notify_one();
    sleeper.join();
    std::printf("thread probe: %d spin hand-offs and a condition-variable wake-up, OK\n", kRounds);
    return 0;
}
