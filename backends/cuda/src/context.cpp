#include "context.hpp"

#include "backend_common.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "cuda_check.hpp"

namespace mnemo_cuda {

namespace {
constexpr uint64_t kPinnedBytes = 32ull << 20;
constexpr size_t kBlasWorkspace = 32ull << 20;  // fixed, so cuBLAS never allocates inside a capture

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(cuda_fail(what, e));
}
}  // namespace

Context::Context(int32_t index) {
    const DeviceList& list = device_list();
    if (index < 0 || index >= static_cast<int32_t>(list.devices.size()))
        throw std::runtime_error("device " + std::to_string(index) + " does not exist (" + std::to_string(list.devices.size()) +
                                 " CUDA device(s)" + (list.why.empty() ? "" : ": " + list.why) + ")");
    props_ = &list.devices[static_cast<size_t>(index)];
    try {
        check(cudaSetDevice(props_->ordinal), "cudaSetDevice");
        check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
        check(cudaMallocHost(reinterpret_cast<void**>(&pinned_), kPinnedBytes), "cudaMallocHost (staging)");
        check(cudaMalloc(reinterpret_cast<void**>(&status_dev_), sizeof(KernelStatus)), "cudaMalloc (status)");
        check(cudaMallocHost(reinterpret_cast<void**>(&status_host_), sizeof(KernelStatus)), "cudaMallocHost (status)");
        check(cudaMemset(status_dev_, 0, sizeof(KernelStatus)), "cudaMemset (status)");
        blas_ = load_blas(&blas_note_);
        if (blas_) {
            if (blas_->create(&blas_handle_) != CUBLAS_STATUS_SUCCESS) {
                blas_ = nullptr;
                blas_handle_ = nullptr;
                blas_note_ = "cublasCreate failed; prefill GEMMs use Mnemo's own kernel";
            } else {
                check(cudaMalloc(&blas_workspace_, kBlasWorkspace), "cudaMalloc (cuBLAS workspace)");
                blas_->set_stream(blas_handle_, stream_);
                blas_->set_workspace(blas_handle_, blas_workspace_, kBlasWorkspace);
                // Plain FP32: TF32 would round the inputs to 10-bit mantissas.
                blas_->set_math_mode(blas_handle_, CUBLAS_DEFAULT_MATH);
                blas_note_ = "cuBLAS " + blas_->library;
            }
        }
    } catch (...) {
        destroy();
        throw;
    }
}

Context::~Context() { destroy(); }

void Context::destroy() {
    if (props_) cudaSetDevice(props_->ordinal);
    if (stream_) cudaStreamSynchronize(stream_);
    for (auto& [h, b] : buffers_) {
        if (b->host) cudaHostUnregister(b->host);
        else cudaFree(b->ptr);
    }
    buffers_.clear();
    if (blas_handle_) blas_->destroy(blas_handle_);
    blas_handle_ = nullptr;
    if (blas_workspace_) cudaFree(blas_workspace_);
    blas_workspace_ = nullptr;
    if (status_dev_) cudaFree(status_dev_);
    if (status_host_) cudaFreeHost(status_host_);
    if (pinned_) cudaFreeHost(pinned_);
    if (stream_) cudaStreamDestroy(stream_);
    status_dev_ = nullptr;
    status_host_ = nullptr;
    pinned_ = nullptr;
    stream_ = nullptr;
}

bool Context::activate(std::string& why) const {
    const cudaError_t e = cudaSetDevice(props_->ordinal);
    if (e != cudaSuccess) why = cuda_fail("cudaSetDevice", e);
    return e == cudaSuccess;
}

bool Context::sync(std::string& why) {
    const cudaError_t e = cudaStreamSynchronize(stream_);
    pinned_used_ = 0;
    if (e != cudaSuccess) {
        why = cuda_fail("cudaStreamSynchronize", e);
        return false;
    }
    return true;
}

Buffer* Context::alloc(uint64_t size, std::string& why) {
    auto b = std::make_unique<Buffer>();
    b->size = size;
    const cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&b->ptr), std::max<uint64_t>(size, 4));
    if (e != cudaSuccess) {
        cudaGetLastError();
        why = "cannot allocate " + std::to_string(size) + " bytes on " + props_->name + ": " + cuda_fail("cudaMalloc", e);
        return nullptr;
    }
    Buffer* raw = b.get();
    buffers_[raw] = std::move(b);
    return raw;
}

