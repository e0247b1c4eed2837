#include "serve/bank_slot.hpp"

#include "mnemo/error.hpp"

namespace mnemo::kb {

BankSlot::BankSlot(BankProvider provider) : provider_(std::move(provider)) {
    if (!provider_.open || !provider_.current_version) throw Error("bank provider: open and current_version are both needed");
    std::shared_ptr<const Bank> first = provider_.open();
    if (!first) throw Error(provider_.describe + ": opening gave no bank");
    current_.store(std::move(first), std::memory_order_release);
}

ReloadOutcome BankSlot::reload() {
    std::lock_guard<std::mutex> lock(reload_mutex_);
    ReloadOutcome out;
    out.previous_version = out.version = current()->version();
    if (provider_.current_version() == out.previous_version) return out;
    std::shared_ptr<const Bank> next = provider_.open();
    if (!next) throw Error(provider_.describe + ": opening gave no bank");
    out.version = next->version();
    current_.store(std::move(next), std::memory_order_release);
    return out;
}

}  // namespace mnemo::kb
