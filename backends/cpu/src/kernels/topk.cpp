// The top-k family: ARGTOPK (rank product-key scores) and TAKE_ALONG (pick the scores of the
// chosen keys).
//
// ARGTOPK must return exactly the reference's indices (ties to the lower index, NaN last; see
// mnemo_ops.def), so it compares order-preserving integer keys, never floats with tolerance.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kernel_api.hpp"
#include "topk_order.hpp"

namespace mnemo_cpu {
namespace {

// ------------------------------------------------------------------ ARGTOPK

// Up to this k a row keeps a sorted list of its best k (insertion; most elements are rejected by
// one comparison with the current k-th best). Beyond it, the row is partially sorted instead:
// insertion would cost O(D k).
constexpr int64_t kInsertionMaxK = 64;

// Integers that order like the values under ARGTOPK's rules (shared with PK_TOPK).
using topk::rank_key;

struct Ranked {
    int32_t key;
    int32_t index;
};

// Rank order: larger key first, then lower index (a strict total order: results are unique).
inline bool ranks_before(const Ranked& a, const Ranked& b) {
    return a.key != b.key ? a.key > b.key : a.index < b.index;
}

// Rows scanned in index order: a newcomer ties-loses to every kept entry of equal key, so it is
// inserted after them (strict > on the key keeps the lower index first).
void topk_insertion(const float* x, int64_t d, int64_t k, Ranked* best, int32_t* out) {
    int64_t count = 0;
    for (int64_t j = 0; j < d; ++j) {
        const int32_t key = rank_key(x[j]);
        if (count == k && key <= best[k - 1].key) continue;
        int64_t pos = count < k ? count++ : k - 1;
        while (pos > 0 && best[pos - 1].key < key) {
            best[pos] = best[pos - 1];
            --pos;
        }
        best[pos] = Ranked{key, static_cast<int32_t>(j)};
    }
    for (int64_t j = 0; j < k; ++j) out[j] = best[j].index;
}

void topk_partial_sort(const float* x, int64_t d, int64_t k, Ranked* all, int32_t* out) {
    for (int64_t j = 0; j < d; ++j) all[j] = Ranked{rank_key(x[j]), static_cast<int32_t>(j)};
    std::partial_sort(all, all + k, all + d, ranks_before);
    for (int64_t j = 0; j < k; ++j) out[j] = all[j].index;
}

void argtopk_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_tensor& xt = p.node.inputs[0];
    const int64_t d = xt.shape[xt.ndim - 1], k = p.node.iparams[0], rows = outer_rows(xt);
    const float* x = static_cast<const float*>(p.in[0]);
    auto* out = static_cast<int32_t*>(p.out);
    auto* scratch = reinterpret_cast<Ranked*>(call.scratch + static_cast<size_t>(ith) * call.scratch_stride);
    int64_t r0, r1;
    split_range(rows, ith, nth, 1, &r0, &r1);
    for (int64_t r = r0; r < r1; ++r) {
        if (k <= kInsertionMaxK) topk_insertion(x + r * d, d, k, scratch, out + r * k);
        else topk_partial_sort(x + r * d, d, k, scratch, out + r * k);
    }
}

// ------------------------------------------------------------------ TAKE_ALONG

void take_along_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_tensor& xt = p.node.inputs[0];
    const mnemo_tensor& it = p.node.inputs[1];
    const int64_t d = xt.shape[xt.ndim - 1], k = it.shape[it.ndim - 1], rows = outer_rows(xt);
    const float* x = static_cast<const float*>(p.in[0]);
    const int32_t* idx = static_cast<const int32_t*>(p.in[1]);
    float* y = static_cast<float*>(p.out);
    int64_t r0, r1;
    split_range(rows, ith, nth, 1, &r0, &r1);
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = 0; j < k; ++j) y[r * k + j] = x[r * d + idx[r * k + j]];
}

KernelFn select_argtopk(PreparedNode& p, Isa) {
    const mnemo_tensor& x = p.node.inputs[0];
    const int64_t k = p.node.iparams[0];
    const int64_t entries = k <= kInsertionMaxK ? k : x.shape[x.ndim - 1];
    p.scratch_floats = static_cast<size_t>(entries) * (sizeof(Ranked) / sizeof(float));
    return argtopk_kernel;
}

double argtopk_work(const mnemo_node& n) { return static_cast<double>(numel(n.inputs[0])); }  // every score is ranked

KernelFn select_take_along(PreparedNode&, Isa) { return take_along_kernel; }

bool check_take_along(const PreparedNode& p, char* message, size_t cap) {
    const mnemo_tensor& x = p.node.inputs[0];
    return check_index_range(static_cast<const int32_t*>(p.in[1]), numel(p.node.inputs[1]), x.shape[x.ndim - 1],
                             "take_along (x has D columns)", message, cap);
}

}  // namespace

void register_topk_kernels() {
    register_kernel(MNEMO_OP_ARGTOPK, {select_argtopk, argtopk_work, nullptr});
    register_kernel(MNEMO_OP_TAKE_ALONG, {select_take_along, nullptr, check_take_along});
}

}  // namespace mnemo_cpu
