// The lookup family (a memory layer's value retrieval): MEM_INDEX (UltraMem's virtual index ->
// table row pipeline), PEER_GATE (the pre-value gate of PEER / UltraMemV2) and HIVE (MIDUS's
// head-wise bag over a shared latent bank); EMBEDDING_BAG's kernel is in lookup_bag.cpp.
//
// MEM_INDEX is a few integer operations per index. PEER_GATE is one dot product of a gathered
// row per entry: entries are split between threads, and each row is read once. HIVE is a bag over
// the latent bank (lookup_bag.hpp, as EMBEDDING_BAG) followed by that head's small r x Dh projection;
// its tasks run head by head so that a thread keeps one head's projection in cache.
#include <climits>
#include <cmath>
#include <cstdio>
#include <string>

#include "lookup_bag.hpp"
#include "dot.hpp"
#include "kernel_api.hpp"
#include "scalar_math.hpp"
#include "vector_isa.hpp"

namespace mnemo_cpu {
namespace {

// ------------------------------------------------------------------ MEM_INDEX

struct MemIndexParams {
    int64_t value_num, offset, rows, groups;
    bool with_group;
};

MemIndexParams mem_index_params(const mnemo_node& n) {
    return {n.iparams[0], n.iparams[1], n.iparams[2], n.iparams[3], n.iparams[4] != 0};
}

// Indices were validated before the run (check_lookup_indices), so every s here is in
// 0..G*value_num-1.
void mem_index_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const MemIndexParams q = mem_index_params(p.node);
    const int32_t* v = static_cast<const int32_t*>(p.in[0]);
    const int32_t* shuffle = p.node.n_inputs > 1 ? static_cast<const int32_t*>(p.in[1]) : nullptr;
    auto* out = static_cast<int32_t*>(p.out);
    int64_t i0, i1;
    split_range(numel(p.node.inputs[0]), ith, nth, 16, &i0, &i1);
    for (int64_t i = i0; i < i1; ++i) {
        const int64_t s = shuffle ? shuffle[v[i]] : v[i];
        const int64_t g = s / q.value_num, row = (s - g * q.value_num + q.offset) % q.rows;
        out[i] = static_cast<int32_t>(q.with_group ? g * q.rows + row : row);
    }
}

bool check_mem_index(const PreparedNode& p, char* message, size_t cap) {
    const MemIndexParams q = mem_index_params(p.node);
    const int32_t* v = static_cast<const int32_t*>(p.in[0]);
    const bool shuffled = p.node.n_inputs > 1;
    const int32_t* shuffle = shuffled ? static_cast<const int32_t*>(p.in[1]) : nullptr;
    const int64_t size = shuffled ? p.node.inputs[1].shape[0] : 0;
    const int64_t count = numel(p.node.inputs[0]);
    for (int64_t i = 0; i < count; ++i) {
        if (shuffled && (v[i] < 0 || v[i] >= size)) {
            std::snprintf(message, cap, "mem_index: virtual index %lld is %d, outside the shuffle's 0..%lld",
                          static_cast<long long>(i), v[i], static_cast<long long>(size - 1));
            return false;
        }
        const int64_t s = shuffled ? shuffle[v[i]] : v[i];
        if (s < 0 || s / q.value_num >= q.groups) {
            std::snprintf(message, cap,
                          "mem_index: virtual index %lld %s %lld, whose group s / value_num = %lld is outside 0..%lld "
                          "(value_num %lld, %lld groups)",
                          static_cast<long long>(i), shuffled ? "shuffles to" : "is", static_cast<long long>(s),
                          static_cast<long long>(s < 0 ? -1 : s / q.value_num), static_cast<long long>(q.groups - 1),
                          static_cast<long long>(q.value_num), static_cast<long long>(q.groups));
            return false;
        }
    }
    return true;
}

// ------------------------------------------------------------------ PEER_GATE

enum Activation : int64_t { kActNone = 0, kActGeluErf = 1, kActGeluTanh = 2 };

inline float activate(float v, int64_t act) {
    if (act == kActGeluErf) return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    if (act == kActGeluTanh) return gelu_tanh_scalar(v);
    return v;
}

template <int DT>
float row_dot_scalar(const void* row, const float* x, int64_t width) {
    float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int64_t d = 0;
    for (; d + 4 <= width; d += 4) {
        a0 += weight_at<DT>(row, static_cast<size_t>(d)) * x[d];
        a1 += weight_at<DT>(row, static_cast<size_t>(d + 1)) * x[d + 1];
        a2 += weight_at<DT>(row, static_cast<size_t>(d + 2)) * x[d + 2];
        a3 += weight_at<DT>(row, static_cast<size_t>(d + 3)) * x[d + 3];
    }
    for (; d < width; ++d) a0 += weight_at<DT>(row, static_cast<size_t>(d)) * x[d];
    return (a0 + a1) + (a2 + a3);
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)
template <int DT>
MNEMO_AVX2 float row_dot_avx2(const void* row, const float* x, int64_t width) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int64_t d = 0;
    for (; d + 32 <= width; d += 32) {
        const size_t at = static_cast<size_t>(d);
        a0 = _mm256_fmadd_ps(avx2::load8<DT>(row, at), _mm256_loadu_ps(x + d), a0);
        a1 = _mm256_fmadd_ps(avx2::load8<DT>(row, at + 8), _mm256_loadu_ps(x + d + 8), a1);
        a2 = _mm256_fmadd_ps(avx2::load8<DT>(row, at + 16), _mm256_loadu_ps(x + d + 16), a2);
        a3 = _mm256_fmadd_ps(avx2::load8<DT>(row, at + 24), _mm256_loadu_ps(x + d + 24), a3);
    }
    for (; d + 8 <= width; d += 8)
        a0 = _mm256_fmadd_ps(avx2::load8<DT>(row, static_cast<size_t>(d)), _mm256_loadu_ps(x + d), a0);
    float sum = avx2::hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; d < width; ++d) sum += avx2::load1<DT>(row, static_cast<size_t>(d)) * x[d];
    return sum;
}
#endif

