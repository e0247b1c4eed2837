// ATTENTION for one (token, query head) per task: scores against the optional prefix block
// (explicit memories, inputs 5..8) and the causal prefix of the sequence's cache, ONE softmax
// over both, weighted sum of values. Two passes with the scores kept in the thread's scratch
// (sized in graph_prepare for M prefix slots plus the whole cache length), which is exact and
// cheaper than rescaling the output row for every key as a one-pass online softmax would.
// Tasks are handed out dynamically because causal rows have very different lengths in prefill.
// Consecutive tasks are heads of one token, so the query heads of a GQA group reuse the same
// k/v rows from cache. The caches (and the prefix) are f32, f16 or q8_0, one dtype for all: the
// kernel is instantiated per dtype and reads rows in place (kv_rows.hpp), so an f16 or q8_0
// cache is never widened into a float copy, and the f32 instance is the code it always was.
#include <cmath>
#include <cstdio>

#include "arch/x86/simd_avx2.hpp"
#include "kernel_api.hpp"
#include "kv_rows.hpp"

namespace mnemo_cpu {
namespace {

struct AttnArgs {
    const float* q;
    const char* k;
    const char* v;
    const int32_t* seq;
    const int32_t* pos;
    float* y;
    int64_t n, hq, d, hkv, c, dv, group;
    float scale;
    uint64_t k_row = 0, v_row = 0;  // bytes of one key / value row in the cache's dtype
    // The prefix (null pk without one): pk[B, Hkv, M, D], pv[B, Hkv, M, Dv], plen[B] and the
    // block of each query (null pblock: block 0 for all).
    const char* pk = nullptr;
    const char* pv = nullptr;
    const int32_t* plen = nullptr;
    const int32_t* pblock = nullptr;
    int64_t slots = 0;  // M
};

AttnArgs attn_args(const PreparedNode& p) {
    const mnemo_node& nd = p.node;
    AttnArgs a;
    a.q = static_cast<const float*>(p.in[0]);
    a.k = static_cast<const char*>(p.in[1]);
    a.v = static_cast<const char*>(p.in[2]);
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
    a.k_row = dtype_row_bytes(nd.inputs[1].dtype, a.d);
    a.v_row = dtype_row_bytes(nd.inputs[2].dtype, a.dv);
    if (nd.n_inputs >= 8) {
        a.pk = static_cast<const char*>(p.in[5]);
        a.pv = static_cast<const char*>(p.in[6]);
        a.plen = static_cast<const int32_t*>(p.in[7]);
        a.slots = nd.inputs[5].shape[2];
        if (nd.n_inputs >= 9) a.pblock = static_cast<const int32_t*>(p.in[8]);
    }
    return a;
}

// A run of keys with their values: rows 0..count-1 of a [rows, D] / [rows, Dv] slab.
struct KeyRun {
    const char* k;
    const char* v;
    int64_t count;
};

// Where one task's data lives: the prefix slots it reads (count 0 without), then its cache rows.
struct AttnTask {
    const float* q;
    float* y;
    KeyRun runs[2];
};

AttnTask task_of(const AttnArgs& a, int64_t t) {
    const int64_t n = t / a.hq, h = t % a.hq, g = h / a.group;
    const int64_t kv_row = (static_cast<int64_t>(a.seq[n]) * a.hkv + g) * a.c;
    AttnTask task{a.q + t * a.d, a.y + t * a.dv, {}};
    task.runs[1] = {a.k + static_cast<uint64_t>(kv_row) * a.k_row, a.v + static_cast<uint64_t>(kv_row) * a.v_row,
                    static_cast<int64_t>(a.pos[n]) + 1};
    const int64_t b = a.pk ? (a.pblock ? a.pblock[n] : 0) : -1;
    if (b >= 0) {
        const int64_t slab = (b * a.hkv + g) * a.slots;
        task.runs[0] = {a.pk + static_cast<uint64_t>(slab) * a.k_row, a.pv + static_cast<uint64_t>(slab) * a.v_row, a.plen[b]};
    }
    return task;
}

template <int DT>
void attend_scalar(const AttnArgs& a, const AttnTask& t, float* scores, float* acc) {
    float mx = -INFINITY;
    int64_t at = 0;
    for (const KeyRun& r : t.runs)
        for (int64_t j = 0; j < r.count; ++j, ++at) {
            scores[at] = kv::dot_scalar<DT>(t.q, r.k + static_cast<uint64_t>(j) * a.k_row, a.d) * a.scale;
            mx = std::fmax(mx, scores[at]);
        }
    double sum = 0.0;
    for (int64_t j = 0; j < at; ++j) {
        scores[j] = std::exp(scores[j] - mx);
        sum += scores[j];
    }
    for (int64_t i = 0; i < a.dv; ++i) acc[i] = 0.0f;
    at = 0;
    for (const KeyRun& r : t.runs)
        for (int64_t j = 0; j < r.count; ++j, ++at) kv::axpy_scalar<DT>(scores[at], r.v + static_cast<uint64_t>(j) * a.v_row, acc, a.dv);
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < a.dv; ++i) t.y[i] = acc[i] * inv;
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)

template <int DT>
MNEMO_AVX2 void attend_avx2(const AttnArgs& a, const AttnTask& t, float* scores, float* acc) {
    float mx = -INFINITY;
    int64_t keys = 0;
    for (const KeyRun& r : t.runs)
        for (int64_t j = 0; j < r.count; ++j, ++keys) {
            scores[keys] = kv::dot_avx2<DT>(t.q, r.k + static_cast<uint64_t>(j) * a.k_row, a.d) * a.scale;
            mx = std::fmax(mx, scores[keys]);
        }
    const __m256 vmx = _mm256_set1_ps(mx);
    __m256 vsum = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= keys; j += 8) {
        const __m256 e = avx2::exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + j), vmx));
        _mm256_storeu_ps(scores + j, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    float sum = avx2::hsum(vsum);
    for (; j < keys; ++j) {
        scores[j] = std::exp(scores[j] - mx);
        sum += scores[j];
    }
    int64_t i = 0;
    for (; i + 8 <= a.dv; i += 8) _mm256_storeu_ps(acc + i, _mm256_setzero_ps());
    for (; i < a.dv; ++i) acc[i] = 0.0f;
    const float* p = scores;
    for (const KeyRun& r : t.runs)
        for (j = 0; j < r.count; ++j, ++p) kv::axpy_avx2<DT>(*p, r.v + static_cast<uint64_t>(j) * a.v_row, acc, a.dv);
    const __m256 vinv = _mm256_set1_ps(1.0f / sum);
    i = 0;
    for (; i + 8 <= a.dv; i += 8) _mm256_storeu_ps(t.y + i, _mm256_mul_ps(_mm256_loadu_ps(acc + i), vinv));
    for (; i < a.dv; ++i) t.y[i] = acc[i] * (1.0f / sum);
}
#endif

