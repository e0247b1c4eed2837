// ROPE: rotate pairs of x[n, h, :] by (pos[n] + offset) * inv_freq[j]. The cos/sin table of a
// token is computed once per thread and token (in double, so long positions keep their precision)
// and reused for all heads of that token. The shifted position is summed in int64: exact, and
// negative sums (a memory block encoded before position 0) need nothing special.
#include <cmath>
#include <cstring>

#include "arch/x86/simd_avx2.hpp"
#include "kernel_api.hpp"

namespace mnemo_cpu {
namespace {

struct RopeArgs {
    const float* x;
    const int32_t* pos;
    const float* inv_freq;
    float* y;
    int64_t n, h, d, half;  // half = R / 2
    int64_t offset;         // i[2], added to every position
    bool interleaved;
};

RopeArgs rope_args(const PreparedNode& p) {
    const mnemo_node& nd = p.node;
    return RopeArgs{static_cast<const float*>(p.in[0]), static_cast<const int32_t*>(p.in[1]),
                    static_cast<const float*>(p.in[2]), static_cast<float*>(p.out),
                    nd.inputs[0].shape[0], nd.inputs[0].shape[1], nd.inputs[0].shape[2],
                    nd.iparams[1] / 2, nd.iparams[2], nd.iparams[0] == 1};
}

void fill_table(const RopeArgs& a, int64_t token, float* cos_t, float* sin_t) {
    const double p = static_cast<double>(static_cast<int64_t>(a.pos[token]) + a.offset);
    for (int64_t j = 0; j < a.half; ++j) {
        const double angle = p * static_cast<double>(a.inv_freq[j]);
        cos_t[j] = static_cast<float>(std::cos(angle));
        sin_t[j] = static_cast<float>(std::sin(angle));
    }
}

// Rotation of one head row with the portable loop; also used for the interleaved layout on every
// ISA (it is rare and its pairs are adjacent, which plain loops handle well enough).
void rotate_row_scalar(const RopeArgs& a, const float* x, float* y, const float* c, const float* s) {
    if (a.interleaved) {
        for (int64_t j = 0; j < a.half; ++j) {
            const float x0 = x[2 * j], x1 = x[2 * j + 1];
            y[2 * j] = x0 * c[j] - x1 * s[j];
            y[2 * j + 1] = x0 * s[j] + x1 * c[j];
        }
    } else {
        for (int64_t j = 0; j < a.half; ++j) {
            const float x0 = x[j], x1 = x[j + a.half];
            y[j] = x0 * c[j] - x1 * s[j];
            y[j + a.half] = x0 * s[j] + x1 * c[j];
        }
    }
    if (y != x)
        for (int64_t i = 2 * a.half; i < a.d; ++i) y[i] = x[i];
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)
MNEMO_AVX2 void rotate_row_avx2(const RopeArgs& a, const float* x, float* y, const float* c, const float* s) {
    if (a.interleaved) {
        rotate_row_scalar(a, x, y, c, s);
        return;
    }
    int64_t j = 0;
    for (; j + 8 <= a.half; j += 8) {
        const __m256 x0 = _mm256_loadu_ps(x + j), x1 = _mm256_loadu_ps(x + j + a.half);
        const __m256 vc = _mm256_loadu_ps(c + j), vs = _mm256_loadu_ps(s + j);
        _mm256_storeu_ps(y + j, _mm256_fmsub_ps(x0, vc, _mm256_mul_ps(x1, vs)));
        _mm256_storeu_ps(y + j + a.half, _mm256_fmadd_ps(x0, vs, _mm256_mul_ps(x1, vc)));
    }
    for (; j < a.half; ++j) {
        const float x0 = x[j], x1 = x[j + a.half];
        y[j] = x0 * c[j] - x1 * s[j];
        y[j + a.half] = x0 * s[j] + x1 * c[j];
    }
    if (y != x)
        for (int64_t i = 2 * a.half; i < a.d; ++i) y[i] = x[i];
}
#endif

template <bool AVX2>
void rope_kernel(const KernelCall& call, int ith, int nth) {
    const RopeArgs a = rope_args(*call.node);
    int64_t r0, r1;
    split_range(a.n * a.h, ith, nth, 1, &r0, &r1);
    float* cos_t = call.scratch + static_cast<size_t>(ith) * call.scratch_stride;
    float* sin_t = cos_t + a.half;
    int64_t table_token = -1;
    for (int64_t r = r0; r < r1; ++r) {
        const int64_t token = r / a.h;
        if (token != table_token) {
            fill_table(a, token, cos_t, sin_t);
            table_token = token;
        }
        const float* x = a.x + r * a.d;
        float* y = a.y + r * a.d;
#if defined(MNEMO_HAVE_AVX2_KERNELS)
        if constexpr (AVX2) {
            rotate_row_avx2(a, x, y, cos_t, sin_t);
            continue;
        }
#endif
        rotate_row_scalar(a, x, y, cos_t, sin_t);
    }
}

}  // namespace

KernelFn select_rope(PreparedNode& p, Isa isa) {
    p.scratch_floats = static_cast<size_t>(p.node.iparams[1]);  // cos and sin, R/2 each
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (isa == Isa::Avx2) return rope_kernel<true>;
#endif
    return rope_kernel<false>;
}

void register_rope_kernels() { register_kernel(MNEMO_OP_ROPE, {select_rope, nullptr, nullptr}); }

}  // namespace mnemo_cpu
