// The conformance cases: for every op a list of shapes, dtypes and parameters that a backend must
// compute like the reference (engine/src/ops_reference.cpp). tests/test_backend_ops.cpp runs each
// case on every backend device. Inputs are generated from a seed derived from the case name, so a
// case is reproducible on its own (--gtest_filter) and across machines.
//
// Sizes are chosen to hit the paths fast kernels specialise: decode (N=1), small and odd row
// counts, vector tails (odd K, D, head dims), large model-like shapes (4096), and GQA ratios.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mnemo/ops/dtype.hpp"
#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"

namespace mnemo::conformance {

struct InputSpec {
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    // Float inputs: pseudo-normal values with this mean and standard deviation, unless `values` is
    // given. I32 inputs always come from `ints`.
    float mean = 0.0f;
    float stddev = 1.0f;
    std::vector<float> values;
    std::vector<int32_t> ints;
};

struct OpCase {
    std::string name;  // [A-Za-z0-9_], unique; used in the test name
    int32_t op = MNEMO_OP_NONE;
    std::vector<InputSpec> inputs;
    std::array<int64_t, MNEMO_MAX_PARAMS> iparams{};
    std::array<float, MNEMO_MAX_PARAMS> fparams{};
    // Largest accepted normalised mean squared error sum((a-b)^2) / sum(b^2). 1e-7 is a few f32
    // roundings per element; any looser bound is justified where the case is built.
    double max_nmse = 1e-7;
};

// ------------------------------------------------------------------ deterministic generation

// splitmix64: tiny, fast and identical on every platform (std:: distributions are not).
class CaseRng {
public:
    explicit CaseRng(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
    // Sum of four uniforms, rescaled to unit variance: bell-shaped, bounded (|z| < 3.47) and far
    // cheaper than Box-Muller for the 16M-element weights.
    float normalish() {
        const double s = uniform() + uniform() + uniform() + uniform() - 2.0;
        return static_cast<float>(s * 1.7320508075688772);
    }
    int32_t below(int32_t n) { return static_cast<int32_t>(next() % static_cast<uint64_t>(n)); }

private:
    uint64_t state_;
};

inline uint64_t name_seed(const std::string& name) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
    return h;
}

inline TensorShape spec_shape(const InputSpec& s) {
    TensorShape t;
    t.dtype = s.dtype;
    t.ndim = static_cast<int32_t>(s.shape.size());
    for (size_t i = 0; i < s.shape.size() && i < MNEMO_MAX_DIMS; ++i) t.shape[i] = s.shape[i];
    return t;
}

// The bytes of every input of a case, in the input's dtype.
inline std::vector<std::vector<uint8_t>> make_inputs(const OpCase& c) {
    CaseRng rng(name_seed(c.name));
    std::vector<std::vector<uint8_t>> out;
    for (const InputSpec& s : c.inputs) {
        const TensorShape shape = spec_shape(s);
        const size_t n = static_cast<size_t>(shape.numel());
        std::vector<uint8_t> bytes(shape.nbytes());
        if (s.dtype == DType::I32) {
            if (s.ints.size() != n) throw Error(c.name + ": i32 input needs " + std::to_string(n) + " values");
            if (n > 0) std::memcpy(bytes.data(), s.ints.data(), n * 4);  // (empty vectors may hold null)
        } else {
            if (!s.values.empty() && s.values.size() != n)
                throw Error(c.name + ": explicit input needs " + std::to_string(n) + " values");
            for (size_t i = 0; i < n; ++i) {
                const float v = s.values.empty() ? s.mean + s.stddev * rng.normalish() : s.values[i];
                if (s.dtype == DType::F32) {
                    std::memcpy(bytes.data() + 4 * i, &v, 4);
                } else {
                    const uint16_t h = s.dtype == DType::F16 ? f32_to_f16(v) : f32_to_bf16(v);
                    std::memcpy(bytes.data() + 2 * i, &h, 2);
                }
            }
        }
        out.push_back(std::move(bytes));
    }
    return out;
}

inline TensorShape case_output_shape(const OpCase& c) {
    std::vector<TensorShape> shapes;
    for (const InputSpec& s : c.inputs) shapes.push_back(spec_shape(s));
    return infer_output(c.op, shapes, c.iparams, c.fparams);
}

// ------------------------------------------------------------------ case builders

namespace detail {

inline InputSpec f32(std::vector<int64_t> shape, float stddev = 1.0f, float mean = 0.0f) {
    InputSpec s;
    s.shape = std::move(shape);
    s.stddev = stddev;
    s.mean = mean;
    return s;
}
inline InputSpec weight(DType dt, std::vector<int64_t> shape, float stddev = 1.0f, float mean = 0.0f) {
    InputSpec s = f32(std::move(shape), stddev, mean);
    s.dtype = dt;
    return s;
}
inline InputSpec i32(std::vector<int32_t> values) {
    InputSpec s;
    s.dtype = DType::I32;
    s.shape = {static_cast<int64_t>(values.size())};
    s.ints = std::move(values);
    return s;
}
inline std::string dt_name(DType t) { return std::string(dtype_name(t)); }
inline std::string dims_name(const std::vector<int64_t>& shape) {
    std::string s;
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += 'x';  // (not "x" + to_string(...): GCC 12 warns falsely on that, -Wrestrict)
        s += std::to_string(shape[i]);
    }
    return s;
}

constexpr DType kWeightTypes[] = {DType::F32, DType::F16, DType::BF16};

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

inline void binary(std::vector<OpCase>& out) {
    struct Shapes { std::vector<int64_t> a, b; };
    for (int32_t op : {MNEMO_OP_ADD, MNEMO_OP_MUL}) {
        for (const Shapes& s : {Shapes{{7, 33}, {33}}, Shapes{{2, 3, 4097}, {3, 4097}}, Shapes{{1}, {1}},
                                Shapes{{32, 4096}, {4096}}, Shapes{{4, 5, 6, 7}, {4, 5, 6, 7}}, Shapes{{9, 1}, {1}}}) {
            OpCase c;
            c.name = std::string(op_info(op).name) + "_a" + dims_name(s.a) + "_b" + dims_name(s.b);
            c.op = op;
            c.inputs = {f32(s.a), f32(s.b)};
            out.push_back(c);
        }
    }
}

inline void unary(std::vector<OpCase>& out) {
    for (int32_t op : {MNEMO_OP_SILU, MNEMO_OP_GELU, MNEMO_OP_SCALE}) {
        for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{1}, {7}, {4097}, {32, 4096}, {2, 3, 5, 7}}) {
            OpCase c;
            c.name = std::string(op_info(op).name) + "_" + dims_name(shape);
            c.op = op;
            // A wide spread so both tails of the activation (saturation, x -> -inf) are hit.
            c.inputs = {f32(shape, 4.0f)};
            if (op == MNEMO_OP_SCALE) c.fparams[0] = shape.size() == 1 ? -3.0f : 0.125f;
            out.push_back(c);
        }
    }
    // The exact (erf) GELU of XLM/BERT-style models: i[0] = 1. Odd lengths hit the vector tails.
    // The tanh form differs from it by an NMSE of only ~2e-8 on inputs of spread 2 (less on wider
    // ones), so the bound is 1e-10: a kernel that ignored i[0] fails, while an f32 erf (relative
    // error ~1e-6) passes with a wide margin.
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{1}, {7}, {4097}, {32, 4096}, {3, 5, 33}}) {
        OpCase c;
        c.name = "gelu_erf_" + dims_name(shape);
        c.op = MNEMO_OP_GELU;
        c.inputs = {f32(shape, 2.0f)};
        c.iparams[0] = 1;
        c.max_nmse = 1e-10;
        out.push_back(c);
    }
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{1}, {7}, {4097}, {32, 11008}, {2, 3, 33}}) {
        OpCase c;
        c.name = "swiglu_" + dims_name(shape);
        c.op = MNEMO_OP_SWIGLU;
        c.inputs = {f32(shape, 4.0f), f32(shape)};
        out.push_back(c);
    }
}

