// RMS_NORM and LAYER_NORM, one row at a time; rows are split across threads. The optional weight
// and bias may be f32/f16/bf16 (they come straight from the model file).
#include <cmath>

#include "arch/x86/simd_avx2.hpp"
#include "kernel_api.hpp"
#include "scalar_math.hpp"

namespace mnemo_cpu {
namespace {

struct NormArgs {
    const float* x;
    float* y;
    const void* w;  // nullptr when absent
    const void* b;
    int32_t w_dtype, b_dtype;
    int64_t rows, d;
    float eps;
};

NormArgs norm_args(const PreparedNode& p) {
    const mnemo_node& nd = p.node;
    NormArgs a;
    a.x = static_cast<const float*>(p.in[0]);
    a.y = static_cast<float*>(p.out);
    a.w = nd.n_inputs > 1 ? p.in[1] : nullptr;
    a.b = nd.n_inputs > 2 ? p.in[2] : nullptr;
    a.w_dtype = nd.n_inputs > 1 ? nd.inputs[1].dtype : MNEMO_DTYPE_F32;
    a.b_dtype = nd.n_inputs > 2 ? nd.inputs[2].dtype : MNEMO_DTYPE_F32;
    a.d = nd.inputs[0].shape[nd.inputs[0].ndim - 1];
    a.rows = outer_rows(nd.inputs[0]);
    a.eps = nd.fparams[0];
    return a;
}

// Small nodes run inline with nth == 1 (graph.cpp node_work decides once per node).
void my_rows(const NormArgs& a, int ith, int nth, int64_t* r0, int64_t* r1) {
    split_range(a.rows, ith, nth, 1, r0, r1);
}

template <bool LAYER>
void norm_scalar(const KernelCall& call, int ith, int nth) {
    const NormArgs a = norm_args(*call.node);
    int64_t r0, r1;
    my_rows(a, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; ++r) {
        const float* x = a.x + r * a.d;
        float* y = a.y + r * a.d;
        double mean = 0.0;
        if (LAYER) {
            for (int64_t i = 0; i < a.d; ++i) mean += x[i];
            mean = a.d > 0 ? mean / static_cast<double>(a.d) : 0.0;
        }
        double sq = 0.0;
        for (int64_t i = 0; i < a.d; ++i) {
            const double c = x[i] - mean;
            sq += c * c;
        }
        const float inv = static_cast<float>(1.0 / std::sqrt((a.d > 0 ? sq / static_cast<double>(a.d) : 0.0) + a.eps));
        const float m = static_cast<float>(mean);
        for (int64_t i = 0; i < a.d; ++i) {
            float v = (x[i] - m) * inv;
            if (a.w) v *= load_weight(a.w, a.w_dtype, static_cast<size_t>(i));
            if (a.b) v += load_weight(a.b, a.b_dtype, static_cast<size_t>(i));
            y[i] = v;
        }
    }
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)

template <bool LAYER>
MNEMO_AVX2 void norm_avx2(const KernelCall& call, int ith, int nth) {
    const NormArgs a = norm_args(*call.node);
    int64_t r0, r1;
    my_rows(a, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; ++r) {
        const float* x = a.x + r * a.d;
        float* y = a.y + r * a.d;
        float mean = 0.0f;
        if (LAYER) {
            __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
            int64_t i = 0;
            for (; i + 16 <= a.d; i += 16) {
                s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
                s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x + i + 8));
            }
            float s = avx2::hsum(_mm256_add_ps(s0, s1));
            for (; i < a.d; ++i) s += x[i];
            mean = a.d > 0 ? s / static_cast<float>(a.d) : 0.0f;
        }
        // Two passes (mean, then squared deviations) rather than E[x^2] - E[x]^2, which loses
        // everything to cancellation when the mean is large compared with the spread.
        const __m256 vm = _mm256_set1_ps(mean);
        __m256 q0 = _mm256_setzero_ps(), q1 = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 16 <= a.d; i += 16) {
            const __m256 c0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
            const __m256 c1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm);
            q0 = _mm256_fmadd_ps(c0, c0, q0);
            q1 = _mm256_fmadd_ps(c1, c1, q1);
        }
        float sq = avx2::hsum(_mm256_add_ps(q0, q1));
        for (; i < a.d; ++i) sq += (x[i] - mean) * (x[i] - mean);
        const float inv = static_cast<float>(
            1.0 / std::sqrt((a.d > 0 ? static_cast<double>(sq) / static_cast<double>(a.d) : 0.0) + a.eps));
        const __m256 vinv = _mm256_set1_ps(inv);
        i = 0;
        for (; i + 8 <= a.d; i += 8) {
            __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vinv);
            if (a.w) v = _mm256_mul_ps(v, avx2::load8_any(a.w, a.w_dtype, static_cast<size_t>(i)));
            if (a.b) v = _mm256_add_ps(v, avx2::load8_any(a.b, a.b_dtype, static_cast<size_t>(i)));
            _mm256_storeu_ps(y + i, v);
        }
        for (; i < a.d; ++i) {
            float v = (x[i] - mean) * inv;
            if (a.w) v *= avx2::load1_any(a.w, a.w_dtype, static_cast<size_t>(i));
            if (a.b) v += avx2::load1_any(a.b, a.b_dtype, static_cast<size_t>(i));
            y[i] = v;
        }
    }
}

#endif

}  // namespace

KernelFn select_norm(PreparedNode& p, Isa isa) {
    p.scratch_floats = 0;
    const bool layer = p.node.op == MNEMO_OP_LAYER_NORM;
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (isa == Isa::Avx2) return layer ? norm_avx2<true> : norm_avx2<false>;
#endif
    return layer ? norm_scalar<true> : norm_scalar<false>;
}

void register_norm_kernels() {
    register_kernel(MNEMO_OP_RMS_NORM, {select_norm, nullptr, nullptr});
    register_kernel(MNEMO_OP_LAYER_NORM, {select_norm, nullptr, nullptr});
}

}  // namespace mnemo_cpu