#if defined(MNEMO_HAVE_NEON_KERNELS)
template <int DT>
float row_dot_neon(const void* row, const float* x, int64_t width) {
    float32x4_t a[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    int64_t d = 0;
    for (; d + 16 <= width; d += 16)
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i)
            a[i] = vfmaq_f32(a[i], neon::load4<DT>(row, static_cast<size_t>(d + 4 * i)), vld1q_f32(x + d + 4 * i));
    for (; d + 4 <= width; d += 4) a[0] = vfmaq_f32(a[0], neon::load4<DT>(row, static_cast<size_t>(d)), vld1q_f32(x + d));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(a[0], a[1]), vaddq_f32(a[2], a[3])));
    for (; d < width; ++d) sum += neon::load1<DT>(row, static_cast<size_t>(d)) * x[d];
    return sum;
}
#endif

// DT of a block-quantized table (any of them): its rows are read block by block (lookup_quant.hpp).
constexpr int kPackedTable = -1;

// VECTOR: this build's vector kernels (AVX2 or NEON, vector_isa.hpp).
template <int DT, bool VECTOR>
void peer_gate_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_tensor& table = p.node.inputs[0];
    const mnemo_tensor& sc = p.node.inputs[3];
    const int64_t rows = table.shape[0], width = table.shape[1];
    const int64_t m = p.node.inputs[1].shape[1], per_entry = sc.ndim == 3 ? sc.shape[2] : 1;
    const int64_t act = p.node.iparams[0];
    const size_t row_bytes = dtype_row_bytes(table.dtype, width);
    const char* base = static_cast<const char*>(p.in[0]);
    const int32_t* idx = static_cast<const int32_t*>(p.in[1]);
    const float* x = static_cast<const float*>(p.in[2]);
    const float* s = static_cast<const float*>(p.in[3]);
    float* out = static_cast<float*>(p.out);
    int64_t e0, e1;
    split_range(numel(p.node.inputs[1]), ith, nth, 1, &e0, &e1);
    for (int64_t e = e0; e < e1; ++e) {
        const char* row = base + static_cast<size_t>(idx[e] % rows) * row_bytes;
        const float* xn = x + (e / m) * width;
        float dot;
        if constexpr (DT == kPackedTable) {
            if (e + 1 < e1) __builtin_prefetch(base + static_cast<size_t>(idx[e + 1] % rows) * row_bytes);
            dot = row_dot_quant(VECTOR, table.dtype, row, xn, width);
        } else
#if defined(MNEMO_HAVE_AVX2_KERNELS)
        if constexpr (VECTOR) {
            if (e + 1 < e1) _mm_prefetch(base + static_cast<size_t>(idx[e + 1] % rows) * row_bytes, _MM_HINT_T0);
            dot = row_dot_avx2<DT>(row, xn, width);
        } else
#elif defined(MNEMO_HAVE_NEON_KERNELS)
        if constexpr (VECTOR) {
            if (e + 1 < e1) __builtin_prefetch(base + static_cast<size_t>(idx[e + 1] % rows) * row_bytes);
            dot = row_dot_neon<DT>(row, xn, width);
        } else
#endif
        {
            dot = row_dot_scalar<DT>(row, xn, width);
        }
        const float a = activate(dot, act);
        for (int64_t k = 0; k < per_entry; ++k) out[e * per_entry + k] = a * s[e * per_entry + k];
    }
}

