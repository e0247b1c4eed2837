// The NEON integer kernels of MATMUL with ARMv8.2's dot-product instructions (SDOT; the body:
// matmul_quant_neon.inl), chosen at run time where the CPU has them (use_neon_dotprod(): Cortex-A76
// and later, e.g. a Raspberry Pi 5). Nothing else in the module is built for ARMv8.2.
#include "kernels/arch/arm/simd_neon.hpp"

#if !defined(MNEMO_HAVE_NEON_KERNELS)
#error "arch/arm/ files are for arm64 targets only: backends/cpu/CMakeLists.txt chooses them by CMAKE_SYSTEM_PROCESSOR"
#endif

#define QN_NS neon_dotprod
#define QN_TARGET __attribute__((target("arch=armv8.2-a+dotprod")))
#define QN_DOTPROD 1
#define QN_ENTRY integer_kernel_neon_dotprod
#include "matmul_quant_neon.inl"
