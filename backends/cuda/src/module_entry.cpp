// The module's C entry point: the mnemo_backend_api table of the CUDA backend. Each function is
// an exception-proof adapter onto Context and the graph code. With no CUDA driver or device the
// module still loads and reports zero devices.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "context.hpp"
#include "devices.hpp"
#include "backend_common.hpp"
#include "context_adapter.hpp"
#include "graph.hpp"
#include "mnemo/abi/backend_abi.h"

namespace mnemo_cuda {
namespace {

int32_t device_count() { return static_cast<int32_t>(device_list().devices.size()); }

mnemo_status device_info(int32_t index, mnemo_device_info* out) {
    const DeviceList& list = device_list();
    if (!out || index < 0 || index >= static_cast<int32_t>(list.devices.size())) return MNEMO_ERR_INVALID;
    const DeviceProps& d = list.devices[static_cast<size_t>(index)];
    *out = mnemo_device_info{};
    std::snprintf(out->name, sizeof out->name, "%.127s", d.name.c_str());
    std::string blas_why;
    const Blas* blas = load_blas(&blas_why);
    const double bandwidth_gbps = 2.0 * d.memory_clock_khz * 1e3 * (d.memory_bus_width / 8.0) / 1e9;
    const std::string uuid = mnemo_backend::format_uuid(d.uuid);
    std::snprintf(out->description, sizeof out->description,
                  "%s; compute capability %d.%d; %d SMs; %.0f GB/s peak memory; driver %d, runtime %d; %s; uuid %s",
                  d.integrated ? "integrated (unified memory)" : "discrete", d.cc_major, d.cc_minor, d.multiprocessors,
                  bandwidth_gbps, list.driver_version, list.runtime_version,
                  blas ? ("cuBLAS " + blas->library).c_str() : "no cuBLAS", uuid.c_str());
    out->type = d.integrated ? MNEMO_DEVICE_IGPU : MNEMO_DEVICE_GPU;
    out->caps = MNEMO_CAP_F16 | MNEMO_CAP_BF16 | MNEMO_CAP_QUANT | MNEMO_CAP_PROFILE | (d.integrated && d.can_map_host ? MNEMO_CAP_IMPORT_HOST : 0u) |
                (d.can_map_host ? MNEMO_CAP_MAP_HOST : 0u);
    out->memory_total = d.memory_total;
    std::memcpy(out->uuid, d.uuid, 16);
    out->has_uuid = 1;
    return MNEMO_OK;
}

const char* unavailable_reason() { return device_list().why.c_str(); }

}  // namespace
}  // namespace mnemo_cuda

MNEMO_BACKEND_MODULE(mnemo_cuda::Context, mnemo_cuda::Buffer, "cuda", mnemo_cuda::device_count, mnemo_cuda::device_info, mnemo_cuda::unavailable_reason)