bool check_peer_gate(const PreparedNode& p, char* message, size_t cap) {
    const int32_t* idx = static_cast<const int32_t*>(p.in[1]);
    const int64_t count = numel(p.node.inputs[1]), m = p.node.inputs[1].shape[1];
    for (int64_t i = 0; i < count; ++i) {
        if (idx[i] < 0) {
            std::snprintf(message, cap, "peer_gate: token %lld entry %lld is index %d; indices must be >= 0",
                          static_cast<long long>(i / m), static_cast<long long>(i % m), idx[i]);
            return false;
        }
        if (p.node.inputs[0].shape[0] == 0) {
            std::snprintf(message, cap, "peer_gate: the pre-value table has no rows, but the indices name entries");
            return false;
        }
    }
    return true;
}

// ------------------------------------------------------------------ HIVE

// Per-thread scratch of a HIVE task: the gathered bank rows and their weights, the head's
// projection rows, and the latent vector that weights them.
struct HiveScratch {
    const char** bank_rows;
    const char** proj_rows;
    float* w;
    float* latent;
};

HiveScratch hive_scratch(const KernelCall& call, int ith, int64_t m, int64_t rank) {
    float* base = call.scratch + static_cast<size_t>(ith) * call.scratch_stride;
    HiveScratch s;
    s.bank_rows = reinterpret_cast<const char**>(base);
    s.proj_rows = reinterpret_cast<const char**>(base + 2 * m);  // a pointer takes the room of two floats
    s.w = base + 2 * m + 2 * rank;
    s.latent = s.w + m;
    return s;
}

size_t hive_scratch_floats(int64_t m, int64_t rank) { return static_cast<size_t>(3 * m + 3 * rank); }

template <bool VECTOR>
void hive_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_tensor& bank = p.node.inputs[0];
    const mnemo_tensor& proj = p.node.inputs[3];
    const int64_t rank = bank.shape[1], n_tok = p.node.inputs[1].shape[0], heads = p.node.inputs[1].shape[1];
    const int64_t m = p.node.inputs[1].shape[2], dh = proj.shape[2];
    const size_t bank_row_bytes = dtype_row_bytes(bank.dtype, rank);
    const size_t proj_row_bytes = static_cast<size_t>(dh) * (proj.dtype == MNEMO_DTYPE_F32 ? 4 : 2);
    const char* bank_base = static_cast<const char*>(p.in[0]);
    const char* proj_base = static_cast<const char*>(p.in[3]);
    const int32_t* idx = static_cast<const int32_t*>(p.in[1]);
    const float* w = static_cast<const float*>(p.in[2]);
    float* out = static_cast<float*>(p.out);
    const HiveScratch s = hive_scratch(call, ith, m, rank);
    int64_t t0, t1, have_head = -1;
    split_range(heads * n_tok, ith, nth, 1, &t0, &t1);
    for (int64_t t = t0; t < t1; ++t) {
        const int64_t h = t / n_tok, n = t % n_tok, bag = n * heads + h;
        if (h != have_head) {
            for (int64_t k = 0; k < rank; ++k) s.proj_rows[k] = proj_base + static_cast<size_t>(h * rank + k) * proj_row_bytes;
            have_head = h;
        }
        for (int64_t j = 0; j < m; ++j) {
            s.bank_rows[j] = bank_base + static_cast<size_t>(idx[bag * m + j]) * bank_row_bytes;
            s.w[j] = w[bag * m + j];
        }
        bag_columns_for(VECTOR, bank.dtype, BagRows{s.bank_rows, s.w, m}, 0, rank, s.latent);
        // latent [r] x proj[h] [r, Dh]: the same weighted row sum, over the projection's rows.
        bag_columns_for(VECTOR, proj.dtype, BagRows{s.proj_rows, s.latent, rank}, 0, dh, out + bag * dh);
    }
}

