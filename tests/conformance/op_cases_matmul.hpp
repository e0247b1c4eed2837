// Conformance cases of MATMUL.
#pragma once

#include "conformance/op_case.hpp"

namespace mnemo::conformance::detail {

inline void matmul(std::vector<OpCase>& out) {
    for (DType dt : kWeightTypes)
        for (int64_t n : {1, 2, 7, 32})
            for (int64_t k : {64, 100, 4096})
                for (int64_t m : {1, 17, 256, 4096}) {
                    OpCase c;
                    c.name = "matmul_N" + std::to_string(n) + "_K" + std::to_string(k) + "_M" + std::to_string(m) + "_" +
                             dt_name(dt);
                    c.op = MNEMO_OP_MATMUL;
                    c.inputs = {f32({n, k}), weight(dt, {m, k}, 0.05f)};
                    out.push_back(c);
                }
    // Leading dimensions beyond rows, and inner sizes that leave every vector tail non-empty.
    struct Extra { std::vector<int64_t> x; int64_t m; DType dt; };
    for (const Extra& e : {Extra{{2, 3, 100}, 17, DType::F32}, Extra{{2, 1, 3, 64}, 33, DType::F16},
                           Extra{{5, 1}, 9, DType::F32}, Extra{{3, 7}, 5, DType::BF16}, Extra{{4, 33}, 130, DType::F16},
                           Extra{{1, 4097}, 31, DType::BF16}}) {
        OpCase c;
        c.name = "matmul_x" + dims_name(e.x) + "_M" + std::to_string(e.m) + "_" + dt_name(e.dt);
        c.op = MNEMO_OP_MATMUL;
        c.inputs = {f32(e.x), weight(e.dt, {e.m, e.x.back()}, 0.1f)};
        out.push_back(c);
    }
    // Around the switch from mat-vec (N <= 8) to tiled GEMM and across tile edges (GPU tiles are
    // 32..128 wide along N and M, 8..16 deep along K): N 8/9, odd K (no paired 16-bit loads),
    // K a multiple of 8 but not of 16, M and N one past a tile, a big-tile shape, and an M so
    // large that the decode grid needs a second dimension (> 65535 groups).
    struct Edge { int64_t n, k, m; };
    for (DType dt : kWeightTypes)
        for (const Edge& e : {Edge{8, 72, 33}, Edge{9, 37, 65}, Edge{64, 96, 64}, Edge{67, 130, 129},
                              Edge{130, 40, 1030}, Edge{2, 8, 270000}}) {
            OpCase c;
            c.name = "matmul_edge_N" + std::to_string(e.n) + "_K" + std::to_string(e.k) + "_M" + std::to_string(e.m) + "_" +
                     dt_name(dt);
            c.op = MNEMO_OP_MATMUL;
            c.inputs = {f32({e.n, e.k}), weight(dt, {e.m, e.k}, 0.1f)};
            out.push_back(c);
        }
}

// Small and awkward sizes (from the CPU module's former self-test): decode with K below one vector
// (1, 7) or exactly one (8), odd K past several vector widths (1030, 2051) with N and M that are no
// tile multiple, and N = 70 (several row tiles, split over threads), and K = 0: an empty sum,
// zeros (once a division by the last dim in the GPU modules' row count).
inline void matmul_tails(std::vector<OpCase>& out) {
    struct Shape { int64_t n, k, m; };
    for (DType dt : kWeightTypes)
        for (const Shape& s : {Shape{1, 1, 1}, Shape{1, 7, 5}, Shape{1, 8, 4}, Shape{1, 64, 33}, Shape{2, 33, 13},
                               Shape{3, 17, 7}, Shape{4, 16, 6}, Shape{5, 64, 11}, Shape{9, 100, 7}, Shape{13, 1030, 9},
                               Shape{37, 2051, 23}, Shape{1, 2048, 515}, Shape{70, 40, 130}, Shape{1, 0, 3},
                               Shape{12, 0, 70}}) {
            OpCase c;
            c.name = "matmul_tail_N" + std::to_string(s.n) + "_K" + std::to_string(s.k) + "_M" + std::to_string(s.m) + "_" +
                     dt_name(dt);
            c.op = MNEMO_OP_MATMUL;
            c.inputs = {f32({s.n, s.k}), weight(dt, {s.m, s.k}, 0.1f)};
            out.push_back(c);
        }
}

inline void matmul_cases(std::vector<OpCase>& out) {
    matmul(out);
    matmul_tails(out);
}

}  // namespace mnemo::conformance::detail
