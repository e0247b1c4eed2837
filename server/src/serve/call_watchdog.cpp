#include "serve/call_watchdog.hpp"

namespace mnemo::kb {

CallWatchdog::CallWatchdog(std::chrono::milliseconds grace) : grace_(grace), thread_([this] { run(); }) {}

CallWatchdog::~CallWatchdog() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

CallWatchdog::Watch::~Watch() { owner_.release(key_); }

std::unique_ptr<CallWatchdog::Watch> CallWatchdog::watch(Clock::time_point deadline, std::function<void()> cancel) {
    auto stage = std::make_shared<std::atomic<int>>(kRunning);
    uint64_t key = 0;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        key = next_key_++;
        entries_.emplace(key, Entry{deadline, std::move(cancel), stage});
    }
    wake_.notify_all();  // it may be the earliest deadline now
    return std::unique_ptr<Watch>(new Watch(*this, key, std::move(stage)));
}

size_t CallWatchdog::watched() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
}

void CallWatchdog::release(uint64_t key) {
    std::unique_lock<std::mutex> lock(mutex_);
    // A cancel of this very call may be running without the lock: its ServerContext must outlive
    // it, so the call does not end (and gRPC does not free the context) before it returns.
    cancel_done_.wait(lock, [&] { return cancelling_ != key; });
    entries_.erase(key);
}

void CallWatchdog::run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
        // The entry due first: a scan, since the calls in flight are few (bounded by the
        // per-client limit times the clients) and this runs once per registration or stage.
        auto due = entries_.end();
        for (auto it = entries_.begin(); it != entries_.end(); ++it)
            if (it->second.stage->load(std::memory_order_relaxed) != kCancelled && (due == entries_.end() || due_at(it->second) < due_at(due->second)))
                due = it;
        if (due == entries_.end()) {
            wake_.wait(lock);
            continue;
        }
        if (Clock::now() < due_at(due->second)) {
            wake_.wait_until(lock, due_at(due->second));
            continue;  // a new registration, a release or the time: look again
        }
        if (due->second.stage->load(std::memory_order_relaxed) == kRunning) {
            due->second.stage->store(kExpired, std::memory_order_release);
            continue;
        }
        const uint64_t key = due->first;
        due->second.stage->store(kCancelled, std::memory_order_release);
        std::function<void()> cancel = std::move(due->second.cancel);
        cancelling_ = key;
        lock.unlock();
        cancel();  // TryCancel may take gRPC's call lock: never under ours
        lock.lock();
        cancelling_ = UINT64_MAX;
        cancel_done_.notify_all();
    }
}

CallWatchdog::Clock::time_point CallWatchdog::due_at(const Entry& e) const {
    return e.stage->load(std::memory_order_relaxed) == kRunning ? e.deadline : e.deadline + grace_;
}

}  // namespace mnemo::kb
