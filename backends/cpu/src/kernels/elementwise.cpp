// ADD, MUL (b broadcast over a's leading dimensions), SCALE, SILU, GELU (tanh form, or the exact
// erf form with i[0] = 1), SWIGLU, CLAMP.
// All are memory bound: the flat element range is split into contiguous per-thread chunks, and
// small tensors run on one thread because waking the others would cost more than the work.
#include <cmath>

#include "arch/x86/simd_avx2.hpp"
#include "kernel_api.hpp"
#include "scalar_math.hpp"

namespace mnemo_cpu {
namespace {

constexpr float kGeluK = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kSqrtHalf = 0.70710678118654752f;  // 1/sqrt(2)

// The exact GELU is a kernel of its own, chosen by the node's i[0]; this tag stands for it in
// the templates below (it is not an op id).
constexpr int kGeluErf = MNEMO_OP_COUNT_ + MNEMO_OP_GELU;

// x Phi(x) = 0.5 x erfc(-x / sqrt 2): erfc keeps full relative accuracy in the negative tail,
// where 1 + erf(x / sqrt 2) would cancel to zero.
inline float gelu_erf_scalar(float x) { return 0.5f * x * std::erfc(-x * kSqrtHalf); }

// NaN fails both comparisons and stays NaN (the reference's rule).
inline float clamp_scalar(float x, float lo, float hi) { return x < lo ? lo : x > hi ? hi : x; }

bool my_range(const PreparedNode& p, int ith, int nth, int64_t* begin, int64_t* end) {
    // Small nodes never get here with nth > 1: graph_prepare runs them inline (Kernel::work).
    split_range(numel(p.node.output), ith, nth, 64, begin, end);
    return *begin < *end;
}

// Calls seg(i, j, len) for maximal runs of elements where b's index advances with a's.
template <class Segment>
inline void broadcast_segments(int64_t begin, int64_t end, int64_t nb, Segment seg) {
    int64_t i = begin;
    while (i < end) {
        const int64_t j = i % nb;
        const int64_t len = end - i < nb - j ? end - i : nb - j;
        seg(i, j, len);
        i += len;
    }
}

// ---------------------------------------------------------------------------------------------
// Portable

template <int OP>
void binary_scalar(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    int64_t b0, b1;
    if (!my_range(p, ith, nth, &b0, &b1)) return;
    const float* a = static_cast<const float*>(p.in[0]);
    const float* b = static_cast<const float*>(p.in[1]);
    float* y = static_cast<float*>(p.out);
    const int64_t nb = numel(p.node.inputs[1]);
    broadcast_segments(b0, b1, nb, [&](int64_t i, int64_t j, int64_t len) {
        for (int64_t t = 0; t < len; ++t) {
            if constexpr (OP == MNEMO_OP_ADD) y[i + t] = a[i + t] + b[j + t];
            else y[i + t] = a[i + t] * b[j + t];
        }
    });
}

template <int OP>
void unary_scalar(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    int64_t b0, b1;
    if (!my_range(p, ith, nth, &b0, &b1)) return;
    const float* x = static_cast<const float*>(p.in[0]);
    float* y = static_cast<float*>(p.out);
    const float s = p.node.fparams[0], hi = p.node.fparams[1];
    for (int64_t i = b0; i < b1; ++i) {
        if constexpr (OP == MNEMO_OP_SCALE) y[i] = s * x[i];
        else if constexpr (OP == MNEMO_OP_CLAMP) y[i] = clamp_scalar(x[i], s, hi);
        else if constexpr (OP == MNEMO_OP_SILU) y[i] = silu_scalar(x[i]);
        else if constexpr (OP == MNEMO_OP_GELU) y[i] = gelu_tanh_scalar(x[i]);
        else if constexpr (OP == kGeluErf) y[i] = gelu_erf_scalar(x[i]);
        else y[i] = silu_scalar(x[i]) * static_cast<const float*>(p.in[1])[i];  // SWIGLU
    }
}

// ---------------------------------------------------------------------------------------------
#if defined(MNEMO_HAVE_AVX2_KERNELS)

MNEMO_AVX2_INLINE __m256 silu8(__m256 x) {
    const __m256 e = avx2::exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

// 0.5 x (1 + tanh(u)) with tanh(u) = 1 - 2 / (e^{2u} + 1), which saturates cleanly at +-1.
MNEMO_AVX2_INLINE __m256 gelu8(__m256 x) {
    const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    const __m256 u = _mm256_mul_ps(_mm256_set1_ps(kGeluK), _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, x));
    const __m256 e = avx2::exp8(_mm256_add_ps(u, u));
    const __m256 t = _mm256_sub_ps(_mm256_set1_ps(1.0f),
                                   _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), t));
}

