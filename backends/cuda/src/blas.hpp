// cuBLAS, opened at run time (libcublas.so.<major>): the module loads and runs its own GEMM
// kernels where cuBLAS is not installed; `mnemo devices` says which. Only the few entry points
// the prefill GEMM uses are resolved.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

namespace mnemo_cuda {

struct Blas {
    cublasStatus_t (*create)(cublasHandle_t*) = nullptr;
    cublasStatus_t (*destroy)(cublasHandle_t) = nullptr;
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t) = nullptr;
    cublasStatus_t (*set_workspace)(cublasHandle_t, void*, size_t) = nullptr;
    cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t) = nullptr;
    cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                            const float*, int, const float*, int, const float*, float*, int) = nullptr;
    std::string library;  // the file that was opened
};

// nullptr (and why) when no usable cuBLAS is installed.
const Blas* load_blas(std::string* why);

}  // namespace mnemo_cuda