template <bool AVX2, int DT>
void attention_kernel(const KernelCall& call, int ith, int nth) {
    const AttnArgs a = attn_args(*call.node);
    float* scores = call.scratch + static_cast<size_t>(ith) * call.scratch_stride;
    float* acc = scores + a.slots + a.c;
    const int64_t tasks = a.n * a.hq;
    for (;;) {
        const int64_t t = call.next_task->fetch_add(1, std::memory_order_relaxed);
        if (t >= tasks) break;
        const AttnTask task = task_of(a, t);
#if defined(MNEMO_HAVE_AVX2_KERNELS)
        if constexpr (AVX2) {
            attend_avx2<DT>(a, task, scores, acc);
            continue;
        }
#endif
        attend_scalar<DT>(a, task, scores, acc);
    }
}

template <int DT>
KernelFn pick_attention(bool avx2) {
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (avx2) return attention_kernel<true, DT>;
#endif
    (void)avx2;
    return attention_kernel<false, DT>;
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
    if (p.node.n_inputs < 8) return true;
    // The prefix: every length and every query's block (negative: none), whether read or not.
    const int64_t blocks = p.node.inputs[5].shape[0], slots = p.node.inputs[5].shape[2];
    const int32_t* plen = static_cast<const int32_t*>(p.in[7]);
    for (int64_t b = 0; b < blocks; ++b)
        if (plen[b] < 0 || plen[b] > slots) {
            std::snprintf(message, cap, "attention: plen[%lld] is %d, outside 0..%lld (the prefix's slots)",
                          static_cast<long long>(b), plen[b], static_cast<long long>(slots));
            return false;
        }
    if (p.node.n_inputs < 9) return true;
    const int32_t* pblock = static_cast<const int32_t*>(p.in[8]);
    for (int64_t i = 0; i < n; ++i)
        if (pblock[i] >= blocks) {
            std::snprintf(message, cap, "attention: pblock[%lld] is %d, outside 0..%lld (the prefix's blocks; negative: none)",
                          static_cast<long long>(i), pblock[i], static_cast<long long>(blocks - 1));
            return false;
        }
    return true;
}

KernelFn select_attention(PreparedNode& p, Isa isa) {
    const int64_t c = p.node.inputs[1].shape[2];
    const int64_t dv = p.node.inputs[2].shape[3];
    const int64_t slots = p.node.n_inputs >= 8 ? p.node.inputs[5].shape[2] : 0;
    // scores[M + C] then the output accumulator[Dv]; keep each thread's share on its own cache lines.
    p.scratch_floats = static_cast<size_t>((slots + c + dv + 15) / 16 * 16);
    const bool fast = isa == Isa::Avx2;
    switch (p.node.inputs[1].dtype) {  // the shape rule made every cache input this one dtype
        case MNEMO_DTYPE_F16: return pick_attention<MNEMO_DTYPE_F16>(fast);
        case MNEMO_DTYPE_Q8_0: return pick_attention<MNEMO_DTYPE_Q8_0>(fast);
        default: return pick_attention<MNEMO_DTYPE_F32>(fast);
    }
}

// Every query row reads up to the whole cache of its sequence.
double attention_work(const mnemo_node& n) { return static_cast<double>(numel(n.inputs[0])) * static_cast<double>(n.inputs[1].shape[2]); }

void register_attention_kernels() { register_kernel(MNEMO_OP_ATTENTION, {select_attention, attention_work, check_attention_indices}); }

}  // namespace mnemo_cpu
