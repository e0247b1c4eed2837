// The cost of a context, checked before its states are allocated (context_budget.hpp).
#include "session/context_budget.hpp"

#include <unistd.h>

#include <cstdio>

#include "mnemo/error.hpp"

namespace mnemo::session_detail {

namespace {

std::string gib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / static_cast<double>(1ull << 30));
    return buf;
}

}  // namespace

uint64_t physical_memory_bytes() {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

void check_context_budget(const ContextBudget& b, const std::function<void(const std::string&)>& warn) {
    const std::string what = "the context of " + std::to_string(b.n_ctx) + " tokens" +
                             (b.n_seq > 1 ? " x " + std::to_string(b.n_seq) + " sequences" : std::string()) +
                             " needs " + gib(b.state_bytes) + " for its KV caches";
    auto refuse = [&](uint64_t limit, const std::string& whose) {
        throw Error(what + ", more than the " + gib(limit) + " of " + whose + ": lower -c/--ctx-size" +
                    (b.n_ctx_train > 0 ? " (the model was trained for " + std::to_string(b.n_ctx_train) + " positions)" : ""));
    };
    if (b.host_memory) {
        const uint64_t phys = physical_memory_bytes();
        if (phys > 0 && b.state_bytes > phys) refuse(phys, "this machine's physical memory");
    }
    if (b.device_memory > 0 && b.state_bytes > b.device_memory) refuse(b.device_memory, b.device + "'s memory");
    if (b.n_ctx_train > 0 && b.n_ctx > b.n_ctx_train && warn)
        warn("the context (" + std::to_string(b.n_ctx) + " tokens, -c) exceeds the " + std::to_string(b.n_ctx_train) +
             " positions the model was trained for: positions past them are untested, answers may degrade; " + what);
}

}  // namespace mnemo::session_detail
