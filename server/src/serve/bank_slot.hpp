// The bank a server answers from, and how it gets a newer one. Calls take their own reference
// (current()) and keep it to their end, so a reload swaps the pointer under them without dropping
// or mixing anything: a stream that started on version 7 ends on version 7, and version 7 is
// closed when its last call lets go. The swap is one atomic shared_ptr store; only reloads
// serialize among themselves (reload_mutex_), never with the read path.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "bank/bank.hpp"

namespace mnemo::kb {

// How the server opens a bank, kept apart from where banks live: `mnemo-kb serve` opens a folder
// (Bank::open, Bank::current_version); tests give banks made in memory.
struct BankProvider {
    std::string describe;                                    // "bank folder '/srv/bank'", for logs
    std::function<std::shared_ptr<const Bank>()> open;       // the current published version
    std::function<uint64_t()> current_version;               // cheap: what open() would load now
};

struct ReloadOutcome {
    uint64_t previous_version = 0;
    uint64_t version = 0;
    bool changed() const { return version != previous_version; }
};

class BankSlot {
public:
    // Opens the first bank (errors propagate: a server never starts without one).
    explicit BankSlot(BankProvider provider);

    std::shared_ptr<const Bank> current() const { return current_.load(std::memory_order_acquire); }
    // Opens the current published version when it differs from the one served, and swaps it in.
    // On failure the served bank stays and mnemo::Error explains (the provider's message).
    ReloadOutcome reload();
    const std::string& describe() const { return provider_.describe; }

private:
    BankProvider provider_;
    std::atomic<std::shared_ptr<const Bank>> current_;
    std::mutex reload_mutex_;
};

}  // namespace mnemo::kb
