// ATTENTION for one (token, query head) per task: scores against the causal prefix of the
// sequence's cache, softmax, weighted sum of values. Two passes with the scores kept in the
// thread's scratch (sized in graph_prepare for the whole cache length), which is exact and
// cheaper than rescaling the output row for every key as a one-pass online softmax would.
// Tasks are handed out dynamically because causal rows have very different lengths in prefill.
// Consecutive tasks are heads of one token, so the query heads of a GQA group reuse the same
// k/v rows from cache.
#include <cmath>
#include <cstdio>

#include "kernel_api.hpp"
#include "simd_avx2.hpp"

namespace mnemo_cpu {
namespace {

struct AttnArgs {
    const float* q;
    const float* k;
    const float* v;
    const int32_t* seq;
    const int32_t* pos;
    float* y;
    int64_t n, hq, d, hkv, c, dv, group;
    float scale;
};

AttnArgs attn_args(const PreparedNode& p) {
    const mnemo_node& nd = p.node;
    AttnArgs a;
    a.q = static_cast<const float*>(p.in[0]);
    a.k = static_cast<const float*>(p.in[1]);
    a.v = static_cast<const float*>(p.in[2]);
    a.seq = static_cast<const int32_t*>(p.in[3]);
    a.pos = static_cast<const int32_t*>(p.in[4]);
    a.y = static_cast<float*>(p.out);
    a.n = nd.inputs[0].shape[0];
    a.hq = nd.inputs[0].shape[1];
    a.d = nd.inputs[0].shape[2];
    a.hkv = nd.inputs[1].shape[1];
    a.c = nd.inputs[1].shape[2];
    a.dv = nd.inputs[2].shape[3];
    a.group = a.hq / a.hkv;
    a.scale = nd.fparams[0];
    return a;
}

// Where one task's data lives.
struct AttnTask {
    const float* q;
    const float* k;  // first key row of the (sequence, kv head)
    const float* v;
    float* y;
    int64_t keys;  // pos + 1
};

AttnTask task_of(const AttnArgs& a, int64_t t) {
    const int64_t n = t / a.hq, h = t % a.hq, g = h / a.group;
    const int64_t kv_row = (static_cast<int64_t>(a.seq[n]) * a.hkv + g) * a.c;
    return AttnTask{a.q + t * a.d, a.k + kv_row * a.d, a.v + kv_row * a.dv, a.y + t * a.dv,
                    static_cast<int64_t>(a.pos[n]) + 1};
}

void attend_scalar(const AttnArgs& a, const AttnTask& t, float* scores, float* acc) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < t.keys; ++j) {
        const float* kr = t.k + j * a.d;
        float s = 0.0f;
        for (int64_t i = 0; i < a.d; ++i) s += t.q[i] * kr[i];
        scores[j] = s * a.scale;
        mx = std::fmax(mx, scores[j]);
    }
    double sum = 0.0;
    for (int64_t j = 0; j < t.keys; ++j) {
        scores[j] = std::exp(scores[j] - mx);
        sum += scores[j];
    }
    for (int64_t i = 0; i < a.dv; ++i) acc[i] = 0.0f;
    for (int64_t j = 0; j < t.keys; ++j) {
        const float* vr = t.v + j * a.dv;
        for (int64_t i = 0; i < a.dv; ++i) acc[i] += scores[j] * vr[i];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < a.dv; ++i) t.y[i] = acc[i] * inv;
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)
MNEMO_AVX2 void attend_avx2(const AttnArgs& a, const AttnTask& t, float* scores, float* acc) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < t.keys; ++j) {
        const float* kr = t.k + j * a.d;
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 16 <= a.d; i += 16) {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(t.q + i), _mm256_loadu_ps(kr + i), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(t.q + i + 8), _mm256_loadu_ps(kr + i + 8), s1);
        }
        if (i + 8 <= a.d) {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(t.q + i), _mm256_loadu_ps(kr + i), s0);
            i += 8;
        }
        float s = avx2::hsum(_mm256_add_ps(s0, s1));
        for (; i < a.d; ++i) s += t.q[i] * kr[i];
        scores[j] = s * a.scale;
        mx = std::fmax(mx, scores[j]);
    }
    const __m256 vmx = _mm256_set1_ps(mx);
    __m256 vsum = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= t.keys; j += 8) {
        const __m256 e = avx2::exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + j), vmx));
        _mm256_storeu_ps(scores + j, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    float sum = avx2::hsum(vsum);
    for (; j < t.keys; ++j) {
        scores[j] = std::exp(scores[j] - mx);
        sum += scores[j];
    }
    int64_t i = 0;
    for (; i + 8 <= a.dv; i += 8) _mm256_storeu_ps(acc + i, _mm256_setzero_ps());
    for (; i < a.dv; ++i) acc[i] = 0.0f;
    for (j = 0; j < t.keys; ++j) {
        const float* vr = t.v + j * a.dv;
        const __m256 pj = _mm256_set1_ps(scores[j]);
        i = 0;
        for (; i + 8 <= a.dv; i += 8)
            _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(pj, _mm256_loadu_ps(vr + i), _mm256_loadu_ps(acc + i)));
        for (; i < a.dv; ++i) acc[i] += scores[j] * vr[i];
    }
    const __m256 vinv = _mm256_set1_ps(1.0f / sum);
    i = 0;
    for (; i + 8 <= a.dv; i += 8) _mm256_storeu_ps(t.y + i, _mm256_mul_ps(_mm256_loadu_ps(acc + i), vinv));
    for (; i < a.dv; ++i) t.y[i] = acc[i] * (1.0f / sum);
}
#endif

