// One opened CPU device: its buffers, its worker threads and the kernel set chosen for the CPU.
// The interface is the one backends/common/context_adapter.hpp forwards the C entry points to.
#pragma once

#include <memory>
#include <string>

#include "buffers.hpp"
#include "cpu_features.hpp"
#include "mnemo/abi/backend_abi.h"
#include "thread_pool.hpp"

namespace mnemo_cpu {

class Context {
public:
    // Throws when the device does not exist or the worker threads cannot start.
    Context(int32_t device, const mnemo_backend_config* config);

    // Host memory is always current.
    bool activate(std::string&) { return true; }
    void* alloc(uint64_t size, std::string& why) { return buffers_.alloc(size, why); }
    // Weights are read in place: the mmapped checkpoint becomes a buffer without a copy.
    void* import_host(void* host, uint64_t size, std::string& why) { return buffers_.wrap(host, size, why); }
    void release(void* buffer) { buffers_.release(buffer); }
    bool owns(const void* buffer) const { return buffers_.find(buffer) != nullptr; }
    bool write(void* buffer, uint64_t offset, const void* src, uint64_t size, std::string& why) {
        return buffers_.write(buffer, offset, src, size, why);
    }
    bool read(void* buffer, uint64_t offset, void* dst, uint64_t size, std::string& why) const {
        return buffers_.read(buffer, offset, dst, size, why);
    }
    // 0: one thread per core the process may run on.
    mnemo_status set_threads(int32_t n_threads);

    const BufferTable& buffers() const { return buffers_; }
    ThreadPool& pool() { return *pool_; }
    Isa isa() const { return isa_; }

private:
    BufferTable buffers_;
    std::unique_ptr<ThreadPool> pool_;
    Isa isa_ = Isa::Scalar;
};

}  // namespace mnemo_cpu
