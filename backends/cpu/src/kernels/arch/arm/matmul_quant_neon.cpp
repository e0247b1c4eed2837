// The baseline NEON integer kernels of MATMUL with a block-quantized W (the body:
// matmul_quant_neon.inl): Advanced SIMD is in the AArch64 baseline, so no target attribute.
#include "kernels/arch/arm/simd_neon.hpp"

#if !defined(MNEMO_HAVE_NEON_KERNELS)
#error "arch/arm/ files are for arm64 targets only: backends/cpu/CMakeLists.txt chooses them by CMAKE_SYSTEM_PROCESSOR"
#endif

#define QN_NS neon_int8
#define QN_TARGET
#define QN_DOTPROD 0
#define QN_ENTRY integer_kernel_neon
#include "matmul_quant_neon.inl"
