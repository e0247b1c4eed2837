// Shared pieces of the naive op references (ops_reference*.cpp): the view of a node's tensors
// and one function per op in the family files. See ops_reference.cpp for the rules all of them
// follow (plain loops, double accumulation, data-dependent indices checked with a message).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"

namespace mnemo::reference {

// A read-only view of one input tensor.
struct In {
    const void* data;
    DType dtype;
    TensorShape shape;

    float f(int64_t i) const { return load_as_f32(data, dtype, static_cast<size_t>(i)); }
    int32_t i32(int64_t i) const { return static_cast<const int32_t*>(data)[i]; }
    int64_t dim(int32_t d) const { return shape.shape[d]; }
    int64_t last() const { return shape.shape[shape.ndim - 1]; }
    int64_t numel() const { return shape.numel(); }
};

struct Ctx {
    const mnemo_node& node;
    const char* name;
    std::vector<In> in;
    float* out;
    int64_t out_numel;

    [[noreturn]] void fail(const std::string& what) const { throw Error(std::string(name) + ": " + what); }
};

// Product of every dimension but the last: the number of rows an op over the last axis sees.
// (numel / last would divide by zero when the last dimension is empty.)
inline int64_t leading_rows(const TensorShape& s) {
    int64_t rows = 1;
    for (int32_t i = 0; i + 1 < s.ndim; ++i) rows *= s.shape[i];
    return rows;
}

// Memory-layer ops (ops_reference_memory.cpp: top-k and bags; ops_reference_product_keys.cpp;
// ops_reference_lookup.cpp: index pipeline, gates, HIVE; ops_reference_moe.cpp).
void argtopk(const Ctx& c);
void take_along(const Ctx& c);
void embedding_bag(const Ctx& c);
void pk_score(const Ctx& c);
void pk_topk(const Ctx& c);
void pk_pair_scores(const Ctx& c);
void mem_index(const Ctx& c);
void peer_gate(const Ctx& c);
void hive(const Ctx& c);
void moe_ffn(const Ctx& c);
void vq_decode(const Ctx& c);  // ops_reference_vq.cpp

// ARGTOPK's order: value descending, NaN below every number (ties are left to a stable sort).
bool ranks_before(float a, float b);

}  // namespace mnemo::reference