Buffer* Context::import_host(void* host, uint64_t size, std::string& why) {
    // Integrated GPUs read every weight so (MNEMO_CAP_IMPORT_HOST); a discrete one reads only the
    // memory tables the engine keeps in host memory (--memory-tables host), over the bus.
    if (!props_->can_map_host) {
        why = "the device cannot map host memory (cudaDevAttrCanMapHostMemory is 0)";
        return nullptr;
    }
    cudaError_t e = cudaHostRegister(host, size, cudaHostRegisterMapped | cudaHostRegisterReadOnly);
    if (e != cudaSuccess) {
        cudaGetLastError();
        why = cuda_fail("cudaHostRegister", e);
        return nullptr;
    }
    auto b = std::make_unique<Buffer>();
    b->size = size;
    b->host = host;
    e = cudaHostGetDevicePointer(reinterpret_cast<void**>(&b->ptr), host, 0);
    if (e != cudaSuccess) {
        cudaHostUnregister(host);
        why = cuda_fail("cudaHostGetDevicePointer", e);
        return nullptr;
    }
    Buffer* raw = b.get();
    buffers_[raw] = std::move(b);
    return raw;
}

void Context::release(Buffer* b) {
    auto it = buffers_.find(b);
    if (it == buffers_.end()) return;
    cudaStreamSynchronize(stream_);  // a pending copy or kernel may still use it
    pinned_used_ = 0;
    if (b->host) cudaHostUnregister(b->host);
    else cudaFree(b->ptr);
    buffers_.erase(it);
}

bool Context::write(Buffer* b, uint64_t offset, const void* src, uint64_t size, std::string& why) {
    why = mnemo_backend::range_error("write", offset, size, b->size);
    if (!why.empty()) return false;
    if (b->host) {
        why = "imported host memory (weights) is read-only";
        return false;
    }
    // Through the pinned ring: the copy is asynchronous, so small writes (graph inputs) cost no
    // wait; the ring is recycled after the next synchronisation.
    const auto* bytes = static_cast<const uint8_t*>(src);
    for (uint64_t done = 0; done < size;) {
        if (pinned_used_ >= kPinnedBytes && !sync(why)) return false;
        const uint64_t piece = std::min(size - done, kPinnedBytes - pinned_used_);
        std::memcpy(pinned_ + pinned_used_, bytes + done, piece);
        const cudaError_t e = cudaMemcpyAsync(b->ptr + offset + done, pinned_ + pinned_used_, piece, cudaMemcpyHostToDevice, stream_);
        if (e != cudaSuccess) {
            why = cuda_fail("cudaMemcpyAsync (upload)", e);
            return false;
        }
        pinned_used_ = (pinned_used_ + piece + 255) & ~uint64_t{255};
        done += piece;
    }
    return true;
}

bool Context::read(Buffer* b, uint64_t offset, void* dst, uint64_t size, std::string& why) {
    why = mnemo_backend::range_error("read", offset, size, b->size);
    if (!why.empty()) return false;
    auto* out = static_cast<uint8_t*>(dst);
    if (!sync(why)) return false;
    for (uint64_t done = 0; done < size;) {
        const uint64_t piece = std::min(size - done, kPinnedBytes);
        const cudaError_t e = cudaMemcpyAsync(pinned_, b->ptr + offset + done, piece, cudaMemcpyDeviceToHost, stream_);
        if (e != cudaSuccess) {
            why = cuda_fail("cudaMemcpyAsync (download)", e);
            return false;
        }
        if (!sync(why)) return false;
        std::memcpy(out + done, pinned_, piece);
        done += piece;
    }
    return true;
}

void Context::clear_status_async() { cudaMemsetAsync(status_dev_, 0, sizeof(KernelStatus), stream_); }

bool Context::finish(KernelStatus* status, std::string& why) {
    cudaError_t e = cudaMemcpyAsync(status_host_, status_dev_, sizeof(KernelStatus), cudaMemcpyDeviceToHost, stream_);
    if (e != cudaSuccess) {
        why = cuda_fail("cudaMemcpyAsync (status)", e);
        return false;
    }
    if (!sync(why)) return false;
    e = cudaGetLastError();  // a failed launch (bad configuration) surfaces here
    if (e != cudaSuccess) {
        why = cuda_fail("a kernel launch", e);
        return false;
    }
    *status = *status_host_;
    return true;
}

}  // namespace mnemo_cuda
