// Conformance cases of ATTENTION, plain and with an explicit-memory prefix (shared, or one block
// per query). Memory3 shapes: a memory block holds M = 40..50 key/value slots per kv head, a query
// reads one block (decode: the same one for every query; prefill: queries of different chunks
// read different blocks in one batch). Kept small: lavapipe runs every case too.
#pragma once

#include "conformance/op_case.hpp"
#include "conformance/op_cases_kv_types.hpp"
#include "conformance/op_cases_rows.hpp"

namespace mnemo::conformance::detail {

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

// ATTENTION with a prefix. `pblock` empty: 8 inputs (every query reads block 0, B = 1).
inline void attention_prefix(std::vector<OpCase>& out) {
    struct Cfg {
        int64_t s, hq, hkv, ctx, d, dv;
        std::vector<SeqRun> runs;
        int64_t slots;               // M
        std::vector<int32_t> plen;   // [B]
        std::vector<int32_t> pblock; // [N] or empty; filled by pattern when it holds one -2
        const char* label;
    };
    // Prefill batches read several blocks: each query takes block (i / 7) % B, except every 5th,
    // which reads none (pblock -1, -2 or -3: any negative value means none).
    const std::vector<int32_t> kPattern = {-2};
    const std::vector<Cfg> cfgs = {
        // decode, one shared block (8 inputs): partly filled, empty, full; GQA 4 and 2
        {2, 8, 2, 64, 64, 64, {{0, 20, 1}, {1, 63, 1}}, 48, {40}, {}, "shared"},
        {2, 8, 2, 64, 64, 64, {{0, 20, 1}, {1, 0, 1}}, 48, {0}, {}, "shared_empty"},
        {1, 4, 2, 40, 64, 64, {{0, 5, 3}}, 44, {44}, {}, "shared_full"},
        // decode with a long cache: the split-K path, the prefix joins chunk 0; a query at position 0
        // (one chunk) next to one that spans many
        {1, 4, 1, 1024, 64, 64, {{0, 900, 1}}, 48, {45}, {}, "split"},
        {2, 8, 2, 600, 64, 64, {{0, 550, 1}, {1, 10, 1}, {1, 0, 1}}, 44, {44, 0, 30}, {2, -1, 0}, "split_blocks"},
        // prefill: queries of two sequences over four blocks (one empty, one full), some without
        {2, 4, 2, 96, 64, 64, {{0, 0, 40}, {1, 50, 30}}, 40, {40, 17, 0, 33}, kPattern, "prefill"},
        {1, 8, 2, 72, 64, 64, {{0, 8, 64}}, 48, {48, 47, 1}, kPattern, "prefill"},
        // odd head dims (scalar loads) and a value head size other than the key's
        {1, 4, 2, 20, 33, 17, {{0, 5, 6}}, 9, {9, 3}, {1, 0, -1, 1, 0, 0}, "odd"},
        {2, 6, 3, 24, 64, 40, {{0, 10, 3}, {1, 23, 1}}, 12, {5, 12, 7}, {2, -1, 0, 1}, "dv"},
    };
    for (const Cfg& cfg : cfgs) {
        OpCase c;
        c.op = MNEMO_OP_ATTENTION;
        std::vector<int32_t> seq, pos;
        seq_pos_of(cfg.runs, seq, pos);
        const int64_t n = static_cast<int64_t>(seq.size()), blocks = static_cast<int64_t>(cfg.plen.size());
        c.name = "attention_prefix_" + std::string(cfg.label) + "_S" + std::to_string(cfg.s) + "_Hq" + std::to_string(cfg.hq) +
                 "_Hkv" + std::to_string(cfg.hkv) + "_C" + std::to_string(cfg.ctx) + "_D" + std::to_string(cfg.d) +
                 (cfg.dv != cfg.d ? "_Dv" + std::to_string(cfg.dv) : std::string()) + "_B" + std::to_string(blocks) + "_M" +
                 std::to_string(cfg.slots) + "_" + runs_name(cfg.runs);
        // Random caches and prefix slabs everywhere, also past pos[n] and past plen[b]: reading
        // either changes the result.
        c.inputs = {f32({n, cfg.hq, cfg.d}), f32({cfg.s, cfg.hkv, cfg.ctx, cfg.d}), f32({cfg.s, cfg.hkv, cfg.ctx, cfg.dv}),
                    i32(seq), i32(pos), f32({blocks, cfg.hkv, cfg.slots, cfg.d}), f32({blocks, cfg.hkv, cfg.slots, cfg.dv}),
                    i32(cfg.plen)};
        if (cfg.pblock == kPattern) {
            std::vector<int32_t> pb;
            for (int64_t i = 0; i < n; ++i)
                pb.push_back(i % 5 == 0 ? static_cast<int32_t>(-1 - i % 3) : static_cast<int32_t>((i / 7) % blocks));
            c.inputs.push_back(i32(pb));
        } else if (!cfg.pblock.empty()) {
            c.inputs.push_back(i32(cfg.pblock));
        }
        c.fparams[0] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg.d)));
        out.push_back(c);
    }
}

// Queries at scattered positions (kv_store_scattered's tokens: token i of sequence i % S at
// (5i + 2) % C, not in position order), with odd head sizes (D = 20 / Dv = 12, D = 8 / Dv = 7), GQA
// 2 and 3, one head, and 32 query heads over 4 kv heads on a 300-slot cache (from the CPU module's
// former self-test).
inline void attention_scattered(std::vector<OpCase>& out) {
    for (const Scattered& k : scattered_shapes()) {
        OpCase c;
        c.op = MNEMO_OP_ATTENTION;
        std::vector<int32_t> seq, pos;
        scattered_seq_pos(k, seq, pos);
        c.name = "attention_scattered_S" + std::to_string(k.s) + "_Hq" + std::to_string(k.hq) + "_Hkv" + std::to_string(k.hkv) +
                 "_C" + std::to_string(k.ctx) + "_D" + std::to_string(k.d) + "_Dv" + std::to_string(k.dv) + "_N" + std::to_string(k.n);
        c.inputs = {f32({k.n, k.hq, k.d}), f32({k.s, k.hkv, k.ctx, k.d}), f32({k.s, k.hkv, k.ctx, k.dv}), i32(seq), i32(pos)};
        c.fparams[0] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(k.d)));
        out.push_back(c);
    }
}

inline void attention_cases(std::vector<OpCase>& out) {
    attention(out);
    attention_prefix(out);
    attention_scattered(out);
    kv_type_cases(out);  // KV_STORE and ATTENTION with f16 / q8_0 caches
}

}  // namespace mnemo::conformance::detail
