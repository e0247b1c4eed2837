// GET_ROWS (embedding lookup, table rows widened to f32; block-quantized rows dequantized) and
// KV_STORE (copy new keys/values into the cache, converted on store into an f16 or q8_0 cache:
// F16C halves, the reference q8_0 quantizer, so a backend-written cache is bit-identical to the
// reference's). Both move whole rows; the indices are data, so
// check_rows_indices validates them before every run: a bad token id or position must produce an
// error, never a wild write.
#include <cstdio>
#include <cstring>

#include "arch/x86/simd_avx2.hpp"
#include "kernel_api.hpp"
#include "kv_rows.hpp"
#include "mnemo/io/ggml_type.hpp"
#include "mnemo/quant/ggml_quants.hpp"
#include "scalar_math.hpp"

namespace mnemo_cpu {

#if defined(MNEMO_HAVE_AVX2_KERNELS)
// f16/bf16 table row -> f32; defined below with the AVX2 target attribute.
MNEMO_AVX2 void widen_row_avx2(const void* src, int32_t dtype, float* dst, int64_t c);
#endif

namespace {

void get_rows_range(const PreparedNode& p, int ith, int nth, int64_t* r0, int64_t* r1) {
    split_range(p.node.inputs[1].shape[0], ith, nth, 1, r0, r1);  // small nodes run inline (node_work)
}

template <bool AVX2>
void get_rows_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_tensor& table = p.node.inputs[0];
    const int64_t c = table.shape[1];
    const int32_t* idx = static_cast<const int32_t*>(p.in[1]);
    float* y = static_cast<float*>(p.out);
    int64_t r0, r1;
    get_rows_range(p, ith, nth, &r0, &r1);
    if (mnemo::dtype_is_quantized(static_cast<mnemo::DType>(table.dtype))) {
        // A block-quantized table: each selected row through the reference dequantizer.
        const auto dt = static_cast<mnemo::DType>(table.dtype);
        const uint64_t row_bytes = mnemo::dtype_bytes(dt, c);
        for (int64_t r = r0; r < r1; ++r)
            mnemo::dequantize_row(mnemo::ggml_type_of_dtype(dt), static_cast<const char*>(p.in[0]) + static_cast<uint64_t>(idx[r]) * row_bytes,
                                  y + r * c, c);
        return;
    }
    const size_t esize = table.dtype == MNEMO_DTYPE_F32 ? 4 : 2;
    for (int64_t r = r0; r < r1; ++r) {
        const void* src = static_cast<const char*>(p.in[0]) + static_cast<size_t>(idx[r]) * static_cast<size_t>(c) * esize;
        float* dst = y + r * c;
        if (table.dtype == MNEMO_DTYPE_F32) {
            std::memcpy(dst, src, static_cast<size_t>(c) * sizeof(float));
            continue;
        }
        int64_t i = 0;
#if defined(MNEMO_HAVE_AVX2_KERNELS)
        if constexpr (AVX2) {
            widen_row_avx2(src, table.dtype, dst, c);
            i = c;
        }
#endif
        for (; i < c; ++i) dst[i] = load_weight(src, table.dtype, static_cast<size_t>(i));
    }
}

template <int DT, bool AVX2>
void kv_store_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_tensor& cache = p.node.inputs[0];
    const mnemo_tensor& src_t = p.node.inputs[1];
    const int64_t n = src_t.shape[0], h = src_t.shape[1], d = src_t.shape[2];
    const int64_t c = cache.shape[2];
    const uint64_t row_bytes = dtype_row_bytes(DT, d);
    const float* src = static_cast<const float*>(p.in[1]);
    const int32_t* seq = static_cast<const int32_t*>(p.in[2]);
    const int32_t* pos = static_cast<const int32_t*>(p.in[3]);
    char* dst = static_cast<char*>(p.out);  // the cache itself
    int64_t r0, r1;
    split_range(n * h, ith, nth, 1, &r0, &r1);
    for (int64_t r = r0; r < r1; ++r) {
        const int64_t t = r / h, head = r % h;
        const int64_t row = (static_cast<int64_t>(seq[t]) * h + head) * c + pos[t];
        char* out = dst + static_cast<uint64_t>(row) * row_bytes;
        const float* in = src + r * d;
        if constexpr (DT == MNEMO_DTYPE_F32) {
            std::memcpy(out, in, static_cast<size_t>(d) * sizeof(float));
        } else if constexpr (DT == MNEMO_DTYPE_F16) {
            uint16_t* half = reinterpret_cast<uint16_t*>(out);
#if defined(MNEMO_HAVE_AVX2_KERNELS)
            if constexpr (AVX2) {
                kv::store_f16_avx2(in, half, d);
                continue;
            }
#endif
            for (int64_t i = 0; i < d; ++i) half[i] = mnemo::f32_to_f16(in[i]);
        } else {
            mnemo::quantize_row(mnemo::ggml_type_of_dtype(mnemo::DType::Q8_0), in, out, d);
        }
    }
}

