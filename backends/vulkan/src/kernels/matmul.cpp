// MATMUL y[N, M] = x[N, K] W[M, K]^T, W in f32/f16/bf16 or block-quantized (q8_0, q4_0, q4_k,
// q5_k, q6_k: decoded to f32 in the shaders by shaders/quant.glsl), f32 accumulation.
//
// Two kernels, split on N (rows of x):
//  - N <= kVecMaxRows (decode): shaders/matmul/matmul_vec.comp streams W once, all N rows of x per pass,
//    in the widest loads the alignment of W and x allows (16 bytes, one word, one element).
//    Bandwidth is what counts there.
//  - larger N (prefill): shaders/matmul/matmul_tiled.comp, a shared-memory tiled GEMM with register
//    micro-tiles; arithmetic is what counts there.
// Tile sizes and workgroup shapes are specialization constants, picked here from the device's
// limits (shared memory, invocations) so one SPIR-V module serves every device.
#include <algorithm>
#include <string>

#include "kernel_api.hpp"

namespace mnemo_vk {
namespace {

constexpr uint64_t kVecMaxRows = 8;      // rows of x the mat-vec kernel holds in registers
constexpr uint64_t kMaxFlat = 1ull << 31;  // flat f32 indices into x and y stay below this

struct VecPush {
    uint64_t x, y;
    WeightArg w;
    uint32_t k, m;
    uint32_t row_groups;
};
static_assert(sizeof(VecPush) == 48);

struct TiledPush {
    uint64_t x, y;
    WeightArg w;
    uint32_t k, m, n;
};
static_assert(sizeof(TiledPush) == 48);

struct Shape {
    uint64_t n, k, m;
};

Shape shape_of(const mnemo_node& node) {
    const mnemo_tensor& x = node.inputs[0];
    const int64_t k = x.ndim > 0 ? x.shape[x.ndim - 1] : 0;  // (the engine guarantees ndim >= 1)
    return {rows(x), static_cast<uint64_t>(k), static_cast<uint64_t>(node.inputs[1].shape[0])};
}

const char* dtype_tag(int32_t dt) {
    switch (dt) {
        case MNEMO_DTYPE_F16: return "f16";
        case MNEMO_DTYPE_BF16: return "bf16";
        default: return "f32";
    }
}

bool supports(const DeviceFeatures&, const mnemo_node& node) {
    if (node.n_inputs != 2 || node.inputs[0].dtype != MNEMO_DTYPE_F32 || node.output.dtype != MNEMO_DTYPE_F32)
        return false;
    const mnemo_tensor& w = node.inputs[1];
    if (dtype_is_quantized(w.dtype) ? !quant_tensor_ok(w) : !is_weight_dtype(w.dtype)) return false;
    // Every element must sit on its own alignment (the shaders read 4-byte words; a 16-bit W
    // may start on a half word, a quantized one on any even byte: quant_tensor_ok).
    if (node.inputs[0].offset % 4 != 0 || node.output.offset % 4 != 0 ||
        (!dtype_is_quantized(w.dtype) && w.offset % dtype_bytes(w.dtype) != 0))
        return false;
    // x and y are indexed flat in 32 bits; W is addressed row by row (any size).
    const Shape s = shape_of(node);
    return s.n * s.k < kMaxFlat && s.n * s.m < kMaxFlat && s.k * 4 < (1ull << 32);
}

uint32_t pow2_at_most(uint32_t v) {
    uint32_t p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
}

void build_vec(KernelBuilder& b, const Shape& s) {
    const mnemo_node& node = b.node();
    const DeviceFeatures& f = b.features();
    const mnemo_tensor& w = node.inputs[1];
    const int32_t dt = w.dtype;

    VecPush p{};
    p.x = KernelBuilder::address(node.inputs[0]);
    p.y = KernelBuilder::address(node.output);
    p.w = KernelBuilder::weight(w);
    p.k = static_cast<uint32_t>(s.k);
    p.m = static_cast<uint32_t>(s.m);

    // The widest load every row start of W and x is aligned for: 16 bytes when rows are a
    // multiple of 16 bytes and both tensors start 16-byte aligned; for 16-bit weights one word
    // (2 elements) when K is even and W starts on a word; one element otherwise.
    // A block-quantized W is decoded a block of 32 (q8_0, q4_0), 64 weights (q4_k, q5_k) or a
    // 32-weight group (q6_k) per load, at any alignment; x in vec4s when it starts 16-byte aligned (K is a multiple of 32).
    const uint64_t w_start = KernelBuilder::address(w);
    std::string variant = "matmul_vec_";
    uint32_t per_load = 1;
    if (dtype_is_quantized(dt)) {
        variant += quant_tag(dt);
        if (p.x % 16 == 0) variant += "_xvec";
        per_load = dt == MNEMO_DTYPE_Q4_K || dt == MNEMO_DTYPE_Q5_K ? 64 : 32;  // quant.glsl's Q_WIDE_ELEMS
    } else if (const uint64_t esize = dtype_bytes(dt); (s.k * esize) % 16 == 0 && w_start % 16 == 0 && p.x % 16 == 0) {
        variant += std::string(dtype_tag(dt)) + "_vec";
        per_load = static_cast<uint32_t>(16 / esize);
    } else if (esize == 2 && s.k % 2 == 0 && p.w.first == 0 && p.x % 8 == 0) {
        variant += std::string(dtype_tag(dt)) + "_word";
        per_load = 2;
    } else {
        variant += "any";
    }
    variant += f.subgroup_arithmetic ? "_sg" : "_sh";

    // Enough threads to keep each busy for a few loads along K. A power of two (the shared-
    // memory tree needs it), at least one subgroup, within the device limit.
    const uint64_t loads = s.k / per_load;
    uint32_t threads = loads <= 64 ? 32 : loads <= 256 ? 64 : 128;
    if (f.subgroup_arithmetic) threads = std::max(threads, pow2_at_most(std::min<uint32_t>(f.subgroup_size, 128)));
    threads = std::min(threads, pow2_at_most(std::max<uint32_t>(f.max_workgroup_invocations, 1)));
    // Rows of W per workgroup: 4 for short rows (fewer idle threads) and for N >= 4, where every
    // chunk of W already meets N chunks of x and more rows reuse each x load; 2 otherwise. The
    // reduction buffer (N x rows x threads floats) must fit the shared memory.
    uint32_t rows_per_group = threads <= 64 || s.n >= 4 ? 4 : 2;
    // On a CPU implementation one subgroup per workgroup (no barrier, no shared-memory step) and
    // more rows each, so a lane walks a long stretch of K: on lavapipe decode runs 1.5x faster
    // than with the GPU's shape (docs/benchmarks.md); 16 rows spill registers.
    if (f.cpu_device && f.subgroup_size > 0) {
        threads = pow2_at_most(f.subgroup_size);
        rows_per_group = s.n >= 4 ? 4 : 8;
    }
    auto shared = [&] { return s.n * rows_per_group * threads * 4; };
    while (shared() > f.max_shared_memory && rows_per_group > 1) rows_per_group /= 2;
    while (shared() > f.max_shared_memory && threads > 1) threads /= 2;
    if (shared() > f.max_shared_memory) throw KernelError("matmul: the device has too little shared memory");

    // 2D grid: M / rows_per_group can pass 65535 groups (a 128k vocabulary at 1 row per group).
    const Grid g = fold_groups(f, groups_for(s.m, rows_per_group));
    p.row_groups = g.x;
    b.dispatch(variant.c_str(), p, g.x, g.y, 1,
               {threads, static_cast<uint32_t>(s.n), rows_per_group});
}

// A tile of the GEMM: bm x bn outputs per workgroup, bk deep along K, tm x tn per thread (both
// multiples of 4: the shader reads shared memory in vec4s).
struct Tile {
    uint32_t bm, bn, bk, tm, tn;
    uint32_t threads() const { return (bm / tm) * (bn / tn); }
    uint64_t shared_bytes() const { return uint64_t{bk} * (bm + 4 + bn + 4) * 4; }  // rows padded by 4
};

// The largest tile the device takes that the problem fills: big tiles reuse each loaded value
// more (8x8 micro-tiles: 4 multiply-adds per shared read), small ones keep more workgroups busy
// and waste less on a short N. The first candidate that fits the device's shared memory and
// invocation limits wins; the last ones fit every Vulkan device.
Tile pick_tile(const DeviceFeatures& f, const Shape& s) {
    struct Candidate {
        Tile t;
        bool wanted;
    };
    const bool big = s.n >= 128 && s.m >= 1024;
    const Candidate candidates[] = {
        {{128, 128, 16, 8, 8}, big},      // 256 threads, 16.5 KiB shared
        {{128, 128, 8, 8, 8}, big},       // 256 threads, 8.3 KiB
        {{64, 32, 16, 4, 4}, s.n <= 32},  // 128 threads, 6.5 KiB: no half-empty tiles for N <= 32
        {{64, 64, 16, 4, 4}, true},       // 256 threads, 8.5 KiB
        {{64, 64, 16, 4, 8}, true},       // 128 threads (the Vulkan minimum)
        {{32, 32, 16, 4, 4}, true},       // 64 threads, 4.5 KiB
    };
    for (const Candidate& c : candidates)
        if (c.wanted && c.t.threads() <= f.max_workgroup_invocations && c.t.shared_bytes() <= f.max_shared_memory)
            return c.t;
    throw KernelError("matmul: no tile fits the device's shared memory / invocation limits");
}

void build_tiled(KernelBuilder& b, const Shape& s) {
    const mnemo_node& node = b.node();
    const mnemo_tensor& w = node.inputs[1];
    TiledPush p{};
    p.x = KernelBuilder::address(node.inputs[0]);
    p.y = KernelBuilder::address(node.output);
    p.w = KernelBuilder::weight(w);
    p.k = static_cast<uint32_t>(s.k);
    p.m = static_cast<uint32_t>(s.m);
    p.n = static_cast<uint32_t>(s.n);

    std::string variant = "matmul_tiled_";
    if (dtype_is_quantized(w.dtype)) variant += quant_tag(w.dtype);  // BK of every tile is a multiple of 4
    else if (w.dtype == MNEMO_DTYPE_F32) variant += "f32";
    else if (s.k % 2 == 0 && p.w.first == 0) variant += std::string(dtype_tag(w.dtype)) + "_word";
    else variant += "any";

    const Tile t = pick_tile(b.features(), s);
    b.dispatch(variant.c_str(), p, groups_for(s.m, t.bm), groups_for(s.n, t.bn), 1,
               {t.threads(), t.bm, t.bn, t.bk, t.tm, t.tn});
}

void build(KernelBuilder& b) {
    const Shape s = shape_of(b.node());
    if (s.n == 0 || s.m == 0) return;  // empty output
    if (s.n <= kVecMaxRows) build_vec(b, s);
    else build_tiled(b, s);
}

}  // namespace

void register_matmul_kernels() { register_kernel(MNEMO_OP_MATMUL, Kernel{supports, nullptr, build, /*reads_quantized=*/true}); }

}  // namespace mnemo_vk