inline void norms(std::vector<OpCase>& out) {
    for (int64_t d : {1, 2, 7, 64, 100, 768, 4096, 4097}) {
        for (int variant = 0; variant < 3; ++variant) {  // no weight, f32 weight, f16/bf16 weight
            const DType wt = variant == 2 ? (d % 2 ? DType::BF16 : DType::F16) : DType::F32;
            OpCase c;
            c.op = MNEMO_OP_RMS_NORM;
            c.name = "rms_norm_R3_D" + std::to_string(d) + (variant == 0 ? "" : "_w_" + dt_name(wt));
            c.inputs = {f32({3, d}, 2.0f)};
            if (variant) c.inputs.push_back(weight(wt, {d}, 0.5f, 1.0f));
            c.fparams[0] = 1e-6f;
            out.push_back(c);
        }
    }
    {
        OpCase c;  // 3-D rows, large eps relative to tiny activations: eps must be inside the sqrt
        c.op = MNEMO_OP_RMS_NORM;
        c.name = "rms_norm_2x5x64_small_values_eps";
        c.inputs = {f32({2, 5, 64}, 1e-3f), weight(DType::F32, {64})};
        c.fparams[0] = 1e-5f;
        out.push_back(c);
    }
    {
        OpCase c;  // a long row: GPU kernels give rows this long their widest workgroups
        c.op = MNEMO_OP_RMS_NORM;
        c.name = "rms_norm_R2_D8193_w_bf16";
        c.inputs = {f32({2, 8193}, 2.0f), weight(DType::BF16, {8193}, 0.5f, 1.0f)};
        c.fparams[0] = 1e-6f;
        out.push_back(c);
    }
    {
        OpCase c;  // more rows than one grid dimension holds (65535 workgroups, one per row)
        c.op = MNEMO_OP_LAYER_NORM;
        c.name = "layer_norm_R65600_D3_w_b";
        c.inputs = {f32({65600, 3}, 1.0f, 4.0f), weight(DType::F16, {3}, 0.5f, 1.0f), weight(DType::F32, {3}, 0.5f)};
        c.fparams[0] = 1e-5f;
        out.push_back(c);
    }
    for (int64_t d : {1, 7, 64, 768, 4097}) {
        for (int variant = 0; variant < 3; ++variant) {  // no affine, weight, weight + bias
            OpCase c;
            c.op = MNEMO_OP_LAYER_NORM;
            c.name = "layer_norm_R4_D" + std::to_string(d) + (variant == 0 ? "" : variant == 1 ? "_w" : "_w_b");
            // A common offset of 4: a one-pass E[x^2]-E[x]^2 in f32 loses digits here.
            c.inputs = {f32({4, d}, 1.0f, 4.0f)};
            if (variant >= 1) c.inputs.push_back(weight(d % 2 ? DType::F16 : DType::F32, {d}, 0.5f, 1.0f));
            if (variant == 2) c.inputs.push_back(weight(DType::BF16, {d}, 0.5f));
            c.fparams[0] = 1e-5f;
            out.push_back(c);
        }
    }
}

