// Conformance cases of VQ_DECODE. Included by op_cases.hpp after its helpers.
//
// Codes are random valid byte strings: every bit random (PQ indices, the unused high bits of the
// last code byte, any words after the code) except the coarse list number, drawn below
// 2^(Mc*bc). Row 0 is the largest list number with every other bit set (the last centroid of
// every table, fields straddling word boundaries at their widest), row 1 all zeros.
//
// The codecs cover Mc = 1, 2, 3; list numbers of 1 to 4 bytes, including Mc*bc = 32 (every list
// number valid); PQ fields of 5, 7, 10 and 16 bits (none a byte multiple except 16, which then
// starts mid-word); Do 6, 16, 64, 80, 128; with and without A, square and not; N = 1 and a few
// hundred; spare words after the code.
//
// Tolerance: the contract fixes the f32 arithmetic (no FMA, l ascending), so the CPU backend must
// reproduce the reference bit for bit. The harness wants a positive NMSE bound, so the cases take
// the smallest positive double: any difference between two f32 outputs (at least one denormal
// step, squared ~2e-90, against a norm below 1e82) exceeds it, so this is exactness in all but
// name (+0 and -0 still compare equal). The Vulkan kernel keeps the same order and marks the sum
// `precise` (no contraction), which makes it exact too on devices with correctly rounded f32
// multiply and add (lavapipe here); the values below never produce denormals.
#pragma once

#include <limits>

#include "conformance/op_case.hpp"

namespace mnemo::conformance::detail {

// n codes of `words` i32 words each for a codec with Mc x bc coarse bits.
inline std::vector<int32_t> vq_random_codes(CaseRng& rng, int64_t n, int64_t words, int64_t mc, int64_t bc) {
    const int64_t list_bits = mc * bc, coarse_bytes = (list_bits + 7) / 8;
    const uint32_t byte_mask = coarse_bytes >= 4 ? 0xFFFFFFFFu : (1u << (8 * coarse_bytes)) - 1u;
    const uint32_t list_mask = list_bits >= 32 ? 0xFFFFFFFFu : (1u << list_bits) - 1u;
    std::vector<int32_t> out;
    for (int64_t r = 0; r < n; ++r) {
        for (int64_t w = 0; w < words; ++w) {
            const uint32_t bits = r == 0 ? 0xFFFFFFFFu : r == 1 ? 0u : static_cast<uint32_t>(rng.next());
            uint32_t word = bits;
            // The list number's bytes: a valid value (the largest in row 0), higher bits of those
            // bytes clear.
            if (w == 0) word = (bits & ~byte_mask) | (bits & list_mask);
            out.push_back(static_cast<int32_t>(word));
        }
    }
    return out;
}

inline void vq_decode(std::vector<OpCase>& out) {
    struct Cfg { int64_t n, d_out, mc, bc, mp, bp, d_in, extra_words; };  // d_in 0: no rotation
    const Cfg cfgs[] = {
        {1, 16, 2, 6, 4, 5, 16, 0},      // the golden codec's shape, decode of one vector
        {300, 16, 2, 6, 4, 5, 16, 0},
        {257, 16, 2, 6, 4, 5, 0, 1},     // no rotation, a spare word
        {64, 16, 2, 14, 2, 10, 16, 0},   // default_factory(16): a 4-byte list number
        {1, 64, 2, 7, 8, 10, 64, 0},     // 2-byte list number with 2 unused bits
        {200, 64, 2, 7, 8, 10, 80, 0},   // A [64, 80]: more decoded than rotated dimensions
        {1, 80, 1, 10, 8, 10, 80, 0},    // Mc = 1
        {300, 80, 2, 9, 8, 10, 80, 1},   // the paper's d = 80 layout with a smaller coarse table
        {5, 128, 1, 12, 16, 7, 0, 0},    // Mc = 1, 7-bit fields, no rotation
        {300, 128, 2, 9, 16, 10, 128, 0},
        {33, 6, 3, 8, 2, 16, 10, 0},     // 16-bit fields starting at bit 24: each crosses a word
        {17, 4, 2, 16, 2, 3, 4, 0},      // Mc*bc = 32: every list number is valid
    };
    for (const Cfg& k : cfgs) {
        OpCase c;
        c.op = MNEMO_OP_VQ_DECODE;
        c.name = "vq_decode_N" + std::to_string(k.n) + "_Do" + std::to_string(k.d_out) + "_Res" + std::to_string(k.mc) +
                 "x" + std::to_string(k.bc) + "_PQ" + std::to_string(k.mp) + "x" + std::to_string(k.bp) +
                 (k.d_in ? "_A" + std::to_string(k.d_in) : std::string("_noA")) +
                 (k.extra_words ? "_spare" + std::to_string(k.extra_words) : std::string());
        CaseRng rng(name_seed(c.name) ^ 26);
        const int64_t code_bytes = (k.mc * k.bc + 7) / 8 + (k.mp * k.bp + 7) / 8;
        const int64_t words = (code_bytes + 3) / 4 + k.extra_words;
        c.inputs = {i32_shaped({k.n, words}, vq_random_codes(rng, k.n, words, k.mc, k.bc)),
                    f32({k.mc, int64_t{1} << k.bc, k.d_out / k.mc}),
                    f32({k.mp, int64_t{1} << k.bp, k.d_out / k.mp}, 0.3f)};
        if (k.d_in) c.inputs.push_back(f32({k.d_out, k.d_in}, 1.0f / std::sqrt(static_cast<float>(k.d_out))));
        c.iparams[0] = k.bc;
        c.iparams[1] = k.bp;
        c.max_nmse = std::numeric_limits<double>::min();
        out.push_back(c);
    }
}

inline void vq_cases(std::vector<OpCase>& out) { vq_decode(out); }

}  // namespace mnemo::conformance::detail
