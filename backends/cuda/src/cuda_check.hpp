// Turning CUDA runtime errors into text for the engine's messages.
#pragma once
#include <cuda_runtime.h>

#include <string>

namespace mnemo_cuda {

inline std::string cuda_fail(const char* what, cudaError_t e) {
    return std::string(what) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

}  // namespace mnemo_cuda
