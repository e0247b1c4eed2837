// Conformance cases of ROPE, with and without a position offset (i[2]; the offset cases are the
// Memory3 shapes: memories at their own positions, the reference BOS at negative ones).
#pragma once

#include "conformance/op_case.hpp"

namespace mnemo::conformance::detail {

inline void rope(std::vector<OpCase>& out) {
    struct Shape { int64_t n, h, d, rot; int max_pos; };
    for (int64_t mode : {0, 1}) {
        for (Shape s : {Shape{1, 32, 128, 128, 4095}, Shape{5, 4, 64, 64, 100}, Shape{7, 2, 128, 64, 2000},
                        Shape{3, 3, 80, 32, 50}, Shape{4, 1, 17, 16, 300}, Shape{2, 8, 64, 2, 9}, Shape{3, 2, 64, 64, 32767},
                        // partial rotations of no vector width (R = 12 of D = 20, 96 of 128) and the
                        // smallest head (D = 6, R = 2), from the CPU module's former self-test
                        Shape{3, 5, 20, 12, 1957}, Shape{1, 1, 6, 2, 3}, Shape{7, 3, 128, 96, 4095}}) {
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
    // than f32 (double, or a two-float product as shaders/rope/rope.comp does).
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

// ROPE with i[2] = offset: zero, positive, negative with pos + offset < 0, and sums near 2^20
// from both sides. All keep the plain 1e-7 bound: the ABI's shifted angle is exact (an integer
// times inv_freq), and backends form it in more than f32, as the long-position ROPE case asks.
inline void rope_offset(std::vector<OpCase>& out) {
    struct Cfg { int64_t n, h, d, rot, offset; int max_pos; };
    for (int64_t mode : {0, 1}) {
        for (const Cfg& s : {Cfg{3, 2, 64, 64, 0, 300}, Cfg{4, 3, 64, 48, 1000, 100}, Cfg{5, 2, 80, 64, -500, 700},
                             Cfg{4, 2, 128, 128, 1048000, 575}, Cfg{3, 2, 128, 128, -1048000, 1000}}) {
            OpCase c;
            c.op = MNEMO_OP_ROPE;
            c.name = std::string("rope_offset_") + (mode == 0 ? "halves" : "interleaved") + "_N" + std::to_string(s.n) +
                     "_H" + std::to_string(s.h) + "_D" + std::to_string(s.d) + "_R" + std::to_string(s.rot) + "_o" +
                     signed_name(s.offset);
            CaseRng rng(name_seed(c.name) ^ 2);
            std::vector<int32_t> pos;
            for (int64_t i = 0; i < s.n; ++i) pos.push_back(i == 0 ? s.max_pos : rng.below(s.max_pos + 1));
            pos.back() = 0;  // the offset alone
            InputSpec inv = f32({s.rot / 2});
            for (int64_t j = 0; j < s.rot / 2; ++j)
                inv.values.push_back(static_cast<float>(std::pow(500000.0, -2.0 * static_cast<double>(j) / static_cast<double>(s.rot))));
            c.inputs = {f32({s.n, s.h, s.d}), i32(pos), inv};
            c.iparams[0] = mode;
            c.iparams[1] = s.rot;
            c.iparams[2] = s.offset;
            out.push_back(c);
        }
    }
}

inline void rope_cases(std::vector<OpCase>& out) {
    rope(out);
    rope_offset(out);
}

}  // namespace mnemo::conformance::detail
