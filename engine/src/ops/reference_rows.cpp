// References of the rows family: GET_ROWS (the embedding lookup; a block-quantized table's rows
// decoded by the reference dequantizer) and KV_STORE (the cache write, each row rounded into the
// cache's dtype: f16 round-to-nearest-even, q8_0 by the reference quantizer).
#include <cstring>
#include <string>

#include "mnemo/io/ggml_type.hpp"
#include "mnemo/quant/ggml_quants.hpp"
#include "ops/reference_detail.hpp"

namespace mnemo::reference {

void get_rows(const Ctx& c) {
    const In& table = c.in[0];
    const In& idx = c.in[1];
    const int64_t rows = table.dim(0), cols = table.dim(1);
    for (int64_t n = 0; n < idx.numel(); ++n) {
        const int64_t r = idx.i32(n);
        if (r < 0 || r >= rows)
            c.fail("index " + std::to_string(n) + " is row " + std::to_string(r) + ", table has " +
                   std::to_string(rows) + " rows");
        table.row_f32(r, c.out + n * cols);  // a quantized table row through the dequantizer
    }
}

void kv_store(const Ctx& c) {
    const In& cache = c.in[0];
    const In& src = c.in[1];
    const In& seq = c.in[2];
    const In& pos = c.in[3];
    const int64_t n_seq = cache.dim(0), heads = cache.dim(1), ctx_len = cache.dim(2), d = cache.dim(3);
    // Validate every row before writing anything, so a bad node leaves the cache untouched.
    for (int64_t n = 0; n < src.dim(0); ++n) check_seq_pos(c, seq, pos, n, n_seq, ctx_len);
    // The output is the cache. When a caller hands distinct memory for the two, the output first
    // receives the cache's current contents so the result is the same either way.
    const DType dt = cache.dtype;
    const uint64_t row_bytes = dtype_bytes(dt, d);
    char* out = reinterpret_cast<char*>(c.out);
    if (static_cast<const void*>(out) != cache.data)
        std::memmove(out, cache.data, static_cast<size_t>(dtype_bytes(dt, cache.numel())));
    std::vector<float> row(static_cast<size_t>(d));
    for (int64_t n = 0; n < src.dim(0); ++n) {
        const int64_t s = seq.i32(n), p = pos.i32(n);
        for (int64_t h = 0; h < heads; ++h) {
            for (int64_t j = 0; j < d; ++j) row[static_cast<size_t>(j)] = src.f((n * heads + h) * d + j);
            char* dst = out + static_cast<uint64_t>((s * heads + h) * ctx_len + p) * row_bytes;
            if (dt == DType::F32) {
                std::memcpy(dst, row.data(), static_cast<size_t>(row_bytes));
            } else if (dt == DType::F16) {
                for (int64_t j = 0; j < d; ++j) reinterpret_cast<uint16_t*>(dst)[j] = f32_to_f16(row[static_cast<size_t>(j)]);
            } else {
                quantize_row(ggml_type_of_dtype(dt), row.data(), dst, d);
            }
        }
    }
}

}  // namespace mnemo::reference
