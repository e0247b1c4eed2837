// What a conformance case is: an op with the shapes, dtypes and parameters of its inputs, which a
// backend must compute like the reference implementation (engine/src/ops/reference_<family>.cpp),
// and the builders the per-family case lists (op_cases_<family>.hpp) share. Inputs are generated from a
// seed derived from the case name, so a case is reproducible on its own (--gtest_filter) and
// across machines.
//
// Sizes are chosen to hit the paths fast kernels specialise: decode (N=1), small and odd row
// counts, vector tails (odd K, D, head dims), large model-like shapes (4096), and GQA ratios.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "mnemo/ops/dtype.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/ggml_type.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/quant/ggml_quants.hpp"

namespace mnemo::conformance {

struct InputSpec {
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    // Float inputs: pseudo-normal values with this mean and standard deviation, unless `values` is
    // given. I32 inputs always come from `ints`. Block-quantized inputs (q8_0 ... q6_k): q8_0 and
    // q4_0 are such values quantized with the format's reference rounding (quantize_row); the
    // K-quants, which Mnemo does not write, are random block bytes (every bit pattern of codes,
    // packed scales and minima occurs) with finite f16 d (and dmin) of about stddev / 16 (d, dmin
    // positive for q4_k / q5_k, as tools/reference/quant_golden.py makes them).
    float mean = 0.0f;
    float stddev = 1.0f;
    std::vector<float> values;
    std::vector<int32_t> ints;
    // The tensor starts this many bytes past a 4096-aligned offset of its buffer (a multiple of
    // the dtype's alignment), to reach the kernels' paths for tensors that are not 16-byte aligned.
    uint64_t misalign = 0;
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
    // The reference's NaNs are part of the answer (an op that passes NaN through): the backend
    // must give NaN at exactly those elements. Otherwise a NaN in the reference fails the case.
    bool nan_expected = false;
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

// The bytes of a block-quantized input (see InputSpec).
inline std::vector<uint8_t> quantized_input(const InputSpec& s, const TensorShape& shape, CaseRng& rng) {
    const int64_t cols = shape.shape[shape.ndim - 1];
    const int64_t rows = cols > 0 ? shape.numel() / cols : 0;
    const DTypeBlock b = dtype_block(s.dtype);
    std::vector<uint8_t> bytes(shape.nbytes());
    if (s.dtype == DType::Q8_0 || s.dtype == DType::Q4_0) {
        std::vector<float> row(static_cast<size_t>(cols));
        for (int64_t r = 0; r < rows; ++r) {
            for (float& v : row) v = s.mean + s.stddev * rng.normalish();
            quantize_row(ggml_type_of_dtype(s.dtype), row.data(), bytes.data() + static_cast<uint64_t>(r) * dtype_bytes(s.dtype, cols), cols);
        }
        return bytes;
    }
    for (uint8_t& v : bytes) v = static_cast<uint8_t>(rng.next() >> 56);
    // The f16 scales: q4_k / q5_k d and dmin at bytes 0 and 2, q6_k d at byte 208 (signed).
    auto scale = [&](uint8_t* p, bool positive) {
        const double u = 0.25 + 1.75 * rng.uniform();  // |scale| in [0.25, 2) x stddev / 16
        const float v = static_cast<float>((positive || rng.uniform() < 0.5 ? 1.0 : -1.0) * u * s.stddev / 16.0);
        const uint16_t h = f32_to_f16(v);
        std::memcpy(p, &h, 2);
    };
    for (uint64_t off = 0; off < bytes.size(); off += static_cast<uint64_t>(b.bytes)) {
        if (s.dtype == DType::Q6_K) {
            scale(bytes.data() + off + 208, false);
        } else {
            scale(bytes.data() + off, true);
            scale(bytes.data() + off + 2, true);
        }
    }
    return bytes;
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
        } else if (dtype_is_quantized(s.dtype)) {
            bytes = quantized_input(s, shape, rng);
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

// The first block-quantized input of a case (its dtype), or nullopt: docs/ops.md's table of
// block-quantized cases groups them by it.
inline std::optional<DType> quantized_input_dtype(const OpCase& c) {
    for (const InputSpec& s : c.inputs)
        if (dtype_is_quantized(s.dtype)) return s.dtype;
    return std::nullopt;
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
// The block-quantized weight types MATMUL and GET_ROWS take (mnemo/abi/mnemo_abi.h).
constexpr DType kQuantizedTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

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

inline InputSpec i32_shaped(std::vector<int64_t> shape, std::vector<int32_t> values) {
    InputSpec s = i32(std::move(values));
    s.shape = std::move(shape);
    return s;
}

inline std::string signed_name(int64_t v) { return v < 0 ? "m" + std::to_string(-v) : std::to_string(v); }

}  // namespace detail
}  // namespace mnemo::conformance
