// Conformance cases of KV_STORE and ATTENTION with f16 and q8_0 caches (the --cache-type of a
// session; the f32 cases are in op_cases_rows.hpp / op_cases_attention.hpp). KV_STORE rounds src
// into the cache's dtype; the reference does it with f32_to_f16 / the reference q8_0 quantizer, so
// the CPU module matches bit for bit; a GPU's f16 conversion may round another way, so the bound
// is one f16 rounding per element, not zero. ATTENTION reads the cache dequantized exactly: only its own f32 arithmetic differs from
// the reference, so f16 keeps the f32 bound; q8_0 multiplies by the block scale once per block
// instead of per element, a few more roundings: 1e-6. Head dims are multiples of 32 for q8_0 and
// odd ones for f16 (vector tails). Kept small: lavapipe runs every case too.
#pragma once

#include <limits>

#include "conformance/op_case.hpp"
#include "conformance/op_cases_rows.hpp"

namespace mnemo::conformance::detail {

inline double attention_bound(DType dt) { return dt == DType::Q8_0 ? 1e-6 : 1e-7; }

inline void kv_store_typed(std::vector<OpCase>& out) {
    struct Cfg { int64_t s, h, ctx, d; std::vector<SeqRun> runs; };
    for (DType dt : {DType::F16, DType::Q8_0}) {
        for (const Cfg& cfg : {Cfg{1, 8, 64, 64, {{0, 17, 1}}}, Cfg{2, 4, 128, 128, {{1, 0, 32}}},
                               Cfg{3, 2, 37, 32, {{0, 0, 4}, {2, 30, 7}, {1, 36, 1}}}, Cfg{2, 3, 50, 17, {{1, 10, 20}}}}) {
            if (dt == DType::Q8_0 && cfg.d % 32 != 0) continue;
            OpCase c;
            c.op = MNEMO_OP_KV_STORE;
            std::vector<int32_t> seq, pos;
            seq_pos_of(cfg.runs, seq, pos);
            c.name = "kv_store_" + dt_name(dt) + "_S" + std::to_string(cfg.s) + "_H" + std::to_string(cfg.h) + "_C" +
                     std::to_string(cfg.ctx) + "_D" + std::to_string(cfg.d) + "_" + runs_name(cfg.runs);
            const int64_t n = static_cast<int64_t>(seq.size());
            // A random cache of dt (q8_0: quantized random values), so untouched rows are checked too.
            c.inputs = {weight(dt, {cfg.s, cfg.h, cfg.ctx, cfg.d}), f32({n, cfg.h, cfg.d}), i32(seq), i32(pos)};
            // f16: GLSL's packHalf2x16 may round another way than to nearest even: at most one f16
            // step (2^-11 relative) per element, NMSE <= 2.4e-7. q8_0: the quantizer's rounding
            // (CPU: the reference quantizer itself, exact).
            c.max_nmse = 3e-7;
            out.push_back(c);
        }
    }
}

inline void attention_typed(std::vector<OpCase>& out) {
    struct Cfg { int64_t s, hq, hkv, ctx, d, dv; std::vector<SeqRun> runs; int64_t slots; std::vector<int32_t> plen, pblock; };
    const std::vector<Cfg> cfgs = {
        // decode over sequences of different lengths, GQA 4
        {2, 8, 2, 64, 64, 64, {{0, 0, 1}, {1, 63, 1}}, 0, {}, {}},
        // prefill inside the batch, head dim 128
        {1, 4, 2, 96, 128, 128, {{0, 10, 24}}, 0, {}, {}},
        // a long cache (GPU split-K path), decode
        {2, 8, 2, 1100, 64, 64, {{1, 1030, 1}, {0, 3, 1}}, 0, {}, {}},
        // the Llama-3.2-1B attention (GQA 32/8, D 64) decoding at position 4000 of a 4096 cache:
        // with its f32 twin, what `mnemo-test-ops perf -c Hq32_Hkv8_C4096` compares per cache type
        {1, 32, 8, 4096, 64, 64, {{0, 4000, 1}}, 0, {}, {}},
        // odd head dims (f16 only: vector tails)
        {1, 4, 2, 30, 33, 17, {{0, 5, 6}}, 0, {}, {}},
        // explicit-memory prefix, shared block and one block per query
        {2, 8, 2, 64, 64, 64, {{0, 20, 1}, {1, 63, 1}}, 48, {40}, {}},
        {2, 4, 2, 96, 64, 32, {{0, 0, 9}, {1, 50, 3}}, 40, {40, 17, 0}, {0, 1, -1, 2, 1, 0, 0, 2, 1, -1, 0, 1}},
    };
    for (DType dt : {DType::F32, DType::F16, DType::Q8_0}) {
        for (const Cfg& cfg : cfgs) {
            if (dt == DType::F32 && cfg.ctx != 4096) continue;  // f32 is covered by op_cases_attention.hpp
            if (dt == DType::Q8_0 && (cfg.d % 32 != 0 || cfg.dv % 32 != 0)) continue;
            OpCase c;
            c.op = MNEMO_OP_ATTENTION;
            std::vector<int32_t> seq, pos;
            seq_pos_of(cfg.runs, seq, pos);
            const int64_t n = static_cast<int64_t>(seq.size());
            c.name = "attention_" + dt_name(dt) + "_S" + std::to_string(cfg.s) + "_Hq" + std::to_string(cfg.hq) + "_Hkv" +
                     std::to_string(cfg.hkv) + "_C" + std::to_string(cfg.ctx) + "_D" + std::to_string(cfg.d) + "_Dv" +
                     std::to_string(cfg.dv) + (cfg.slots ? "_M" + std::to_string(cfg.slots) + "_B" + std::to_string(cfg.plen.size()) : "") +
                     "_" + runs_name(cfg.runs);
            c.inputs = {f32({n, cfg.hq, cfg.d}), weight(dt, {cfg.s, cfg.hkv, cfg.ctx, cfg.d}),
                        weight(dt, {cfg.s, cfg.hkv, cfg.ctx, cfg.dv}), i32(seq), i32(pos)};
            if (cfg.slots) {
                const int64_t blocks = static_cast<int64_t>(cfg.plen.size());
                c.inputs.push_back(weight(dt, {blocks, cfg.hkv, cfg.slots, cfg.d}));
                c.inputs.push_back(weight(dt, {blocks, cfg.hkv, cfg.slots, cfg.dv}));
                c.inputs.push_back(i32(cfg.plen));
                if (!cfg.pblock.empty()) c.inputs.push_back(i32(cfg.pblock));
            }
            c.fparams[0] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg.d)));
            c.max_nmse = attention_bound(dt);
            out.push_back(c);
        }
    }
}

inline void kv_type_cases(std::vector<OpCase>& out) {
    kv_store_typed(out);
    attention_typed(out);
}

}  // namespace mnemo::conformance::detail