inline void rope(std::vector<OpCase>& out) {
    struct Shape { int64_t n, h, d, rot; int max_pos; };
    for (int64_t mode : {0, 1}) {
        for (Shape s : {Shape{1, 32, 128, 128, 4095}, Shape{5, 4, 64, 64, 100}, Shape{7, 2, 128, 64, 2000},
                        Shape{3, 3, 80, 32, 50}, Shape{4, 1, 17, 16, 300}, Shape{2, 8, 64, 2, 9}, Shape{3, 2, 64, 64, 32767}}) {
            OpCase c;
            c.op = MNEMO_OP_ROPE;
            c.name = std::string("rope_") + (mode == 0 ? "halves" : "interleaved") + "_N" + std::to_string(s.n) + "_H" +
                     std::to_string(s.h) + "_D" + std::to_string(s.d) + "_R" + std::to_string(s.rot) + "_pos" +
                     std::to_string(s.max_pos);
            CaseRng rng(name_seed(c.name) ^ 2);
            std::vector<int32_t> pos;
            for (int64_t i = 0; i < s.n; ++i) pos.push_back(i == 0 ? s.max_pos : rng.below(s.max_pos + 1));
            InputSpec inv = f32({s.rot / 2});
            for (int64_t j = 0; j < s.rot / 2; ++j)
                inv.values.push_back(static_cast<float>(std::pow(10000.0, -2.0 * static_cast<double>(j) / static_cast<double>(s.rot))));
            c.inputs = {f32({s.n, s.h, s.d}), i32(pos), inv};
            c.iparams[0] = mode;
            c.iparams[1] = s.rot;
            // A backend forms the angle pos * inv_freq in f32; its rounding (half an ulp of an angle
            // up to 32767 rad, about 2e-3 rad) is inherent to the f32 contract, not a bug. Below
            // pos 4096 it stays under 1e-7 NMSE.
            if (s.max_pos > 4096) c.max_nmse = 2e-6;
            out.push_back(c);
        }
    }
    // Long contexts (positions near 1M): an f32 angle is off by up to 0.03 rad there, a visible
    // rotation error, while the ABI's angle is exact (the reference and the CPU backend use
    // double). So this case keeps the plain bound: a backend forms and reduces the angle in more
    // than f32 (double, or a two-float product as shaders/rope.comp does).
    for (int64_t mode : {0, 1}) {
        OpCase c;
        c.op = MNEMO_OP_ROPE;
        c.name = std::string("rope_") + (mode == 0 ? "halves" : "interleaved") + "_N4_H2_D128_R128_pos1048575";
        InputSpec inv = f32({64});
        for (int64_t j = 0; j < 64; ++j)
            inv.values.push_back(static_cast<float>(std::pow(500000.0, -2.0 * static_cast<double>(j) / 128.0)));
        c.inputs = {f32({4, 2, 128}), i32({1048575, 131071, 1000003, 524288}), inv};
        c.iparams[0] = mode;
        c.iparams[1] = 128;
        out.push_back(c);
    }
}

