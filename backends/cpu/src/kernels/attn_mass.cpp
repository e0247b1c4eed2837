// ATTN_MASS: the attention mass each counted key token receives from the counted tokens of its
// own sequence (Memory3 token selection; formula in mnemo_abi.h).
//
// One task per (token i0, kv group g); only the task whose i0 is the first counted token of its
// sequence does work: it owns out[j, g] for every token j of that sequence, so threads never
// write the same element and the result does not depend on scheduling (no atomics, no second
// pass). Inside, for each member i and query head h of the group: the scores of i against all
// members (one D-long dot each), their max and exp-sum (the denominator, in double), then
// exp(s - max) / sum is added into the group's per-key mass. Quadratic in a sequence's length,
// which the op is meant for (references of at most a few hundred tokens). Load balance is per
// (sequence, kv group): enough tasks for a small pool; a single sequence with one kv group would
// run on one thread.
#include <cmath>
#include <cstdint>

#include "arch/x86/simd_avx2.hpp"
#include "kernel_api.hpp"

namespace mnemo_cpu {
namespace {

struct MassArgs {
    const float* q;  // [N, Hq, D]
    const float* k;  // [N, Hkv, D]
    const int32_t* seq;
    const int32_t* pos;
    float* y;        // [N, Hkv]
    int64_t n, hq, hkv, d, group, first;
    bool softmax;  // mode 0
    float scale;
};

MassArgs mass_args(const PreparedNode& p) {
    const mnemo_node& nd = p.node;
    MassArgs a;
    a.q = static_cast<const float*>(p.in[0]);
    a.k = static_cast<const float*>(p.in[1]);
    a.seq = static_cast<const int32_t*>(p.in[2]);
    a.pos = static_cast<const int32_t*>(p.in[3]);
    a.y = static_cast<float*>(p.out);
    a.n = nd.inputs[0].shape[0];
    a.hq = nd.inputs[0].shape[1];
    a.d = nd.inputs[0].shape[2];
    a.hkv = nd.inputs[1].shape[1];
    a.group = a.hq / a.hkv;
    a.first = nd.iparams[1];
    a.softmax = nd.iparams[0] == 0;
    a.scale = nd.fparams[0];
    return a;
}

bool counted(const MassArgs& a, int64_t t) { return a.seq[t] >= 0 && a.pos[t] >= a.first; }

float dot_scalar(const float* x, const float* y, int64_t d) {
    float s = 0.0f;
    for (int64_t i = 0; i < d; ++i) s += x[i] * y[i];
    return s;
}


#if defined(MNEMO_HAVE_AVX2_KERNELS)
// Called from the generic task below, so not inlined into it (which has no AVX2 target).
MNEMO_AVX2 float dot_avx2(const float* x, const float* y, int64_t d) { return avx2::dot(x, y, d); }
#endif

// The sequence task (i0, g): scratch holds the member list (as i32), the scores of one query
// row and the group's mass per member, N floats each.
template <bool AVX2>
void sequence_mass(const MassArgs& a, int64_t i0, int64_t g, float* scratch) {
    for (int64_t i = 0; i < i0; ++i)
        if (counted(a, i) && a.seq[i] == a.seq[i0]) return;  // not the sequence's first token
    int32_t* member = reinterpret_cast<int32_t*>(scratch);
    float* score = scratch + a.n;
    float* mass = score + a.n;
    int64_t count = 0;
    for (int64_t j = i0; j < a.n; ++j)
        if (counted(a, j) && a.seq[j] == a.seq[i0]) member[count++] = static_cast<int32_t>(j);
    for (int64_t m = 0; m < count; ++m) mass[m] = 0.0f;

    for (int64_t mi = 0; mi < count; ++mi) {
        for (int64_t h = g * a.group; h < (g + 1) * a.group; ++h) {
            const float* qr = a.q + (static_cast<int64_t>(member[mi]) * a.hq + h) * a.d;
            float mx = -INFINITY;
            for (int64_t mj = 0; mj < count; ++mj) {
                const float* kr = a.k + (static_cast<int64_t>(member[mj]) * a.hkv + g) * a.d;
#if defined(MNEMO_HAVE_AVX2_KERNELS)
                if constexpr (AVX2) score[mj] = a.scale * dot_avx2(qr, kr, a.d);
                else score[mj] = a.scale * dot_scalar(qr, kr, a.d);
#else
                score[mj] = a.scale * dot_scalar(qr, kr, a.d);
#endif
                mx = std::fmax(mx, score[mj]);
            }
            if (!a.softmax) {  // mode 1: the raw exp of each score
                for (int64_t mj = 0; mj < count; ++mj) mass[mj] += std::exp(score[mj]);
                continue;
            }
            double sum = 0.0;
            for (int64_t mj = 0; mj < count; ++mj) {
                score[mj] = std::exp(score[mj] - mx);
                sum += score[mj];
            }
            const float inv = static_cast<float>(1.0 / sum);
            for (int64_t mj = 0; mj < count; ++mj) mass[mj] += score[mj] * inv;
        }
    }
    for (int64_t m = 0; m < count; ++m) a.y[static_cast<int64_t>(member[m]) * a.hkv + g] = mass[m];
}

template <bool AVX2>
void attn_mass_kernel(const KernelCall& call, int ith, int nth) {
    const MassArgs a = mass_args(*call.node);
    float* scratch = call.scratch + static_cast<size_t>(ith) * call.scratch_stride;
    // Uncounted tokens get 0 (no sequence task writes them); a static split, they are cheap.
    int64_t r0, r1;
    split_range(a.n, ith, nth, 1, &r0, &r1);
    for (int64_t t = r0; t < r1; ++t)
        if (!counted(a, t))
            for (int64_t g = 0; g < a.hkv; ++g) a.y[t * a.hkv + g] = 0.0f;
    const int64_t tasks = a.n * a.hkv;
    for (;;) {
        const int64_t t = call.next_task->fetch_add(1, std::memory_order_relaxed);
        if (t >= tasks) break;
        const int64_t i0 = t / a.hkv, g = t % a.hkv;
        if (counted(a, i0)) sequence_mass<AVX2>(a, i0, g, scratch);
    }
}

}  // namespace

KernelFn select_attn_mass(PreparedNode& p, Isa isa) {
    // member list, one score row and the mass row: N each.
    p.scratch_floats = static_cast<size_t>(3 * p.node.inputs[0].shape[0]);
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (isa == Isa::Avx2) return attn_mass_kernel<true>;
#endif
    return attn_mass_kernel<false>;
}

// Every query row against the keys of its sequence (bound: all N).
double attn_mass_work(const mnemo_node& n) { return static_cast<double>(numel(n.inputs[0])) * static_cast<double>(n.inputs[0].shape[0]); }

void register_attn_mass_kernels() { register_kernel(MNEMO_OP_ATTN_MASS, {select_attn_mass, attn_mass_work, nullptr}); }

}  // namespace mnemo_cpu