template <bool AVX2>
void attention_kernel(const KernelCall& call, int ith, int nth) {
    const AttnArgs a = attn_args(*call.node);
    float* scores = call.scratch + static_cast<size_t>(ith) * call.scratch_stride;
    float* acc = scores + a.c;
    const int64_t tasks = a.n * a.hq;
    for (;;) {
        const int64_t t = call.next_task->fetch_add(1, std::memory_order_relaxed);
        if (t >= tasks) break;
        const AttnTask task = task_of(a, t);
#if defined(MNEMO_HAVE_AVX2_KERNELS)
        if constexpr (AVX2) {
            attend_avx2(a, task, scores, acc);
            continue;
        }
#endif
        attend_scalar(a, task, scores, acc);
    }
}

}  // namespace

bool check_attention_indices(const PreparedNode& p, char* message, size_t cap) {
    const int64_t s = p.node.inputs[1].shape[0], c = p.node.inputs[1].shape[2];
    const int64_t n = p.node.inputs[0].shape[0];
    const int32_t* seq = static_cast<const int32_t*>(p.in[3]);
    const int32_t* pos = static_cast<const int32_t*>(p.in[4]);
    for (int64_t i = 0; i < n; ++i) {
        if (seq[i] < 0 || seq[i] >= s) {
            std::snprintf(message, cap, "attention: seq[%lld] is %d, the cache holds %lld sequences",
                          static_cast<long long>(i), seq[i], static_cast<long long>(s));
            return false;
        }
        if (pos[i] < 0 || pos[i] >= c) {
            std::snprintf(message, cap, "attention: pos[%lld] is %d, outside the cache's %lld positions",
                          static_cast<long long>(i), pos[i], static_cast<long long>(c));
            return false;
        }
    }
    return true;
}

KernelFn select_attention(PreparedNode& p, Isa isa) {
    const int64_t c = p.node.inputs[1].shape[2];
    const int64_t dv = p.node.inputs[2].shape[3];
    // scores[C] then the output accumulator[Dv]; keep each thread's share on its own cache lines.
    p.scratch_floats = static_cast<size_t>((c + dv + 15) / 16 * 16);
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (isa == Isa::Avx2) return attention_kernel<true>;
#endif
    return attention_kernel<false>;
}

}  // namespace mnemo_cpu