inline void softmax(std::vector<OpCase>& out) {
    struct Shape { std::vector<int64_t> x; float scale; float stddev; };
    for (const Shape& s : {Shape{{4, 1}, 0.0f, 1.0f}, Shape{{4, 5}, 0.0f, 3.0f}, Shape{{3, 33}, 0.125f, 8.0f},
                           Shape{{2, 4097}, 1.0f, 3.0f}, Shape{{1, 32000}, 0.0f, 5.0f}, Shape{{2, 3, 65}, 0.5f, 2.0f},
                           Shape{{2, 100}, 0.0f, 200.0f}}) {
        OpCase c;
        c.op = MNEMO_OP_SOFTMAX;
        c.name = "softmax_" + dims_name(s.x) + "_scale" + std::to_string(static_cast<int>(s.scale * 1000)) + "m_sd" +
                 std::to_string(static_cast<int>(s.stddev));
        c.inputs = {f32(s.x, s.stddev)};
        c.fparams[0] = s.scale;
        out.push_back(c);
    }
    {
        OpCase c;  // a Llama-3-sized vocabulary row: long loops in every pass
        c.op = MNEMO_OP_SOFTMAX;
        c.name = "softmax_2x128256_scale0m_sd5";
        c.inputs = {f32({2, 128256}, 5.0f)};
        out.push_back(c);
    }
    {
        OpCase c;  // more rows than one grid dimension holds (65535 workgroups, one per row)
        c.op = MNEMO_OP_SOFTMAX;
        c.name = "softmax_65600x3_scale0m_sd2";
        c.inputs = {f32({65600, 3}, 2.0f)};
        out.push_back(c);
    }
    {
        // Masked scores (-inf, as a causal mask leaves them) give exactly 0; row r keeps its
        // first 7r + 1 entries, so row 0 is a single 1. (A row of only -inf has no defined result:
        // the reference gives NaN, so it is not a case.)
        OpCase c;
        c.op = MNEMO_OP_SOFTMAX;
        c.name = "softmax_6x37_masked_scale250m";
        CaseRng rng(name_seed(c.name) ^ 3);
        InputSpec x = f32({6, 37});
        for (int64_t r = 0; r < 6; ++r)
            for (int64_t j = 0; j < 37; ++j)
                x.values.push_back(j <= r * 7 ? 3.0f * rng.normalish() : -INFINITY);
        c.inputs = {x};
        c.fparams[0] = 0.25f;
        out.push_back(c);
    }
}

// A batch of (sequence, position) rows: each listed sequence contributes `count` consecutive
// positions starting at `first`.
struct SeqRun { int32_t seq, first, count; };

