// One opened CPU device: its buffers, its worker threads and the kernel set chosen for the CPU.
#pragma once

#include <memory>

#include "buffers.hpp"
#include "cpu_features.hpp"
#include "thread_pool.hpp"

namespace mnemo_cpu {

struct CpuContext {
    BufferTable buffers;
    std::unique_ptr<ThreadPool> pool;
    Isa isa = Isa::Scalar;
};

}  // namespace mnemo_cpu
