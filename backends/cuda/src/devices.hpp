// The CUDA devices of this machine, read once through the CUDA runtime (linked statically: the
// module needs only the driver, libcuda.so.1, at run time). With no driver or no device the list
// is empty and `why` says what the runtime reported. CUDA_VISIBLE_DEVICES filters as usual.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mnemo_cuda {

struct DeviceProps {
    int ordinal = 0;
    std::string name;
    int cc_major = 0, cc_minor = 0;  // compute capability
    uint64_t memory_total = 0;
    uint8_t uuid[16] = {};
    bool integrated = false;         // Jetson / unified memory: host memory is device memory
    bool can_map_host = false;       // cudaHostRegister + device pointers
    int multiprocessors = 0;
    int warp_size = 32;
    size_t shared_per_block = 0;     // bytes (default, not opt-in)
    size_t shared_per_block_optin = 0;
    int max_threads_per_block = 1024;
    int max_grid[3] = {};
    int memory_bus_width = 0;        // bits
    int memory_clock_khz = 0;
};

struct DeviceList {
    std::vector<DeviceProps> devices;
    std::string why;  // why there are none
    int driver_version = 0, runtime_version = 0;
};

const DeviceList& device_list();

}  // namespace mnemo_cuda
