// Enforces the server's call-time cap (--max-call-seconds) on calls that cannot check it
// themselves. A call checks its deadline between two messages, but a write to a client that
// stopped reading blocks inside gRPC (HTTP/2 flow control) and never returns to that check; the
// call would hold its thread and its client's concurrency slot until the client went away. The
// watchdog is one thread that sleeps until the earliest registered deadline. At the deadline it
// marks the call expired (the call's own checks then end it with DEADLINE_EXCEEDED, which the
// client receives); a call still running `grace` later is stuck in a write, and the watchdog runs
// its cancel function (ServerContext::TryCancel), which makes that write fail at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace mnemo::kb {

class CallWatchdog {
public:
    using Clock = std::chrono::steady_clock;

    explicit CallWatchdog(std::chrono::milliseconds grace);
    ~CallWatchdog();  // stops the thread; calls still registered are not cancelled
    CallWatchdog(const CallWatchdog&) = delete;
    CallWatchdog& operator=(const CallWatchdog&) = delete;

    enum Stage : int { kRunning = 0, kExpired = 1, kCancelled = 2 };

    // One call's registration, released by its destructor. `cancel` runs at most once, on the
    // watchdog's thread, `grace` after `deadline` if the Watch still exists; the destructor waits
    // for a cancel in progress, so `cancel` never runs on a call that has ended.
    class Watch {
    public:
        Watch(Watch&&) = delete;
        ~Watch();
        // The deadline passed: the call must stop (DEADLINE_EXCEEDED).
        bool expired() const { return stage_->load(std::memory_order_acquire) >= kExpired; }
        // ... and the call was cancelled, its client seeing CANCELLED; the server's log says why.
        bool cancelled() const { return stage_->load(std::memory_order_acquire) == kCancelled; }

    private:
        friend class CallWatchdog;
        Watch(CallWatchdog& owner, uint64_t key, std::shared_ptr<std::atomic<int>> stage)
            : owner_(owner), key_(key), stage_(std::move(stage)) {}
        CallWatchdog& owner_;
        uint64_t key_;
        std::shared_ptr<std::atomic<int>> stage_;
    };

    std::unique_ptr<Watch> watch(Clock::time_point deadline, std::function<void()> cancel);
    size_t watched() const;  // calls registered now (tests)

private:
    struct Entry {
        Clock::time_point deadline;
        std::function<void()> cancel;
        std::shared_ptr<std::atomic<int>> stage;
    };
    Clock::time_point due_at(const Entry& e) const;  // when the entry's next stage is due
    void run();
    void release(uint64_t key);

    const std::chrono::milliseconds grace_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;         // a new earliest deadline, or stop
    std::condition_variable cancel_done_;  // a cancel finished (release() may be waiting for it)
    std::map<uint64_t, Entry> entries_;    // by key
    uint64_t next_key_ = 0;
    uint64_t cancelling_ = UINT64_MAX;  // key whose cancel runs now, without the lock
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace mnemo::kb
