// The module's C entry point: the mnemo_backend_api table of the CPU backend, made by the shared
// adapter (backends/common/context_adapter.hpp) over Context and the graph functions.
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>

#include "context.hpp"
#include "context_adapter.hpp"
#include "device_info.hpp"
#include "graph.hpp"

namespace mnemo_cpu {

Context::Context(int32_t device, const mnemo_backend_config* config) : isa_(best_isa()) {
    if (device != 0) throw std::invalid_argument("device " + std::to_string(device) + " does not exist (only 0)");
    const int32_t n = config ? config->n_threads : 0;
    try {
        pool_ = std::make_unique<ThreadPool>(n > 0 ? n : default_thread_count());
    } catch (const std::system_error& e) {
        throw std::runtime_error(std::string("cannot start worker threads: ") + e.what());
    }
}

mnemo_status Context::set_threads(int32_t n_threads) {
    const int n = n_threads > 0 ? n_threads : default_thread_count();
    if (pool_ && pool_->size() == n) return MNEMO_OK;
    try {
        pool_.reset();  // join the old workers before starting new ones
        pool_ = std::make_unique<ThreadPool>(n);
    } catch (...) {
        try {
            pool_ = std::make_unique<ThreadPool>(1);  // the calling thread alone
        } catch (...) {
        }
        return MNEMO_ERR_NO_MEMORY;
    }
    return MNEMO_OK;
}

namespace {

int32_t device_count() { return 1; }

mnemo_status device_info(int32_t index, mnemo_device_info* out) {
    if (index != 0 || !out) return MNEMO_ERR_INVALID;
    try {
        fill_device_info(out);
    } catch (...) {
        return MNEMO_ERR_DEVICE;
    }
    return MNEMO_OK;
}

}  // namespace
}  // namespace mnemo_cpu

// unavailable_reason: none for the CPU, which is always there.
MNEMO_BACKEND_MODULE(mnemo_cpu::Context, void, "cpu", mnemo_cpu::device_count, mnemo_cpu::device_info, nullptr)
