// Conformance cases of ATTN_MASS (Memory3 §3.3 token selection).
#pragma once

#include "conformance/op_case.hpp"

namespace mnemo::conformance::detail {

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

inline void attn_mass_cases(std::vector<OpCase>& out) {
    attn_mass(out);
}

}  // namespace mnemo::conformance::detail
