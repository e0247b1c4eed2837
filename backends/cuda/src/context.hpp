// One opened CUDA device: its stream, buffers, pinned staging ring, the status word kernels report
// bad indices through, and cuBLAS when installed. Used from one thread at a time.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "blas.hpp"
#include "devices.hpp"

namespace mnemo_cuda {

// A buffer handed to the engine as its opaque handle.
struct Buffer {
    uint8_t* ptr = nullptr;  // device pointer of byte 0
    uint64_t size = 0;
    void* host = nullptr;    // registered host memory (imported weights), else nullptr
};

// Written by kernels that meet a bad index (kernels/kernel_api.cuh, report_bad_index).
struct KernelStatus {
    int32_t code;   // 0 fine; 1 index out of range
    int32_t node;
    int32_t value;
    int32_t limit;  // the valid range is 0..limit-1
};

class Context {
public:
    explicit Context(int32_t index);  // throws std::runtime_error with the reason
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    // How messages name this backend ("... is not supported by the CUDA backend yet").
    static constexpr const char* kTitle = "CUDA";

    const DeviceProps& props() const { return *props_; }
    cudaStream_t stream() const { return stream_; }
    // Makes this context's device current for the calling thread.
    bool activate(std::string& why) const;

    Buffer* alloc(uint64_t size, std::string& why);
    // Host pages of read-only weights, registered and read in place: every weight on Jetson /
    // integrated GPUs, the memory tables kept in host memory (--memory-tables host) on any GPU.
    Buffer* import_host(void* host, uint64_t size, std::string& why);
    void release(Buffer* b);
    bool owns(const void* handle) const { return buffers_.count(handle) != 0; }
    bool write(Buffer* b, uint64_t offset, const void* src, uint64_t size, std::string& why);
    bool read(Buffer* b, uint64_t offset, void* dst, uint64_t size, std::string& why);

    KernelStatus* status_device() const { return status_dev_; }
    void clear_status_async();
    // Waits for the stream and returns the kernels' status word.
    bool finish(KernelStatus* status, std::string& why);

    const Blas* blas() const { return blas_; }
    cublasHandle_t blas_handle() const { return blas_handle_; }
    const std::string& blas_note() const { return blas_note_; }

private:
    void destroy();
    bool sync(std::string& why);

    const DeviceProps* props_ = nullptr;
    cudaStream_t stream_ = nullptr;
    uint8_t* pinned_ = nullptr;  // staging ring for writes (async copies) and reads
    uint64_t pinned_used_ = 0;
    KernelStatus* status_dev_ = nullptr;
    KernelStatus* status_host_ = nullptr;  // pinned
    const Blas* blas_ = nullptr;
    cublasHandle_t blas_handle_ = nullptr;
    void* blas_workspace_ = nullptr;
    std::string blas_note_;
    std::map<const void*, std::unique_ptr<Buffer>> buffers_;
};

}  // namespace mnemo_cuda
