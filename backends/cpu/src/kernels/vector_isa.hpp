// Kernels whose vector path exists for both AVX2 (x86-64) and NEON (arm64) are templated on one
// flag, "use this build's vector kernels", instead of one per ISA: a build only ever has one of the
// two, and the flag reads the same on both. has_vector_kernels(isa) says whether a node prepared
// for `isa` takes that path.
#pragma once

#include "../cpu_features.hpp"
#include "arch/arm/simd_neon.hpp"
#include "arch/x86/simd_avx2.hpp"

namespace mnemo_cpu {

#if defined(MNEMO_HAVE_AVX2_KERNELS) || defined(MNEMO_HAVE_NEON_KERNELS)
#define MNEMO_HAVE_VECTOR_KERNELS 1
#endif

constexpr bool has_vector_kernels(Isa isa) {
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    return isa == Isa::Avx2;
#elif defined(MNEMO_HAVE_NEON_KERNELS)
    return isa == Isa::Neon;
#else
    (void)isa;
    return false;
#endif
}

}  // namespace mnemo_cpu
