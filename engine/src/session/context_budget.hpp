// What a context costs, said before it is allocated: the KV caches (and other per-context states)
// grow with n_ctx x n_seq, and a mistyped -c 1000000 would otherwise take gigabytes silently.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace mnemo::session_detail {

struct ContextBudget {
    int32_t n_ctx = 0;
    int64_t n_ctx_train = 0;     // 0: unknown
    int32_t n_seq = 1;
    uint64_t state_bytes = 0;    // what the per-context states will take
    std::string device;          // "cpu device 'AMD EPYC'" for messages
    uint64_t device_memory = 0;  // the device's memory in bytes; 0 when unknown
    bool host_memory = false;    // the device's buffers are the machine's memory
};

// A context longer than the model was trained for is allowed (as llama.cpp does) with a warning
// that also says what its states take; states larger than the memory that must hold them (the
// device's, and for a device whose buffers are host memory the machine's physical memory) are
// refused with an Error that says how to fix it. `warn` gets one line.
void check_context_budget(const ContextBudget& b, const std::function<void(const std::string&)>& warn);

// The machine's physical memory in bytes (sysconf), 0 when unknown.
uint64_t physical_memory_bytes();

}  // namespace mnemo::session_detail
