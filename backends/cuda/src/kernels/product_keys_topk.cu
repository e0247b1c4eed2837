// PK_TOPK: the two-stage product-key top-k, exact like ARGTOPK (topk_common.cuh, topk_sort.cuh).
// Its scores are formed in double as the reference does, operation by operation and in its
// order; __dmul_rn / __dadd_rn keep nvcc from contracting a multiply and an add into an fma,
// which would skip a rounding the reference does. Stage-1 sums are rounded once to f32
// (__double2float_rn) and ranked as f32 keys; stage-2 pair scores are ranked as double keys.
#include <algorithm>
#include <climits>

#include "device_common.cuh"
#include "product_keys.cuh"
#include "topk_common.cuh"
#include "topk_sort.cuh"

namespace mnemo_cuda {

using namespace topk;

namespace {

struct PkParams {
    const float* s;  // [N, 2H, Nk, Rk]
    WeightPtr u, v;  // Tucker: [H, Rk]
    WeightPtr core[kMaxCores];
    int32_t* out;    // [N, H, k]
    Key96* keys;     // global path: the batch's pair keys, rows x p2; nullptr on the shared path
    uint32_t* aux;   // global path: the batch's candidate lists, rows x (I1[m], I2[m])
    uint64_t row0;   // first (token, head) row of this launch
    uint64_t rows;   // rows in this launch
    uint32_t heads, nk, rank, m, k, cores, p2;
};

// Stage-1 score of sub-key j of one side (srow = that side's [Nk, Rk] scores), as the
// reference forms it: additive, the f32 score itself (Rk = 1); Tucker, sum_r w[h, r] S[j, r]
// accumulated in double from 0 in r order, rounded once to f32.
__device__ float pk_side_score(const PkParams& p, const float* srow, WeightPtr w, uint32_t h, uint32_t j) {
    if (p.cores == 0) return srow[j];
    const uint64_t rank = p.rank;
    double acc = 0.0;
    for (uint64_t r = 0; r < rank; ++r)
        acc = __dadd_rn(acc, __dmul_rn(static_cast<double>(load_weight(w, h * rank + r)), static_cast<double>(srow[j * rank + r])));
    return __double2float_rn(acc);
}

// Stage-2 score of rows i (side 0) and j (side 1) in double, in the reference's order: additive
// s1 + s2 (exact for two f32); Tucker t = 0 + sum over cores of (0 + sum_r1 sum_r2
// (S1[i,r1] * core[h,r1,r2]) * S2[j,r2]).
__device__ double pk_pair_score(const PkParams& p, const float* s1, const float* s2, uint32_t h, uint32_t i, uint32_t j) {
    if (p.cores == 0) return __dadd_rn(static_cast<double>(s1[i]), static_cast<double>(s2[j]));
    const uint64_t rank = p.rank, base = h * rank * rank;
    const float* x = s1 + i * rank;
    const float* y = s2 + j * rank;
    double t = 0.0;
    for (uint32_t c = 0; c < p.cores; ++c) t = __dadd_rn(t, tucker_form(x, y, p.core[c], base, rank));
    return t;
}

// One block per (token, head) row: stage 1 on each side into the candidate lists, then stage 2
// (shared path: select the k best pairs and write the output; global path: store the lists and
// every pair's key for the sort in scratch).
__global__ void __launch_bounds__(kThreads) pk_topk_rows(PkParams p) {
    __shared__ Key96 buf[kPkCap];
    __shared__ uint32_t cand[kPkCap];  // I1 in [0, m), I2 in [m, 2m); m <= kPkCap / 2
    __shared__ uint32_t count;
    const uint64_t side_len = uint64_t{p.nk} * p.rank;
    const uint32_t m = p.m, pairs = m * m;
    for (uint64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {  // uniform per block
        const uint64_t row = p.row0 + r, n = row / p.heads;
        const uint32_t h = static_cast<uint32_t>(row % p.heads);
        const float* s1 = p.s + (n * 2 * p.heads + 2 * uint64_t{h}) * side_len;
        const float* s2 = s1 + side_len;
        for (uint32_t side = 0; side < 2; ++side) {
            const float* srow = side == 0 ? s1 : s2;
            const WeightPtr w = side == 0 ? p.u : p.v;
            auto side_key = [&](uint32_t j) {
                return Key96{f32_rank_key(__float_as_uint(pk_side_score(p, srow, w, h, j))), ~j, 0u};
            };
            block_top(buf, kPkCap, p.nk, m, side_key, &count);
            for (uint32_t a = threadIdx.x; a < m; a += blockDim.x) cand[side * m + a] = key_index(buf[a]);
            __syncthreads();  // lists visible; buf read before it is reused
        }
        auto pair_key = [&](uint32_t q) {
            const uint32_t a = q / m, bb = q - a * m;
            const double t = pk_pair_score(p, s1, s2, h, cand[a], cand[m + bb]);
            return Key96{f64_rank_key(static_cast<uint64_t>(__double_as_longlong(t))), ~q, 0u};
        };
        if (p.keys == nullptr) {
            block_top(buf, kPkCap, pairs, p.k, pair_key, &count);
            int32_t* o = p.out + row * p.k;
            for (uint32_t q = threadIdx.x; q < p.k; q += blockDim.x) {
                const uint32_t pr = key_index(buf[q]);  // a real pair: m*m >= k of them rank above padding
                const uint32_t a = pr / m, bb = pr - a * m;
                o[q] = static_cast<int32_t>(uint64_t{cand[a]} * p.nk + cand[m + bb]);
            }
        } else {
            uint32_t* lists = p.aux + r * 2 * m;
            for (uint32_t a = threadIdx.x; a < 2 * m; a += blockDim.x) lists[a] = cand[a];
            Key96* keys = p.keys + r * p.p2;
            for (uint32_t q = threadIdx.x; q < p.p2; q += blockDim.x) keys[q] = q < pairs ? pair_key(q) : Key96{};
        }
        __syncthreads();  // buf and cand read before the next row writes them
    }
}

// Global path: the first k pairs of each sorted row as virtual indices I1[a]*Nk + I2[b].
__global__ void __launch_bounds__(kThreads) pk_topk_emit(const Key96* keys, const uint32_t* aux, int32_t* out, uint64_t row0,
                                                         uint64_t count, uint32_t p2, uint32_t k, uint32_t m, uint32_t nk) {
    const uint64_t total = count * k;
    for (uint64_t e = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; e < total;
         e += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        const uint64_t r = e / k, q = e % k;
        const uint32_t pr = key_index(keys[r * p2 + q]);
        if (pr >= m * m) continue;  // cannot happen (k <= m*m real keys sort first); never read past the lists
        const uint32_t* lists = aux + r * 2 * m;
        const uint32_t a = pr / m, bb = pr - a * m;
        out[(row0 + r) * k + q] = static_cast<int32_t>(uint64_t{lists[a]} * nk + lists[m + bb]);
    }
}

struct PkPlan {
    bool ok = false;
    bool shared = true;       // stage 2 selected in shared memory, else sorted in scratch
    uint32_t p2 = 0;          // global path: m*m rounded up to a power of two
    uint64_t batch = 0;       // global path: rows per batch
    uint64_t keys_bytes = 0;  // scratch: the batch's pair keys, then its candidate lists
    uint64_t aux_bytes = 0;
};

PkPlan pk_plan(const mnemo_node& node) {
    const mnemo_tensor& s = node.inputs[0];
    const int64_t nk = s.shape[2], m = node.iparams[0], k = node.iparams[1];
    PkPlan pl;
    if (m < 1 || m > nk || m > kPkCap / 2 || k < 1 || k > m * m) return pl;
    if (!selection_fits(static_cast<uint64_t>(nk), static_cast<uint64_t>(m), kPkCap, kThreads)) return pl;
    pl.ok = true;
    pl.shared = selection_fits(static_cast<uint64_t>(m * m), static_cast<uint64_t>(k), kPkCap, kThreads);
    if (!pl.shared) {
        const uint64_t n_rows = static_cast<uint64_t>(s.shape[0]) * static_cast<uint64_t>(s.shape[1] / 2);
        pl.p2 = pow2_ceil(static_cast<uint32_t>(m * m));
        const uint64_t lists = 2 * static_cast<uint64_t>(m) * sizeof(uint32_t);
        pl.batch = batch_rows(n_rows, uint64_t{pl.p2} * sizeof(Key96) + lists);
        pl.keys_bytes = pl.batch * pl.p2 * sizeof(Key96);
        pl.aux_bytes = pl.batch * lists;
    }
    return pl;
}

}  // namespace

bool pk_topk_supports(const DeviceProps&, const mnemo_node& node) {
    const mnemo_tensor& s = node.inputs[0];
    if (s.dtype != MNEMO_DTYPE_F32 || s.ndim != 4 || node.output.dtype != MNEMO_DTYPE_I32) return false;
    if (node.n_inputs != 1 && (node.n_inputs < 4 || node.n_inputs > 3 + kMaxCores)) return false;
    for (int32_t i = 1; i < node.n_inputs; ++i)
        if (!is_weight_dtype(node.inputs[i].dtype)) return false;
    const int64_t nk = s.shape[2];
    if (nk < 1 || nk > INT32_MAX / nk || s.shape[3] > INT32_MAX) return false;  // virtual indices fit i32
    return pk_plan(node).ok;
}

uint64_t pk_topk_scratch(const DeviceProps&, const mnemo_node& node) {
    const PkPlan pl = pk_plan(node);
    return pl.shared ? 0 : pl.keys_bytes + pl.aux_bytes;
}

void pk_topk_build(KernelBuilder& b) {
    const mnemo_node& node = b.node();
    const mnemo_tensor& s = node.inputs[0];
    const uint64_t heads = static_cast<uint64_t>(s.shape[1] / 2), n_rows = static_cast<uint64_t>(s.shape[0]) * heads;
    if (n_rows == 0) return;
    const PkPlan pl = pk_plan(node);
    if (!pl.ok) throw KernelError("pk_topk: the candidate selection does not fit the kernel's shared memory");
    PkParams p{};
    p.s = KernelBuilder::as<const float>(s);
    p.u = p.v = WeightPtr{nullptr, MNEMO_DTYPE_F32};
    for (WeightPtr& w : p.core) w = WeightPtr{nullptr, MNEMO_DTYPE_F32};
    const int cores = node.n_inputs > 1 ? node.n_inputs - 3 : 0;
    if (cores > 0) {
        p.u = weight_of(node.inputs[1]);
        p.v = weight_of(node.inputs[2]);
        for (int c = 0; c < cores; ++c) p.core[c] = weight_of(node.inputs[3 + c]);
    }
    p.out = KernelBuilder::as<int32_t>(node.output);
    p.heads = static_cast<uint32_t>(heads);
    p.nk = static_cast<uint32_t>(s.shape[2]);
    p.rank = static_cast<uint32_t>(s.shape[3]);
    p.m = static_cast<uint32_t>(node.iparams[0]);
    p.k = static_cast<uint32_t>(node.iparams[1]);
    p.cores = static_cast<uint32_t>(cores);
    if (pl.shared) {
        p.keys = nullptr;
        p.aux = nullptr;
        p.row0 = 0;
        p.rows = n_rows;
        const uint32_t grid = row_grid(b.props(), n_rows);
        b.launch([=](cudaStream_t st) {
            pk_topk_rows<<<grid, kThreads, 0, st>>>(p);
            return cudaGetLastError();
        });
        return;
    }
    p.keys = reinterpret_cast<Key96*>(b.scratch(0));
    p.aux = reinterpret_cast<uint32_t*>(b.scratch(pl.keys_bytes));
    p.p2 = pl.p2;
    for (uint64_t row0 = 0; row0 < n_rows; row0 += pl.batch) {
        const uint64_t count = std::min(pl.batch, n_rows - row0);
        PkParams pb = p;
        pb.row0 = row0;
        pb.rows = count;
        const uint32_t grid = row_grid(b.props(), count), grid_emit = sort_grid(b.props(), count * p.k);
        b.launch([=](cudaStream_t st) {
            pk_topk_rows<<<grid, kThreads, 0, st>>>(pb);
            return cudaGetLastError();
        });
        add_sort<Key96>(b, p.keys, count, p.p2);
        Key96* keys = p.keys;
        uint32_t* aux = p.aux;
        int32_t* out = p.out;
        const uint32_t p2 = p.p2, k = p.k, m = p.m, nk = p.nk;
        b.launch([=](cudaStream_t st) {
            pk_topk_emit<<<grid_emit, kThreads, 0, st>>>(keys, aux, out, row0, count, p2, k, m, nk);
            return cudaGetLastError();
        });
    }
}

}  // namespace mnemo_cuda
