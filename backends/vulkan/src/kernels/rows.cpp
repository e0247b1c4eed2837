// GET_ROWS (embedding lookup, rows widened to f32; block-quantized rows dequantized by
// shaders/quant.glsl, bit-exact with the CPU reference) and KV_STORE (new keys/values into the cache,
// in place): shaders/rows/rows.comp and kv_store.comp. Both only move rows, so they are
// bandwidth-bound; each picks a vector variant (16-byte loads and stores) when the row width and
// the tensors' alignment allow it. Indices are data: the shaders validate them, report the first
// bad one through the status word and skip its row (the graph then fails the run), so a bad
// token id or position never reads or writes out of bounds.
#include <algorithm>
#include <cstdint>
#include <string>

#include "kernel_api.hpp"

namespace mnemo_vk {
namespace {

constexpr uint32_t kLocal = 256;
// Element indices used inside a shader stay below 2^31: an access chain index is signed.
constexpr uint64_t kMaxIndex = 0x7FFFFFFFull;

bool aligned16(uint64_t address) { return (address & 15u) == 0; }

// ------------------------------------------------------------------ GET_ROWS

struct GetRowsPush {
    WeightArg table;
    uint64_t idx, out;
    uint32_t rows, cols, n, node, rows_per_z;
};

bool get_rows_supported(const DeviceFeatures&, const mnemo_node& n) {
    const mnemo_tensor& table = n.inputs[0];
    if (dtype_is_quantized(table.dtype) ? !quant_tensor_ok(table) : !is_weight_dtype(table.dtype)) return false;
    if (n.inputs[1].dtype != MNEMO_DTYPE_I32 || n.output.dtype != MNEMO_DTYPE_F32)
        return false;
    // A row's byte width and the row count are 32-bit shader values (row starts are 64-bit).
    return table.shape[0] <= static_cast<int64_t>(kMaxIndex) && static_cast<uint64_t>(table.shape[1]) * 4 <= 0xFFFFFFFFull &&
           numel(n.inputs[1]) <= kMaxIndex;
}

void build_get_rows(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& table = n.inputs[0];
    GetRowsPush p{};
    p.table = KernelBuilder::weight(table);
    p.idx = KernelBuilder::address(n.inputs[1]);
    p.out = KernelBuilder::address(n.output);
    p.rows = static_cast<uint32_t>(table.shape[0]);
    p.cols = static_cast<uint32_t>(table.shape[1]);
    p.n = static_cast<uint32_t>(numel(n.inputs[1]));
    p.node = b.node_index();
    if (p.n == 0 || p.cols == 0) return;
    const uint32_t* max = b.features().max_workgroup_count;
    p.rows_per_z = std::min(p.n, max[1]);
    if (const char* q = quant_tag(table.dtype)) {
        // One thread per quad of 4 weights (C is a whole number of blocks of 32 or 256).
        b.dispatch((std::string("get_rows_") + q).c_str(), p, groups_for(p.cols / 4, kLocal), p.rows_per_z,
                   groups_for(p.n, p.rows_per_z));
        return;
    }
    const uint64_t table_at = KernelBuilder::address(table), out_at = KernelBuilder::address(n.output);
    const bool wide = table.dtype == MNEMO_DTYPE_F32;
    // Every row starts 16-byte aligned when the first does and the row width is a multiple of 16 bytes.
    const bool vec = aligned16(table_at) && aligned16(out_at) && p.cols % (wide ? 4 : 8) == 0;
    const char* shader = !vec ? "get_rows" : wide ? "get_rows_f32x4" : "get_rows_w16x8";
    const uint32_t units = vec ? p.cols / (wide ? 4 : 8) : p.cols;
    b.dispatch(shader, p, groups_for(units, kLocal), p.rows_per_z, groups_for(p.n, p.rows_per_z));
}

// ------------------------------------------------------------------ KV_STORE

struct KvStorePush {
    uint64_t cache, src, seq, pos;
    uint32_t seqs, heads, ctx, units, total, node, row_groups;
};

bool kv_store_supported(const DeviceFeatures&, const mnemo_node& n) {
    const mnemo_tensor& cache = n.inputs[0];
    if (n.inputs[1].dtype != MNEMO_DTYPE_F32) return false;
    // An f32 or f16 cache (kv_store_f16 packs two halves per word; kv_store_f16_odd, for an odd
    // D, numbers the cache's elements in 32 bits), or q8_0 (kv_store_q8_0: a block per
    // invocation, starting on an even byte; the op rule makes D a multiple of 32).
    if (cache.dtype == MNEMO_DTYPE_F16) {
        if (cache.offset % 4 != 0 || (cache.shape[3] % 2 != 0 && numel(cache) > 0xFFFFFFFFull)) return false;
    } else if (cache.dtype == MNEMO_DTYPE_Q8_0) {
        if (cache.offset % 2 != 0 || cache.shape[3] % 32 != 0) return false;
    } else if (cache.dtype != MNEMO_DTYPE_F32) {
        return false;
    }
    if (n.inputs[2].dtype != MNEMO_DTYPE_I32 || n.inputs[3].dtype != MNEMO_DTYPE_I32) return false;
    // The output is the cache itself: the kernel writes only the new rows, so distinct output
    // memory would miss the rest of the cache.
    if (n.output.buffer != cache.buffer || n.output.offset != cache.offset) return false;
    // Cache rows (S*H*C of them) are addressed by a 32-bit row number, a 32-bit row width in
    // bytes and a 64-bit start.
    const uint64_t d = static_cast<uint64_t>(std::max<int64_t>(cache.shape[3], 1));
    return numel(cache) / d <= 0xFFFFFFFFull && d * 4 <= 0xFFFFFFFFull && numel(n.inputs[1]) <= kMaxIndex;
}

void build_kv_store(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& cache = n.inputs[0];
    const mnemo_tensor& src = n.inputs[1];
    KvStorePush p{};
    p.cache = KernelBuilder::address(cache);
    p.src = KernelBuilder::address(src);
    p.seq = KernelBuilder::address(n.inputs[2]);
    p.pos = KernelBuilder::address(n.inputs[3]);
    p.seqs = static_cast<uint32_t>(cache.shape[0]);
    p.heads = static_cast<uint32_t>(cache.shape[1]);
    p.ctx = static_cast<uint32_t>(cache.shape[2]);
    const uint32_t d = static_cast<uint32_t>(cache.shape[3]);
    const bool f16 = cache.dtype == MNEMO_DTYPE_F16, q8 = cache.dtype == MNEMO_DTYPE_Q8_0;
    const bool vec = !f16 && !q8 && d % 4 == 0 && aligned16(p.cache) && aligned16(p.src);
    const bool odd = f16 && d % 2 != 0;
    p.units = q8 ? d / 32 : f16 && !odd ? d / 2 : vec ? d / 4 : d;
    p.total = static_cast<uint32_t>(static_cast<uint64_t>(src.shape[0]) * p.heads * p.units);
    p.node = b.node_index();
    if (p.total == 0) return;
    // A 2D grid keeps the x count under the device limit.
    const uint32_t groups = groups_for(p.total, kLocal);
    p.row_groups = std::min(groups, b.features().max_workgroup_count[0]);
    const char* shader = q8 ? "kv_store_q8_0" : odd ? "kv_store_f16_odd" : f16 ? "kv_store_f16" : vec ? "kv_store_vec4" : "kv_store";
    Dispatch& dispatch = b.dispatch(shader, p, p.row_groups, groups_for(groups, p.row_groups));
    // The cache is written, never read: only src, seq and pos are inputs of the copy.
    dispatch.reads = {KernelBuilder::range(src), KernelBuilder::range(n.inputs[2]), KernelBuilder::range(n.inputs[3])};
}

}  // namespace

void register_rows_kernels() {
    register_kernel(MNEMO_OP_GET_ROWS, Kernel{get_rows_supported, nullptr, build_get_rows, /*reads_quantized=*/true});
    register_kernel(MNEMO_OP_KV_STORE, Kernel{kv_store_supported, nullptr, build_kv_store, /*reads_quantized=*/true});
}

}  // namespace mnemo_vk