// erfc(z) for z >= 0 as t e^{-z^2 + P(t)}, t = 1 / (1 + z/2): P is a degree-9 polynomial fitted
// here (least squares on Chebyshev nodes, z in [0, 26]) to log(erfc(z) / t) + z^2, which is
// smooth in t on (0, 1]. In f32 the relative error is below 1e-6 for z < 2 and grows to about
// 1.5e-5 near z = 9 (the rounding of z^2), where erfc itself is below 1e-30.
MNEMO_AVX2_INLINE __m256 erfc_nonneg8(__m256 z) {
    static constexpr float kP[10] = {-1.2655131816864014f, 1.0000696182250977f,  0.37337392568588257f,
                                     0.10213159769773483f, -0.20838519930839539f, 0.3332490622997284f,
                                     -1.2167876958847046f, 1.5616682767868042f,   -0.8581656813621521f,
                                     0.17835940420627594f};
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.5f), z, one));
    __m256 p = _mm256_set1_ps(kP[9]);
    for (int i = 8; i >= 0; --i) p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kP[i]));
    return _mm256_mul_ps(t, avx2::exp8(_mm256_fnmadd_ps(z, z, p)));
}

// x Phi(x): with e = erfc(|x| / sqrt 2), 0.5 x e for x < 0 and x - 0.5 x e for x >= 0, so both
// tails keep their relative accuracy.
MNEMO_AVX2_INLINE __m256 gelu_erf8(__m256 x) {
    const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    const __m256 half_xe = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x),
                                         erfc_nonneg8(_mm256_mul_ps(ax, _mm256_set1_ps(kSqrtHalf))));
    const __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    return _mm256_blendv_ps(_mm256_sub_ps(x, half_xe), half_xe, neg);
}

template <int OP>
MNEMO_AVX2 void binary_run_avx2(const float* a, const float* b, float* y, int64_t len) {
    int64_t t = 0;
    for (; t + 8 <= len; t += 8) {
        const __m256 va = _mm256_loadu_ps(a + t), vb = _mm256_loadu_ps(b + t);
        _mm256_storeu_ps(y + t, OP == MNEMO_OP_ADD ? _mm256_add_ps(va, vb) : _mm256_mul_ps(va, vb));
    }
    for (; t < len; ++t) y[t] = OP == MNEMO_OP_ADD ? a[t] + b[t] : a[t] * b[t];
}

template <int OP>
MNEMO_AVX2 void binary_avx2(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    int64_t b0, b1;
    if (!my_range(p, ith, nth, &b0, &b1)) return;
    const float* a = static_cast<const float*>(p.in[0]);
    const float* b = static_cast<const float*>(p.in[1]);
    float* y = static_cast<float*>(p.out);
    const int64_t nb = numel(p.node.inputs[1]);
    if (nb == 1) {  // scalar b: no segments at all
        const __m256 vb = _mm256_set1_ps(b[0]);
        int64_t i = b0;
        for (; i + 8 <= b1; i += 8) {
            const __m256 va = _mm256_loadu_ps(a + i);
            _mm256_storeu_ps(y + i, OP == MNEMO_OP_ADD ? _mm256_add_ps(va, vb) : _mm256_mul_ps(va, vb));
        }
        for (; i < b1; ++i) y[i] = OP == MNEMO_OP_ADD ? a[i] + b[0] : a[i] * b[0];
        return;
    }
    int64_t i = b0;
    while (i < b1) {
        const int64_t j = i % nb;
        const int64_t len = b1 - i < nb - j ? b1 - i : nb - j;
        binary_run_avx2<OP>(a + i, b + j, y + i, len);
        i += len;
    }
}