bool check_hive(const PreparedNode& p, char* message, size_t cap) {
    const int32_t* idx = static_cast<const int32_t*>(p.in[1]);
    const mnemo_tensor& it = p.node.inputs[1];
    const int64_t rows = p.node.inputs[0].shape[0], heads = it.shape[1], m = it.shape[2];
    for (int64_t i = 0; i < numel(it); ++i)
        if (idx[i] < 0 || idx[i] >= rows) {
            std::snprintf(message, cap, "hive: token %lld head %lld entry %lld is row %d, the bank has %lld rows",
                          static_cast<long long>(i / (heads * m)), static_cast<long long>(i / m % heads),
                          static_cast<long long>(i % m), idx[i], static_cast<long long>(rows));
            return false;
        }
    return true;
}

template <template <int, bool> class Kernel, bool VECTOR>
KernelFn by_dtype(int32_t dtype) {
    switch (dtype) {
        case MNEMO_DTYPE_F16: return Kernel<MNEMO_DTYPE_F16, VECTOR>::fn;
        case MNEMO_DTYPE_BF16: return Kernel<MNEMO_DTYPE_BF16, VECTOR>::fn;
        default: return Kernel<MNEMO_DTYPE_F32, VECTOR>::fn;
    }
}

template <int DT, bool VECTOR>
struct PeerGate {
    static constexpr KernelFn fn = peer_gate_kernel<DT, VECTOR>;
};

KernelFn select_mem_index(PreparedNode&, Isa) { return mem_index_kernel; }

KernelFn select_peer_gate(PreparedNode& p, Isa isa) {
    if (mnemo::dtype_is_quantized(static_cast<mnemo::DType>(p.node.inputs[0].dtype)))
        return has_vector_kernels(isa) ? peer_gate_kernel<kPackedTable, true> : peer_gate_kernel<kPackedTable, false>;
    if (has_vector_kernels(isa)) return by_dtype<PeerGate, true>(p.node.inputs[0].dtype);
    return by_dtype<PeerGate, false>(p.node.inputs[0].dtype);
}

// A P-long dot product per entry.
double peer_gate_work(const mnemo_node& n) { return static_cast<double>(numel(n.inputs[1])) * static_cast<double>(n.inputs[0].shape[1]); }

KernelFn select_hive(PreparedNode& p, Isa isa) {
    p.scratch_floats = hive_scratch_floats(p.node.inputs[1].shape[2], p.node.inputs[0].shape[1]);
    return has_vector_kernels(isa) ? hive_kernel<true> : hive_kernel<false>;
}

// The latent bag (m x r per head), then an r x Dh projection per head.
double hive_work(const mnemo_node& n) {
    return static_cast<double>(numel(n.inputs[1])) * static_cast<double>(n.inputs[0].shape[1]) +
           static_cast<double>(numel(n.output)) * static_cast<double>(n.inputs[0].shape[1]);
}

}  // namespace

// MEM_INDEX costs a few integer operations per index: the default work (its output's elements).
void register_lookup_kernels() {
    register_kernel(MNEMO_OP_EMBEDDING_BAG, {select_embedding_bag, embedding_bag_work, check_embedding_bag});
    register_kernel(MNEMO_OP_MEM_INDEX, {select_mem_index, nullptr, check_mem_index});
    register_kernel(MNEMO_OP_PEER_GATE, {select_peer_gate, peer_gate_work, check_peer_gate});
    register_kernel(MNEMO_OP_HIVE, {select_hive, hive_work, check_hive});
}

}  // namespace mnemo_cpu