// f32 rows are copied; f16 rows converted (F16C when the CPU has it); q8_0 rows quantized by the
// reference quantizer (a few rows per step: not worth a kernel of its own).
KernelFn select_kv_store(const PreparedNode& p, Isa isa) {
    (void)isa;  // without AVX2 kernels every dtype has one portable kernel
    switch (p.node.inputs[0].dtype) {
        case MNEMO_DTYPE_F16:
#if defined(MNEMO_HAVE_AVX2_KERNELS)
            if (isa == Isa::Avx2) return kv_store_kernel<MNEMO_DTYPE_F16, true>;
#endif
            return kv_store_kernel<MNEMO_DTYPE_F16, false>;
        case MNEMO_DTYPE_Q8_0: return kv_store_kernel<MNEMO_DTYPE_Q8_0, false>;
        default: return kv_store_kernel<MNEMO_DTYPE_F32, false>;
    }
}

}  // namespace

#if defined(MNEMO_HAVE_AVX2_KERNELS)
MNEMO_AVX2 void widen_row_avx2(const void* src, int32_t dtype, float* dst, int64_t c) {
    int64_t i = 0;
    for (; i + 8 <= c; i += 8) _mm256_storeu_ps(dst + i, avx2::load8_any(src, dtype, static_cast<size_t>(i)));
    for (; i < c; ++i) dst[i] = avx2::load1_any(src, dtype, static_cast<size_t>(i));
}
#endif

bool check_rows_indices(const PreparedNode& p, char* message, size_t cap) {
    if (p.node.op == MNEMO_OP_GET_ROWS) {
        const int64_t rows = p.node.inputs[0].shape[0];
        const int64_t n = p.node.inputs[1].shape[0];
        const int32_t* idx = static_cast<const int32_t*>(p.in[1]);
        for (int64_t i = 0; i < n; ++i)
            if (idx[i] < 0 || idx[i] >= rows) {
                std::snprintf(message, cap, "get_rows: index %lld is %d, outside the table's %lld rows",
                              static_cast<long long>(i), idx[i], static_cast<long long>(rows));
                return false;
            }
        return true;
    }
    const int64_t s = p.node.inputs[0].shape[0], c = p.node.inputs[0].shape[2];
    const int64_t n = p.node.inputs[1].shape[0];
    const int32_t* seq = static_cast<const int32_t*>(p.in[2]);
    const int32_t* pos = static_cast<const int32_t*>(p.in[3]);
    for (int64_t i = 0; i < n; ++i) {
        if (seq[i] < 0 || seq[i] >= s) {
            std::snprintf(message, cap, "kv_store: seq[%lld] is %d, the cache holds %lld sequences",
                          static_cast<long long>(i), seq[i], static_cast<long long>(s));
            return false;
        }
        if (pos[i] < 0 || pos[i] >= c) {
            std::snprintf(message, cap, "kv_store: pos[%lld] is %d, outside the cache's %lld positions",
                          static_cast<long long>(i), pos[i], static_cast<long long>(c));
            return false;
        }
    }
    return true;
}

KernelFn select_rows(PreparedNode& p, Isa isa) {
    p.scratch_floats = 0;
    if (p.node.op == MNEMO_OP_KV_STORE) return select_kv_store(p, isa);
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (isa == Isa::Avx2) return get_rows_kernel<true>;
#endif
    return get_rows_kernel<false>;
}

// KV_STORE moves one row of the cache per source row.
double kv_store_work(const mnemo_node& n) { return static_cast<double>(numel(n.inputs[1])); }

void register_rows_kernels() {
    register_kernel(MNEMO_OP_GET_ROWS, {select_rows, nullptr, check_rows_indices});
    register_kernel(MNEMO_OP_KV_STORE, {select_rows, kv_store_work, check_rows_indices});
}

}  // namespace mnemo_cpu