template <int OP>
MNEMO_AVX2 void unary_avx2(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    int64_t b0, b1;
    if (!my_range(p, ith, nth, &b0, &b1)) return;
    const float* x = static_cast<const float*>(p.in[0]);
    const float* u = static_cast<const float*>(p.in[1]);  // SWIGLU only
    float* y = static_cast<float*>(p.out);
    const float s = p.node.fparams[0], hi = p.node.fparams[1];
    int64_t i = b0;
    for (; i < b1; i += 8) {
        const int64_t left = b1 - i;
        // Full vectors normally; the row tail goes through masked loads and stores so the
        // vector and scalar paths never disagree within one tensor.
        const __m256i mask = avx2::tail_mask(left < 8 ? left : 8);
        const __m256 v = _mm256_maskload_ps(x + i, mask);
        __m256 r;
        if constexpr (OP == MNEMO_OP_SCALE) r = _mm256_mul_ps(_mm256_set1_ps(s), v);
        // maxps / minps return their second operand when either is NaN: x goes second, so NaN stays.
        else if constexpr (OP == MNEMO_OP_CLAMP) r = _mm256_min_ps(_mm256_set1_ps(hi), _mm256_max_ps(_mm256_set1_ps(s), v));
        else if constexpr (OP == MNEMO_OP_SILU) r = silu8(v);
        else if constexpr (OP == MNEMO_OP_GELU) r = gelu8(v);
        else if constexpr (OP == kGeluErf) r = gelu_erf8(v);
        else r = _mm256_mul_ps(silu8(v), _mm256_maskload_ps(u + i, mask));
        _mm256_maskstore_ps(y + i, mask, r);
    }
}

#endif

template <int OP>
KernelFn pick(Isa isa) {
    constexpr bool binary = OP == MNEMO_OP_ADD || OP == MNEMO_OP_MUL;
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (isa == Isa::Avx2) {
        if constexpr (binary) return binary_avx2<OP>;
        else return unary_avx2<OP>;
    }
#endif
    if constexpr (binary) return binary_scalar<OP>;
    else return unary_scalar<OP>;
}

}  // namespace

KernelFn select_elementwise(PreparedNode& p, Isa isa) {
    p.scratch_floats = 0;
    switch (p.node.op) {
        case MNEMO_OP_ADD: return pick<MNEMO_OP_ADD>(isa);
        case MNEMO_OP_MUL: return pick<MNEMO_OP_MUL>(isa);
        case MNEMO_OP_SCALE: return pick<MNEMO_OP_SCALE>(isa);
        case MNEMO_OP_SILU: return pick<MNEMO_OP_SILU>(isa);
        case MNEMO_OP_GELU: return p.node.iparams[0] == 1 ? pick<kGeluErf>(isa) : pick<MNEMO_OP_GELU>(isa);
        case MNEMO_OP_SWIGLU: return pick<MNEMO_OP_SWIGLU>(isa);
        case MNEMO_OP_CLAMP: return pick<MNEMO_OP_CLAMP>(isa);
        default: return nullptr;
    }
}

void register_elementwise_kernels() {
    for (int32_t op : {MNEMO_OP_ADD, MNEMO_OP_MUL, MNEMO_OP_SCALE, MNEMO_OP_SILU, MNEMO_OP_GELU, MNEMO_OP_SWIGLU, MNEMO_OP_CLAMP})
        register_kernel(op, {select_elementwise, nullptr, nullptr});
}

}  // namespace mnemo_cpu
