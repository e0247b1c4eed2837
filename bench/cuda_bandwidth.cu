// mnemo-cuda-bandwidth: the device-memory copy bandwidth of each CUDA GPU, the denominator of
// the decode roofline (weight bytes read per token × tokens/s ÷ this). A device-to-device
// cudaMemcpy of a buffer far larger than L2 reads and writes every byte once, so the bandwidth
// is 2 × bytes / time; the median of several repetitions is reported, as text or --json.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

bool ok(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return true;
    std::fprintf(stderr, "mnemo-cuda-bandwidth: %s: %s\n", what, cudaGetErrorString(e));
    return false;
}

// Median GB/s of `reps` copies of `bytes` on device `dev`, or a negative value on failure.
double copy_gbps(int dev, size_t bytes, int reps) {
    if (!ok(cudaSetDevice(dev), "cudaSetDevice")) return -1.0;
    void *a = nullptr, *b = nullptr;
    if (!ok(cudaMalloc(&a, bytes), "cudaMalloc") || !ok(cudaMalloc(&b, bytes), "cudaMalloc")) {
        cudaFree(a);
        return -1.0;
    }
    cudaMemset(a, 1, bytes);
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    std::vector<double> gbps;
    for (int r = 0; r <= reps; ++r) {  // the first copy warms up and is not counted
        cudaEventRecord(start);
        cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, start, stop);
        if (r > 0 && ms > 0.0f) gbps.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaFree(a);
    cudaFree(b);
    if (gbps.empty()) return -1.0;
    std::sort(gbps.begin(), gbps.end());
    return gbps[gbps.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    bool json = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--json") == 0) json = true;
        else {
            std::fprintf(stderr, "usage: mnemo-cuda-bandwidth [--json]\n");
            return 2;
        }
    }
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        std::fprintf(stderr, "mnemo-cuda-bandwidth: no CUDA device (%s)\n", e == cudaSuccess ? "none found" : cudaGetErrorString(e));
        return 1;
    }
    if (json) std::printf("[");
    for (int d = 0; d < n; ++d) {
        cudaDeviceProp p{};
        cudaGetDeviceProperties(&p, d);
        // 1 GiB per buffer, or a quarter of the memory on small devices (Jetson).
        const size_t bytes = std::min<size_t>(size_t{1} << 30, p.totalGlobalMem / 4);
        const double gbps = copy_gbps(d, bytes, 10);
        if (json) std::printf("%s{\"device\": %d, \"name\": \"%s\", \"copy_gbps\": %.1f}", d ? ", " : "", d, p.name, gbps);
        else std::printf("cuda:%d  %s  device-to-device copy %.1f GB/s\n", d, p.name, gbps);
    }
    if (json) std::printf("]\n");
    return 0;
}
