#include "devices.hpp"

#include <cstring>
#include <mutex>

#include "cuda_check.hpp"

namespace mnemo_cuda {

namespace {
DeviceList g_list;
std::once_flag g_once;

int attribute(cudaDeviceAttr a, int dev) {
    int v = 0;
    return cudaDeviceGetAttribute(&v, a, dev) == cudaSuccess ? v : 0;
}

void enumerate() {
    cudaDriverGetVersion(&g_list.driver_version);
    cudaRuntimeGetVersion(&g_list.runtime_version);
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        g_list.why = cuda_fail("cudaGetDeviceCount", e);
        cudaGetLastError();  // clear the sticky error of a missing driver
        return;
    }
    for (int i = 0; i < n; ++i) {
        cudaDeviceProp p{};
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
        DeviceProps d;
        d.ordinal = i;
        d.name = p.name;
        d.cc_major = p.major;
        d.cc_minor = p.minor;
        d.memory_total = p.totalGlobalMem;
        std::memcpy(d.uuid, p.uuid.bytes, 16);
        d.integrated = p.integrated != 0;
        d.can_map_host = p.canMapHostMemory != 0;
        d.multiprocessors = p.multiProcessorCount;
        d.warp_size = p.warpSize;
        d.shared_per_block = p.sharedMemPerBlock;
        d.shared_per_block_optin = p.sharedMemPerBlockOptin;
        d.max_threads_per_block = p.maxThreadsPerBlock;
        for (int k = 0; k < 3; ++k) d.max_grid[k] = p.maxGridSize[k];
        d.memory_bus_width = attribute(cudaDevAttrGlobalMemoryBusWidth, i);
        d.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, i);
        g_list.devices.push_back(d);
    }
    if (g_list.devices.empty() && g_list.why.empty()) g_list.why = "the CUDA driver reports no device";
}
}  // namespace

const DeviceList& device_list() {
    std::call_once(g_once, enumerate);
    return g_list;
}

}  // namespace mnemo_cuda
