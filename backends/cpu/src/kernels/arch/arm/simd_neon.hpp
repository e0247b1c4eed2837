// NEON (AArch64 Advanced SIMD) building blocks. Advanced SIMD is part of the AArch64 baseline, so
// unlike the AVX2 ones these need no target attributes; kernels still use them only when
// cpu_features() reports NEON (best_isa), so MNEMO_CPU_ISA=scalar can select the portable loops
// for testing.
#pragma once

#if defined(__aarch64__)
#define MNEMO_HAVE_NEON_KERNELS 1
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mnemo/abi/mnemo_abi.h"

namespace mnemo_cpu::neon {

// 4 consecutive elements starting at element i, widened to f32. vld1 has no alignment
// requirement beyond the element's: mmapped safetensors tensors are only 2-byte aligned.
template <int DT>
inline float32x4_t load4(const void* base, size_t i) {
    if constexpr (DT == MNEMO_DTYPE_F32) {
        return vld1q_f32(static_cast<const float*>(base) + i);
    } else if constexpr (DT == MNEMO_DTYPE_F16) {
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(base) + i)));
    } else {
        // bf16 is the top half of an f32: widen to 32 bits with a shift into place.
        return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(static_cast<const uint16_t*>(base) + i), 16));
    }
}

template <int DT>
inline float load1(const void* base, size_t i) {
    if constexpr (DT == MNEMO_DTYPE_F32) {
        return static_cast<const float*>(base)[i];
    } else if constexpr (DT == MNEMO_DTYPE_F16) {
        return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_dup_u16(static_cast<const uint16_t*>(base) + i))), 0);
    } else {
        const uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(base)[i]) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
}

// Lanes l of lo and hi hold positions l and l + 4 of an 8-position group whose position p
// belongs to rank p % rank (rank in {1, 2, 4, 8}): the rank's sums into sums[0..rank).
inline void rank_sums8(float32x4_t lo, float32x4_t hi, int64_t rank, float* sums) {
    if (rank == 8) {
        vst1q_f32(sums, lo);
        vst1q_f32(sums + 4, hi);
        return;
    }
    const float32x4_t s = vaddq_f32(lo, hi);  // lanes l, l+4
    if (rank == 4) {
        vst1q_f32(sums, s);
        return;
    }
    const float32x2_t h = vadd_f32(vget_low_f32(s), vget_high_f32(s));  // lanes l, l+2
    if (rank == 2) {
        vst1_f32(sums, h);
        return;
    }
    sums[0] = vget_lane_f32(vpadd_f32(h, h), 0);
}

}  // namespace mnemo_cpu::neon

#endif  // __aarch64__
