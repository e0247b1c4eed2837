// When to call a server that stopped answering again: exponential backoff between attempts, and
// whether a failure starts an outage (warn once) or a success ends one (say it is back). One per
// server, and one for the client as a whole (no server answers). Not thread-safe: its owner holds
// a lock.
#pragma once

#include <algorithm>
#include <chrono>

namespace mnemo::detail {

class Outage {
public:
    using Clock = std::chrono::steady_clock;
    using ms = std::chrono::milliseconds;

    Outage(ms initial, ms max) : initial_(std::max(initial, ms(1))), max_(std::max(max, initial_)) {}

    bool down() const { return down_; }
    // True while backing off: the caller answers without calling.
    bool waiting(Clock::time_point now) const { return down_ && now < retry_at_; }
    // A call failed. True when it starts an outage (the one warning); the next attempt waits
    // initial, then twice as long after every further failure, up to max.
    bool failed(Clock::time_point now) {
        const bool starts = !down_;
        delay_ = starts ? initial_ : std::min(delay_ * 2, max_);
        down_ = true;
        retry_at_ = now + delay_;
        return starts;
    }
    // A call worked. True when it ends an outage.
    bool succeeded() {
        const bool ends = down_;
        down_ = false;
        return ends;
    }
    ms delay() const { return delay_; }
    // When the next attempt is due (meaningful while down).
    Clock::time_point retry_at() const { return retry_at_; }

private:
    ms initial_, max_;
    ms delay_{0};
    bool down_ = false;
    Clock::time_point retry_at_{};
};

}  // namespace mnemo::detail
