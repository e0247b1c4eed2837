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

// Block-quantized W (q8_0, q4_0, q4_k, q5_k, q6_k). The reference dequantizes W exactly and sums
// in double; a backend may quantize x to 8 bits per block of 32 for integer dot products (the CPU's
// x86 decode, and prefill with AVX-512 VNNI: arch/x86/matmul_quant_x86.inl), which moves each output by x's rounding error: an
// NMSE of about dx^2 / 12 / var(x) ~ 2e-5 for normal x (dx = max|x| / 127 of a block), times how
// much the weights vary inside a block relative to their values (K-quant codes are centred first;
// measured medians 0.6-2.2e-5, largest 1.6-5.4e-5 over cases of 33 outputs or more). The bound per
// type is about 3x its largest. A case of fewer than 32 outputs measures a ratio of few squares,
// which swings by 10x (a single output of 768 weights: 5e-4 seen): it gets 10x the bound. A path that
// dequantizes W (AVX2 prefill, the portable kernels) stays near 1e-12.
inline double quantized_matmul_nmse(DType dt, int64_t outputs) {
    double bound = 1e-7;
    switch (dt) {
        case DType::Q8_0: bound = 1e-4; break;
        case DType::Q4_0: bound = 1.6e-4; break;
        case DType::Q4_K: bound = 5e-5; break;
        case DType::Q5_K: bound = 7e-5; break;
        case DType::Q6_K: bound = 1.2e-4; break;
        default: break;
    }
    return outputs < 32 ? 10 * bound : bound;
}

inline void matmul_quantized(std::vector<OpCase>& out) {
    auto add = [&](DType dt, const std::vector<int64_t>& x, int64_t m, const std::string& name) {
        OpCase c;
        c.name = name + "_" + dt_name(dt);
        c.op = MNEMO_OP_MATMUL;
        c.inputs = {f32(x), weight(dt, {m, x.back()}, 0.05f)};
        int64_t outputs = m;
        for (size_t i = 0; i + 1 < x.size(); ++i) outputs *= x[i];
        c.max_nmse = quantized_matmul_nmse(dt, outputs);
        out.push_back(c);
    };
    // Decode (N = 1, 2; N = 5 takes two groups of x rows per W row) and prefill (N = 9, just past
    // the switch, and 37: several 32-row blocks), K = 256 and 512 (one and two K-quant blocks) and
    // 2304 (past the prefill's 1024-column K blocks, with a 256-column tail), M not a multiple of 4
    // nor of the prefill's 48-row bands (33, 259).
    for (DType dt : kQuantizedTypes)
        for (int64_t n : {1, 2, 5, 9, 37})
            for (int64_t k : {256, 512, 2304})
                for (int64_t m : {33, 259})
                    add(dt, {n, k}, m, "matmul_q_N" + std::to_string(n) + "_K" + std::to_string(k) + "_M" + std::to_string(m));
    // Leading dimensions, one row of W (against the most rows decode takes), and an odd number of
    // blocks (the decode kernels pair them).
    for (DType dt : kQuantizedTypes) {
        add(dt, {2, 1, 3, 256}, 17, "matmul_q_x2x1x3x256_M17");
        add(dt, {8, 768}, 1, "matmul_q_N8_K768_M1");
    }
    // x 4 bytes and W 2 bytes past 16-byte alignment: x in single floats instead of vec4s, W's
    // blocks starting on the other half word (decode and prefill).
    for (DType dt : kQuantizedTypes)
        for (int64_t n : {1, 3, 12}) {
            add(dt, {n, 512}, 9, "matmul_q_misaligned_N" + std::to_string(n) + "_K512_M9");
            out.back().inputs[0].misalign = 4;
            out.back().inputs[1].misalign = 2;
        }
    // The 32-weight types: one block, three blocks, and K = 0 (an empty sum: zeros).
    for (DType dt : {DType::Q8_0, DType::Q4_0}) {
        add(dt, {1, 32}, 5, "matmul_q_N1_K32_M5");
        add(dt, {3, 96}, 7, "matmul_q_N3_K96_M7");
        add(dt, {12, 160}, 70, "matmul_q_N12_K160_M70");
        // More x rows than one prefill chunk holds (64 at K = 512), a band's last tile of W short.
        add(dt, {80, 512}, 45, "matmul_q_N80_K512_M45");
        add(dt, {1, 0}, 3, "matmul_q_N1_K0_M3");
        add(dt, {12, 0}, 70, "matmul_q_N12_K0_M70");
    }
}

inline void matmul_cases(std::vector<OpCase>& out) {
    matmul(out);
    matmul_tails(out);
    matmul_quantized(out);
}

}  // namespace mnemo::conformance::detail