inline void seq_pos_of(const std::vector<SeqRun>& runs, std::vector<int32_t>& seq, std::vector<int32_t>& pos) {
    for (const SeqRun& r : runs)
        for (int32_t i = 0; i < r.count; ++i) {
            seq.push_back(r.seq);
            pos.push_back(r.first + i);
        }
}

inline std::string runs_name(const std::vector<SeqRun>& runs) {
    int32_t n = 0;
    for (const SeqRun& r : runs) n += r.count;
    return "N" + std::to_string(n) + "_runs" + std::to_string(runs.size());
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

inline void attention(std::vector<OpCase>& out) {
    struct Cfg { int64_t s, hq, hkv, ctx, d, dv; std::vector<SeqRun> runs; };
    const std::vector<Cfg> cfgs = {
        // decode: one query per sequence, sequences of different lengths
        {4, 8, 8, 64, 64, 64, {{0, 0, 1}, {1, 13, 1}, {2, 63, 1}, {3, 31, 1}}},
        {2, 32, 8, 512, 128, 128, {{0, 300, 1}, {1, 511, 1}}},
        {1, 8, 4, 100, 17, 17, {{0, 99, 1}}},
        {3, 6, 3, 40, 33, 33, {{2, 7, 1}, {0, 39, 1}, {1, 0, 1}}},
        // prefill: consecutive positions of one sequence (causal mask inside the batch)
        {1, 4, 1, 64, 64, 64, {{0, 0, 32}}},
        {2, 16, 4, 256, 128, 128, {{1, 100, 20}}},
        // mixed batch: a prefill chunk plus decode rows of other sequences
        {3, 8, 2, 48, 33, 33, {{0, 0, 6}, {1, 40, 1}, {2, 3, 3}}},
        // value head size different from key head size
        {2, 4, 2, 20, 64, 17, {{0, 10, 3}, {1, 19, 1}}},
        {1, 2, 2, 8, 1, 3, {{0, 0, 8}}},
        // head dims of 256 (the largest common one), and 256/255 with a partial last tile
        {2, 4, 2, 64, 256, 256, {{0, 63, 1}, {1, 5, 2}}},
        {1, 2, 1, 520, 256, 255, {{0, 519, 1}}},
        // long caches with few queries, where a GPU kernel splits the keys into chunks: decode at a
        // long position next to one at position 0 (chunks past pos must be ignored), an odd-sized
        // head pair, and a 37-token prefill mixing short and long rows of three sequences
        {2, 8, 2, 2048, 128, 128, {{1, 1500, 1}, {0, 0, 1}}},
        {1, 4, 4, 1024, 80, 40, {{0, 700, 1}}},
        {3, 8, 2, 600, 64, 64, {{0, 0, 20}, {1, 550, 1}, {2, 300, 16}}},
    };
    for (const Cfg& cfg : cfgs) {
        OpCase c;
        c.op = MNEMO_OP_ATTENTION;
        std::vector<int32_t> seq, pos;
        seq_pos_of(cfg.runs, seq, pos);
        c.name = "attention_S" + std::to_string(cfg.s) + "_Hq" + std::to_string(cfg.hq) + "_Hkv" + std::to_string(cfg.hkv) +
                 "_C" + std::to_string(cfg.ctx) + "_D" + std::to_string(cfg.d) +
                 (cfg.dv != cfg.d ? "_Dv" + std::to_string(cfg.dv) : std::string()) + "_" + runs_name(cfg.runs);
        const int64_t n = static_cast<int64_t>(seq.size());
        // The whole cache is random, including positions after pos[n]: a kernel that reads past
        // the causal limit sees values that change the result.
        c.inputs = {f32({n, cfg.hq, cfg.d}), f32({cfg.s, cfg.hkv, cfg.ctx, cfg.d}), f32({cfg.s, cfg.hkv, cfg.ctx, cfg.dv}),
                    i32(seq), i32(pos)};
        c.fparams[0] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg.d)));
        out.push_back(c);
    }
}

inline InputSpec i32_shaped(std::vector<int64_t> shape, std::vector<int32_t> values) {
    InputSpec s = i32(std::move(values));
    s.shape = std::move(shape);
    return s;
}

