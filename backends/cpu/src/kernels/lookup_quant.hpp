// Block-quantized tables in the lookup family (EMBEDDING_BAG's value table, PEER_GATE's pre-value
// table, HIVE's latent bank; q8_0, q4_0, q4_k, q5_k, q6_k).
//
// A memory layer reads a handful of random rows out of a table far larger than any cache, so what
// the op costs is the bytes of those rows: a q8_0 row is 1.06 bytes a weight against f32's 4, a
// q4_0 row 0.56. Each block of a selected row is decoded into a few floats in L1 (the same
// dequantizers MATMUL's prefill uses, the reference's values) and consumed at once: a weighted
// add into the output segment (bag) or a dot product with the query (gate). The sum over a bag's
// entries runs in entry order for every column, as the float tables' bag_columns does, so a
// column's result does not depend on how the columns are split between threads.
#pragma once

#include <cstddef>
#include <cstdint>


namespace mnemo_cpu {

struct BagRows;

// y[c] = sum_e w[e] * row_e[c] for c in [c0, c1), the rows block-quantized in `dtype`.
// `vector`: this build's vector kernels (vector_isa.hpp) may be used.
void bag_columns_quant(bool vector, int32_t dtype, const BagRows& b, int64_t c0, int64_t c1, float* y);

// The dot product of a block-quantized row of `width` elements with x.
float row_dot_quant(bool vector, int32_t dtype, const char* row, const float* x, int64_t width);

}  // namespace mnemo_cpu
