// Conformance cases of the rows family: GET_ROWS and KV_STORE.
#pragma once

#include <limits>

#include "conformance/op_case.hpp"

namespace mnemo::conformance::detail {

// One GET_ROWS case: a [rows, cols] table of dt and n indices, the first and last row always (to
// catch off-by-one row addressing), the rest random with repeats.
inline OpCase get_rows_case(DType dt, int64_t rows, int64_t cols, int64_t n) {
    OpCase c;
    c.name = "get_rows_R" + std::to_string(rows) + "_C" + std::to_string(cols) + "_N" + std::to_string(n) + "_" + dt_name(dt);
    c.op = MNEMO_OP_GET_ROWS;
    CaseRng rng(name_seed(c.name) ^ 1);
    std::vector<int32_t> idx;
    for (int64_t i = 0; i < n; ++i)
        idx.push_back(i == 0 ? static_cast<int32_t>(rows - 1) : i == 1 ? 0 : rng.below(static_cast<int32_t>(rows)));
    c.inputs = {weight(dt, {rows, cols}), i32(idx)};
    return c;
}

inline void get_rows(std::vector<OpCase>& out) {
    struct Shape { int64_t rows, cols, n; bool exact = false; };
    // C = 1030: rows of no vector width (4 or 8) spanning several 256-wide blocks.
    // C = 13 and 4099: a vector tail after one and after 512 (8-wide) vectors; N = 9 rows split over threads.
    for (Shape sh : {Shape{32, 64, 1}, Shape{1000, 17, 7}, Shape{50, 4096, 5}, Shape{3, 1, 4}, Shape{40, 1030, 3},
                     Shape{11, 13, 9, true}, Shape{11, 4099, 9, true}}) {
        for (DType dt : kWeightTypes) {
            OpCase c = get_rows_case(dt, sh.rows, sh.cols, sh.n);
            // A copy (16-bit weights widen exactly): the two shapes from the CPU module's former
            // self-test must match bit for bit, as it required.
            if (sh.exact) c.max_nmse = std::numeric_limits<double>::denorm_min();
            out.push_back(c);
        }
    }
}

// A block-quantized table: the rows are the reference dequantizer's, so the result is exact.
inline void get_rows_quantized(std::vector<OpCase>& out) {
    struct Shape { int64_t rows, cols, n; };
    for (DType dt : kQuantizedTypes)
        for (Shape sh : {Shape{40, 256, 3}, Shape{1000, 512, 7}, Shape{11, 2304, 9}, Shape{5, 32, 4}}) {
            if (sh.cols % dtype_block(dt).elems != 0) continue;
            OpCase c = get_rows_case(dt, sh.rows, sh.cols, sh.n);
            c.max_nmse = std::numeric_limits<double>::denorm_min();
            out.push_back(c);
        }
}

inline void kv_store(std::vector<OpCase>& out) {
    struct Cfg { int64_t s, h, ctx, d; std::vector<SeqRun> runs; };
    // Every (sequence, position) pair is written once per node: duplicates would make the result
    // depend on write order, which the contract leaves open.
    for (const Cfg& cfg : {Cfg{1, 8, 64, 64, {{0, 17, 1}}}, Cfg{3, 2, 37, 17, {{0, 0, 4}, {2, 30, 7}, {1, 36, 1}}},
                           Cfg{2, 4, 128, 128, {{1, 0, 32}}}, Cfg{4, 1, 5, 33, {{3, 4, 1}, {0, 0, 5}}},
                           // odd D over several 256-wide blocks (540 scalar copies)
                           Cfg{2, 3, 50, 9, {{1, 10, 20}}}}) {
        OpCase c;
        c.op = MNEMO_OP_KV_STORE;
        std::vector<int32_t> seq, pos;
        seq_pos_of(cfg.runs, seq, pos);
        c.name = "kv_store_S" + std::to_string(cfg.s) + "_H" + std::to_string(cfg.h) + "_C" + std::to_string(cfg.ctx) +
                 "_D" + std::to_string(cfg.d) + "_" + runs_name(cfg.runs);
        const int64_t n = static_cast<int64_t>(seq.size());
        // The cache starts with random contents so rows that must stay untouched are checked too.
        c.inputs = {f32({cfg.s, cfg.h, cfg.ctx, cfg.d}), f32({n, cfg.h, cfg.d}), i32(seq), i32(pos)};
        out.push_back(c);
    }
}

// Tokens of several sequences at scattered positions: token i writes sequence i % S at position
// (5i + 2) % C, so neighbouring tokens land in different sequences and far-apart slots (from the
// CPU module's former self-test; the same shapes as attention_scattered).
struct Scattered { int64_t s, hkv, ctx, d, dv, hq, n; };
inline const std::vector<Scattered>& scattered_shapes() {
    static const std::vector<Scattered> shapes = {
        {2, 2, 9, 20, 12, 4, 3}, {1, 1, 40, 64, 64, 1, 1}, {3, 2, 17, 8, 7, 6, 5}, {1, 4, 300, 128, 128, 32, 2}};
    return shapes;
}
inline void scattered_seq_pos(const Scattered& k, std::vector<int32_t>& seq, std::vector<int32_t>& pos) {
    for (int64_t i = 0; i < k.n; ++i) {
        seq.push_back(static_cast<int32_t>(i % k.s));
        pos.push_back(static_cast<int32_t>((i * 5 + 2) % k.ctx));
    }
}

inline void kv_store_scattered(std::vector<OpCase>& out) {
    for (const Scattered& k : scattered_shapes()) {
        OpCase c;
        c.op = MNEMO_OP_KV_STORE;
        std::vector<int32_t> seq, pos;
        scattered_seq_pos(k, seq, pos);
        c.name = "kv_store_scattered_S" + std::to_string(k.s) + "_H" + std::to_string(k.hkv) + "_C" + std::to_string(k.ctx) +
                 "_D" + std::to_string(k.d) + "_N" + std::to_string(k.n);
        c.inputs = {f32({k.s, k.hkv, k.ctx, k.d}), f32({k.n, k.hkv, k.d}), i32(seq), i32(pos)};
        c.max_nmse = std::numeric_limits<double>::denorm_min();  // a copy: bit for bit
        out.push_back(c);
    }
}

inline void rows_cases(std::vector<OpCase>& out) {
    get_rows(out);
    get_rows_quantized(out);
    kv_store(out);
    kv_store_scattered(out);
}

}  // namespace mnemo::conformance::detail