// ARGTOPK indices are compared exactly (tests/test_backend_ops.cpp compares i32 outputs bit for
// bit), so the "ties" cases pin down the tie rule: scores rounded to multiples of 0.5 repeat
// constantly, and the first row is all zeros with -0.0 mixed in (equal to +0.0: the answer is
// 0, 1, 2, ...).
inline void argtopk(std::vector<OpCase>& out) {
    for (int64_t d : {1, 7, 64, 1000, 16384}) {
        for (int64_t k : {int64_t{1}, int64_t{4}, int64_t{32}, d}) {
            if (k > d || (k == d && (k == 1 || k == 4 || k == 32))) continue;  // impossible or listed already
            for (bool ties : {false, true}) {
                // Enough rows at D = 1000 and 16384 that the node runs on several threads; a 3-D x at 64.
                const std::vector<int64_t> shape = d == 64 ? std::vector<int64_t>{2, 3, d}
                                                 : d == 1000 ? std::vector<int64_t>{33, d}
                                                 : d == 16384 ? std::vector<int64_t>{3, d} : std::vector<int64_t>{5, d};
                OpCase c;
                c.op = MNEMO_OP_ARGTOPK;
                c.name = "argtopk_" + dims_name(shape) + "_k" + std::to_string(k) + (ties ? "_ties" : "");
                InputSpec x = f32(shape, 2.0f);
                if (ties) {
                    CaseRng rng(name_seed(c.name) ^ 3);
                    const int64_t n = spec_shape(x).numel();
                    for (int64_t i = 0; i < n; ++i) {
                        if (i < d) x.values.push_back(i % 3 == 1 ? -0.0f : 0.0f);
                        else x.values.push_back(std::round(rng.normalish() * 2.0f) * 0.5f);
                    }
                }
                c.inputs = {x};
                c.iparams[0] = k;
                out.push_back(c);
            }
        }
    }
    {
        OpCase c;  // NaN ranks below everything, -inf included; +inf first; ties among the NaNs by index
        c.op = MNEMO_OP_ARGTOPK;
        c.name = "argtopk_2x7_nan_inf";
        InputSpec x = f32({2, 7});
        x.values = {NAN, 1.0f, -INFINITY, NAN, INFINITY, 1.0f, -0.0f,
                    -INFINITY, NAN, -INFINITY, 2.0f, NAN, 0.0f, -0.0f};
        c.inputs = {x};
        c.iparams[0] = 7;
        out.push_back(c);
    }
    // Long rows with every kind of special value on a coarse grid (ties everywhere): NaN, +-inf,
    // +-0, subnormals (whose order only an exact integer key gets right) and numbers spanning
    // the whole exponent range. The sizes reach the selection paths of the GPU kernels: a k that
    // fills half of a shared-memory selection (1024), a row sorted whole in one block (1500),
    // and rows sorted across blocks in scratch (k = 3000 of 5000; k = D = 16384 is above).
    struct Special {
        int64_t rows, d, k;
    };
    for (const Special& s : {Special{2, 16384, 1024}, Special{3, 1500, 1500}, Special{2, 5000, 3000}, Special{4, 777, 130}}) {
        OpCase c;
        c.op = MNEMO_OP_ARGTOPK;
        c.name = "argtopk_" + std::to_string(s.rows) + "x" + std::to_string(s.d) + "_k" + std::to_string(s.k) + "_special";
        InputSpec x = f32({s.rows, s.d});
        CaseRng rng(name_seed(c.name));
        const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-45f, 3e-39f, -3e-39f, 3.4e38f, -3.4e38f};
        for (int64_t i = 0; i < s.rows * s.d; ++i) {
            const int32_t pick = rng.below(8);
            if (pick == 0) x.values.push_back(specials[rng.below(11)]);
            else if (pick == 1) x.values.push_back(std::ldexp(std::round(rng.normalish() * 4.0f), rng.below(200) - 100));
            else x.values.push_back(std::round(rng.normalish() * 8.0f) * 0.25f);
        }
        c.inputs = {x};
        c.iparams[0] = s.k;
        out.push_back(c);
    }
}

