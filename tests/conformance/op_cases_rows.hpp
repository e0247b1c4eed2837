// Conformance cases of the rows family: GET_ROWS and KV_STORE.
#pragma once

#include "conformance/op_case.hpp"

namespace mnemo::conformance::detail {

inline void get_rows(std::vector<OpCase>& out) {
    struct Shape { int64_t rows, cols, n; };
    // C = 1030: rows of no vector width (4 or 8) spanning several 256-wide blocks.
    for (Shape sh : {Shape{32, 64, 1}, Shape{1000, 17, 7}, Shape{50, 4096, 5}, Shape{3, 1, 4}, Shape{40, 1030, 3}}) {
        for (DType dt : kWeightTypes) {
            OpCase c;
            c.name = "get_rows_R" + std::to_string(sh.rows) + "_C" + std::to_string(sh.cols) + "_N" +
                     std::to_string(sh.n) + "_" + dt_name(dt);
            c.op = MNEMO_OP_GET_ROWS;
            CaseRng rng(name_seed(c.name) ^ 1);
            std::vector<int32_t> idx;
            // First and last row always, to catch off-by-one row addressing; repeats allowed.
            for (int64_t i = 0; i < sh.n; ++i)
                idx.push_back(i == 0 ? static_cast<int32_t>(sh.rows - 1) : i == 1 ? 0 : rng.below(static_cast<int32_t>(sh.rows)));
            c.inputs = {weight(dt, {sh.rows, sh.cols}), i32(idx)};
            out.push_back(c);
        }
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

inline void rows_cases(std::vector<OpCase>& out) {
    get_rows(out);
    kv_store(out);
}

}  // namespace mnemo::conformance::detail
