// SOFTMAX over the last dimension of scale * x: max, exp and sum, normalise — three passes over a
// row that is in L1 after the first. Rows are split across threads.
#include <cmath>

#include "arch/x86/simd_avx2.hpp"
#include "kernel_api.hpp"

namespace mnemo_cpu {
namespace {

struct SoftmaxArgs {
    const float* x;
    float* y;
    int64_t rows, d;
    float scale;
};

SoftmaxArgs softmax_args(const PreparedNode& p, int ith, int nth, int64_t* r0, int64_t* r1) {
    const mnemo_tensor& t = p.node.inputs[0];
    SoftmaxArgs a{static_cast<const float*>(p.in[0]), static_cast<float*>(p.out), outer_rows(t),
                  t.shape[t.ndim - 1], p.node.fparams[0] == 0.0f ? 1.0f : p.node.fparams[0]};
    split_range(a.rows, ith, nth, 1, r0, r1);  // small nodes run inline (graph.cpp node_work)
    return a;
}

void softmax_scalar(const KernelCall& call, int ith, int nth) {
    int64_t r0, r1;
    const SoftmaxArgs a = softmax_args(*call.node, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; ++r) {
        const float* x = a.x + r * a.d;
        float* y = a.y + r * a.d;
        float mx = -INFINITY;
        for (int64_t i = 0; i < a.d; ++i) mx = std::fmax(mx, a.scale * x[i]);
        double sum = 0.0;
        for (int64_t i = 0; i < a.d; ++i) {
            y[i] = std::exp(a.scale * x[i] - mx);
            sum += y[i];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t i = 0; i < a.d; ++i) y[i] *= inv;
    }
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)

MNEMO_AVX2 void softmax_avx2(const KernelCall& call, int ith, int nth) {
    int64_t r0, r1;
    const SoftmaxArgs a = softmax_args(*call.node, ith, nth, &r0, &r1);
    const __m256 vs = _mm256_set1_ps(a.scale);
    for (int64_t r = r0; r < r1; ++r) {
        const float* x = a.x + r * a.d;
        float* y = a.y + r * a.d;
        __m256 vmax = _mm256_set1_ps(-INFINITY);
        int64_t i = 0;
        for (; i + 8 <= a.d; i += 8) vmax = _mm256_max_ps(vmax, _mm256_mul_ps(vs, _mm256_loadu_ps(x + i)));
        float mx = avx2::hmax(vmax);
        for (; i < a.d; ++i) mx = std::fmax(mx, a.scale * x[i]);
        const __m256 vmx = _mm256_set1_ps(mx);
        __m256 vsum = _mm256_setzero_ps();
        i = 0;
        for (; i + 8 <= a.d; i += 8) {
            const __m256 e = avx2::exp8(_mm256_fmsub_ps(vs, _mm256_loadu_ps(x + i), vmx));
            _mm256_storeu_ps(y + i, e);
            vsum = _mm256_add_ps(vsum, e);
        }
        float sum = avx2::hsum(vsum);
        for (; i < a.d; ++i) {
            y[i] = std::exp(a.scale * x[i] - mx);
            sum += y[i];
        }
        const __m256 vinv = _mm256_set1_ps(1.0f / sum);
        i = 0;
        for (; i + 8 <= a.d; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vinv));
        for (; i < a.d; ++i) y[i] *= 1.0f / sum;
    }
}

#endif

}  // namespace

KernelFn select_softmax(PreparedNode& p, Isa isa) {
    p.scratch_floats = 0;
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (isa == Isa::Avx2) return softmax_avx2;
#endif
    return softmax_scalar;
}

void register_softmax_kernels() { register_kernel(MNEMO_OP_SOFTMAX, {select_softmax, nullptr, nullptr}); }

}  // namespace mnemo_cpu