inline void take_along(std::vector<OpCase>& out) {
    struct Shape { std::vector<int64_t> x; int64_t k; };
    for (const Shape& s : {Shape{{10}, 3}, Shape{{3, 64}, 4}, Shape{{5, 7}, 7}, Shape{{2, 3, 1000}, 32},
                           Shape{{1, 16384}, 32}, Shape{{64, 1024}, 80}}) {
        OpCase c;
        c.op = MNEMO_OP_TAKE_ALONG;
        c.name = "take_along_x" + dims_name(s.x) + "_k" + std::to_string(s.k);
        std::vector<int64_t> ishape = s.x;
        ishape.back() = s.k;
        const int64_t d = s.x.back();
        CaseRng rng(name_seed(c.name) ^ 4);
        std::vector<int32_t> idx;
        // Every row starts with the last and the first column (addressing off by one), then random
        // picks with repeats.
        const int64_t n = spec_shape(i32_shaped(ishape, {})).numel();
        for (int64_t i = 0; i < n; ++i)
            idx.push_back(i % s.k == 0 ? static_cast<int32_t>(d - 1) : i % s.k == 1 ? 0 : rng.below(static_cast<int32_t>(d)));
        c.inputs = {f32(s.x), i32_shaped(ishape, idx)};
        out.push_back(c);
    }
}

// The memory-layer value read: N bags (tokens x heads) of m rows from a large table. The table
// size is capped at 4M elements (R = 65536 for narrow rows) to keep the suite quick. Every bag
// repeats a row (its first two entries), and the first bag touches the first and last rows.
inline void embedding_bag(std::vector<OpCase>& out) {
    const int64_t ns[] = {1, 3, 32}, ms[] = {1, 16, 32}, cs[] = {1, 17, 256, 1024};
    for (size_t in = 0; in < 3; ++in)
        for (size_t im = 0; im < 3; ++im)
            for (size_t ic = 0; ic < 4; ++ic) {
                const int64_t n = ns[in], m = ms[im], cols = cs[ic];
                const int64_t rows = std::min<int64_t>(65536, (int64_t{1} << 22) / cols);
                const DType dt = kWeightTypes[(in + im + ic) % 3];  // every (N, C) and (m, C) sees every dtype
                OpCase c;
                c.op = MNEMO_OP_EMBEDDING_BAG;
                c.name = "embedding_bag_R" + std::to_string(rows) + "_C" + std::to_string(cols) + "_N" +
                         std::to_string(n) + "_m" + std::to_string(m) + "_" + dt_name(dt);
                CaseRng rng(name_seed(c.name) ^ 5);
                std::vector<int32_t> idx;
                for (int64_t b = 0; b < n; ++b)
                    for (int64_t j = 0; j < m; ++j) {
                        int32_t r = rng.below(static_cast<int32_t>(rows));
                        if (j == 1) r = idx.back();
                        if (b == 0 && j == 2) r = static_cast<int32_t>(rows - 1);
                        if (b == 0 && j == 3) r = 0;
                        idx.push_back(r);
                    }
                c.inputs = {weight(dt, {rows, cols}), i32_shaped({n, m}, idx), f32({n, m}, 0.5f)};
                out.push_back(c);
            }
}

}  // namespace detail
}  // namespace mnemo::conformance

// Later op families keep their cases in their own files; they use the helpers above.
#include "op_cases_lookup.hpp"
#include "op_cases_moe.hpp"
#include "op_cases_product_keys.hpp"
#include "op_cases_memory_prefix.hpp"
#include "op_cases_vq.hpp"

namespace mnemo::conformance {

// Every conformance case, grouped by op. Built once; generating inputs is left to make_inputs.
inline const std::vector<OpCase>& all_op_cases() {
    static const std::vector<OpCase> cases = [] {
        std::vector<OpCase> v;
        detail::get_rows(v);
        detail::matmul(v);
        detail::binary(v);
        detail::unary(v);
        detail::norms(v);
        detail::rope(v);
        detail::softmax(v);
        detail::kv_store(v);
        detail::attention(v);
        detail::argtopk(v);
        detail::take_along(v);
        detail::embedding_bag(v);
        detail::product_keys(v);
        detail::lookup(v);
        detail::moe(v);
        detail::memory_prefix(v);
        detail::vq_decode(v);
        return v;
    }();
    return cases;
}

}  // namespace mnemo::conformance
