// MATMUL y[N, M] = x[N, K] W[M, K]^T with W in f32/f16/bf16, accumulated in f32 (a block-quantized
// W goes to matmul_quant.cpp).
//
// Decode (a few rows of x) is bound by how fast W streams from memory: each thread takes a
// contiguous band of output rows (so every thread reads its own contiguous part of W), and a
// micro-kernel computes 4 rows of W against the 1-2 rows of x at once, so x stays in L1 and each
// weight is loaded exactly once. Prefill (many rows of x) is bound by arithmetic: the
// micro-kernel becomes 4 rows of x by 3 rows of W (12 accumulators + 3 weight vectors + 1 x
// vector = all 16 ymm registers) and the loops are blocked over K and N so the x block stays in
// L2 while a small band of W sits in L1 and is reused for every x row of the block. Where the
// CPU has AVX-512, prefill takes the 32-register version of that tile (arch/x86/matmul_avx512.cpp).
#include <cstring>

#include "arch/arm/simd_neon.hpp"
#include "arch/x86/simd_avx2.hpp"
#include "dot.hpp"
#include "kernel_api.hpp"
#include "matmul_quant.hpp"
#include "matmul_shape.hpp"
#include "scalar_math.hpp"

namespace mnemo_cpu {
namespace {

constexpr int64_t kPrefillKc = 1024;  // x block NC x KC floats = 128 KiB: fits L2 with room for W
constexpr int64_t kPrefillNc = 32;
constexpr int64_t kBlockingMinRows = 8;  // below this W is streamed once, unblocked

// ---------------------------------------------------------------------------------------------
// Portable kernels: the same band split, 4 rows of W per step, plain loops the compiler may
// vectorise for the baseline ISA (weight_at is in dot.hpp).

template <int DT>
void matmul_scalar(const KernelCall& call, int ith, int nth) {
    const MatmulShape s = matmul_shape(*call.node);
    int64_t m0, m1;
    split_range(s.m, ith, nth, 4, &m0, &m1);
    float wrow[4][256];  // converted chunk of 4 weight rows, reused for every row of x
    for (int64_t m = m0; m < m1; m += 4) {
        const int64_t rows = m1 - m < 4 ? m1 - m : 4;
        for (int64_t n = 0; n < s.n; ++n)
            for (int64_t r = 0; r < rows; ++r) s.y[n * s.m + m + r] = 0.0f;
        for (int64_t k0 = 0; k0 < s.k; k0 += 256) {
            const int64_t kl = s.k - k0 < 256 ? s.k - k0 : 256;
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t j = 0; j < kl; ++j)
                    wrow[r][j] = weight_at<DT>(s.w, static_cast<size_t>((m + r) * s.k + k0 + j));
            for (int64_t n = 0; n < s.n; ++n) {
                const float* xr = s.x + n * s.k + k0;
                for (int64_t r = 0; r < rows; ++r) {
                    float acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;
                    int64_t j = 0;
                    for (; j + 4 <= kl; j += 4) {
                        acc0 += xr[j] * wrow[r][j];
                        acc1 += xr[j + 1] * wrow[r][j + 1];
                        acc2 += xr[j + 2] * wrow[r][j + 2];
                        acc3 += xr[j + 3] * wrow[r][j + 3];
                    }
                    for (; j < kl; ++j) acc0 += xr[j] * wrow[r][j];
                    s.y[n * s.m + m + r] += (acc0 + acc1) + (acc2 + acc3);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
#if defined(MNEMO_HAVE_AVX2_KERNELS)

// The register tiles (tile_avx2, tile_rows_avx2) are in dot.hpp: MOE_FFN's experts use them too.
using avx2::tile_rows_avx2;

template <int DT, int MR>
MNEMO_AVX2 void band_avx2(const MatmulShape& s, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t nr,
                          int64_t k0, int64_t k1) {
    const bool accumulate = k0 > 0;
    int64_t m = m0;
    for (; m + MR <= m1; m += MR) {
        const void* w = weight_row<DT>(s.w, m, s.k);
        for (int64_t n = n0; n < n1; n += nr) {
            const int rows = static_cast<int>(n1 - n < nr ? n1 - n : nr);
            tile_rows_avx2<DT, MR>(rows, s.x + n * s.k, s.k, w, s.k, s.y + n * s.m + m, s.m, k0, k1, accumulate);
        }
    }
    for (; m < m1; ++m) {  // rows of W left over when the band is not a multiple of MR
        const void* w = weight_row<DT>(s.w, m, s.k);
        for (int64_t n = n0; n < n1; n += 4) {
            const int rows = static_cast<int>(n1 - n < 4 ? n1 - n : 4);
            tile_rows_avx2<DT, 1>(rows, s.x + n * s.k, s.k, w, s.k, s.y + n * s.m + m, s.m, k0, k1, accumulate);
        }
    }
}

template <int DT>
MNEMO_AVX2 void matmul_avx2(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const MatmulShape s = matmul_shape(p);
    const int64_t mr = p.plan[kPlanMr], nr = p.plan[kPlanNr], kc = p.plan[kPlanKc], nc = p.plan[kPlanNc];
    int64_t m0, m1;
    split_range(s.m, ith, nth, mr, &m0, &m1);
    if (m0 >= m1) return;
    for (int64_t nb = 0; nb < s.n; nb += nc) {
        const int64_t nb1 = s.n - nb < nc ? s.n : nb + nc;
        // At least one K block so that K == 0 still writes zeros.
        for (int64_t kb = 0; kb == 0 || kb < s.k; kb += kc) {
            const int64_t kb1 = s.k - kb < kc ? s.k : kb + kc;
            if (mr == 4)
                band_avx2<DT, 4>(s, m0, m1, nb, nb1, nr, kb, kb1);
            else
                band_avx2<DT, 3>(s, m0, m1, nb, nb1, nr, kb, kb1);
        }
    }
}

#endif  // MNEMO_HAVE_AVX2_KERNELS

// ---------------------------------------------------------------------------------------------
#if defined(MNEMO_HAVE_NEON_KERNELS)

// Four rows of W per step against one row of x at a time (x stays in L1 across the 4 rows).
template <int DT>
void matmul_neon(const KernelCall& call, int ith, int nth) {
    const MatmulShape s = matmul_shape(*call.node);
    int64_t m0, m1;
    split_range(s.m, ith, nth, 4, &m0, &m1);
    for (int64_t m = m0; m < m1; m += 4) {
        const int64_t rows = m1 - m < 4 ? m1 - m : 4;
        for (int64_t n = 0; n < s.n; ++n) {
            const float* xr = s.x + n * s.k;
            for (int64_t r = 0; r < rows; ++r) {
                const size_t base = static_cast<size_t>((m + r) * s.k);
                float32x4_t a0 = vdupq_n_f32(0.0f), a1 = vdupq_n_f32(0.0f);
                int64_t k = 0;
                for (; k + 8 <= s.k; k += 8) {
                    a0 = vfmaq_f32(a0, vld1q_f32(xr + k), neon::load4<DT>(s.w, base + k));
                    a1 = vfmaq_f32(a1, vld1q_f32(xr + k + 4), neon::load4<DT>(s.w, base + k + 4));
                }
                float sum = vaddvq_f32(vaddq_f32(a0, a1));
                for (; k < s.k; ++k) sum += xr[k] * weight_at<DT>(s.w, base + k);
                s.y[n * s.m + m + r] = sum;
            }
        }
    }
}

#endif  // MNEMO_HAVE_NEON_KERNELS

template <template <int> class Pick>
KernelFn by_dtype(int32_t dtype) {
    switch (dtype) {
        case MNEMO_DTYPE_F32: return Pick<MNEMO_DTYPE_F32>::fn;
        case MNEMO_DTYPE_F16: return Pick<MNEMO_DTYPE_F16>::fn;
        case MNEMO_DTYPE_BF16: return Pick<MNEMO_DTYPE_BF16>::fn;
        default: return nullptr;
    }
}

template <int DT>
struct PickScalar {
    static constexpr KernelFn fn = matmul_scalar<DT>;
};
#if defined(MNEMO_HAVE_AVX2_KERNELS)
template <int DT>
struct PickAvx2 {
    static constexpr KernelFn fn = matmul_avx2<DT>;
};
#endif
#if defined(MNEMO_HAVE_NEON_KERNELS)
template <int DT>
struct PickNeon {
    static constexpr KernelFn fn = matmul_neon<DT>;
};
#endif

}  // namespace

KernelFn select_matmul(PreparedNode& p, Isa isa) {
    const int32_t dtype = p.node.inputs[1].dtype;
    if (mnemo::dtype_is_quantized(static_cast<mnemo::DType>(dtype))) return select_matmul_quant(p, isa);
    const int64_t n = outer_rows(p.node.inputs[0]);
    const int64_t k = p.node.inputs[1].shape[1];
    if (n <= 2) {
        // Decode: 4 weight rows per step, all of x in each tile, W streamed exactly once.
        p.plan[kPlanMr] = 4;
        p.plan[kPlanNr] = 2;
        p.plan[kPlanKc] = k > 0 ? k : 1;
        p.plan[kPlanNc] = 2;
    } else {
#if defined(MNEMO_HAVE_AVX2_KERNELS)
        if (isa == Isa::Avx2 && use_avx512())
            if (KernelFn f = select_matmul_prefill_avx512(p, dtype)) return f;
#endif
        p.plan[kPlanMr] = 3;
        p.plan[kPlanNr] = 4;
        const bool blocked = n > kBlockingMinRows;
        p.plan[kPlanKc] = blocked ? kPrefillKc : (k > 0 ? k : 1);
        p.plan[kPlanNc] = blocked ? kPrefillNc : n;
    }
    p.scratch_floats = 0;
    switch (isa) {
#if defined(MNEMO_HAVE_AVX2_KERNELS)
        case Isa::Avx2: return by_dtype<PickAvx2>(dtype);
#endif
#if defined(MNEMO_HAVE_NEON_KERNELS)
        case Isa::Neon: return by_dtype<PickNeon>(dtype);
#endif
        default: return by_dtype<PickScalar>(dtype);
    }
}

// A multiply-add per output element and K.
double matmul_work(const mnemo_node& n) { return static_cast<double>(numel(n.output)) * static_cast<double>(n.inputs[1].shape[1]); }

void register_matmul_kernels() { register_kernel(MNEMO_OP_MATMUL, {select_matmul, matmul_work, nullptr}); }

}  // namespace mnemo_cpu
