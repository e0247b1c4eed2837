// Conformance cases of the explicit-memory attention ops: ROPE with a position offset, ATTENTION
// with a prefix (shared or per-query block), ATTN_MASS. Included by op_cases.hpp after its helpers.
//
// Memory3 shapes: a memory block holds M = 40..50 key/value slots per kv head, a query reads one
// block (decode: the same one for every query; prefill: queries of different chunks read different
// blocks in one batch). Kept small: lavapipe runs every case too.
#pragma once

namespace mnemo::conformance::detail {

inline std::string signed_name(int64_t v) { return v < 0 ? "m" + std::to_string(-v) : std::to_string(v); }

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

// ATTN_MASS: several sequences (contiguous and interleaved), padding rows (seq -1), a first
// counted position above 0, a sequence with a single counted token, both modes, GQA 1, 2 and 4.
inline void attn_mass(std::vector<OpCase>& out) {
    struct Cfg {
        int64_t hq, hkv, d;
        std::vector<SeqRun> runs;  // seq -1 runs are padding
        int64_t first;
        bool interleave;  // shuffle the rows of the runs deterministically
        const char* label;
    };
    const std::vector<Cfg> cfgs = {
        {8, 2, 64, {{0, 0, 15}, {3, 0, 12}, {-1, 4, 5}, {1, 0, 8}, {5, 0, 3}}, 2, false, "runs"},
        {4, 4, 33, {{2, 0, 10}, {0, 0, 9}, {-3, 0, 4}, {1, 5, 6}}, 0, true, "mixed"},
        {8, 4, 128, {{0, 0, 100}, {1, 0, 60}, {-1, 0, 8}}, 4, false, "refs"},
    };
    for (const Cfg& cfg : cfgs)
        for (int64_t mode : {0, 1}) {
            OpCase c;
            c.op = MNEMO_OP_ATTN_MASS;
            std::vector<int32_t> seq, pos;
            seq_pos_of(cfg.runs, seq, pos);
            const int64_t n = static_cast<int64_t>(seq.size());
            c.name = "attn_mass_" + std::string(cfg.label) + (mode == 0 ? "_softmax" : "_exp") + "_Hq" + std::to_string(cfg.hq) +
                     "_Hkv" + std::to_string(cfg.hkv) + "_D" + std::to_string(cfg.d) + "_first" + std::to_string(cfg.first) +
                     "_" + runs_name(cfg.runs);
            if (cfg.interleave) {  // a fixed permutation: the tokens of a sequence are not adjacent
                CaseRng rng(name_seed(c.name) ^ 5);
                for (int64_t i = n - 1; i > 0; --i) {
                    const int64_t j = rng.below(static_cast<int32_t>(i + 1));
                    std::swap(seq[static_cast<size_t>(i)], seq[static_cast<size_t>(j)]);
                    std::swap(pos[static_cast<size_t>(i)], pos[static_cast<size_t>(j)]);
                }
            }
            c.inputs = {f32({n, cfg.hq, cfg.d}), f32({n, cfg.hkv, cfg.d}), i32(seq), i32(pos)};
            c.iparams[0] = mode;
            c.iparams[1] = cfg.first;
            c.fparams[0] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg.d)));
            out.push_back(c);
        }
}

inline void memory_prefix(std::vector<OpCase>& out) {
    rope_offset(out);
    attention_prefix(out);
    attn_mass(out);
}

}  // namespace mnemo::conformance::detail
