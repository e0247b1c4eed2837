// Sampling flags shared by `run` and `chat`.
#pragma once

#include <string>
#include <vector>

#include "app/args.hpp"
#include "mnemo/session/sampling.hpp"

namespace mnemo::cli {

struct SamplingFlags {
    SamplingParams params;
    std::vector<std::string> stops;
    bool greedy = false;

    // The parameters to use: --greedy forces temperature 0.
    SamplingParams resolved() const {
        SamplingParams p = params;
        if (greedy) p.temperature = 0.0f;
        return p;
    }
};

inline void add_sampling_flags(app::ArgParser& p, SamplingFlags& f) {
    p.float_opt("--temp", "T", "temperature; <= 0 picks the most likely token (default: 0.8)",
                &f.params.temperature, -1e9f, 1e9f)
        .int_opt("--top-k", "K", "keep the K most likely tokens; 0 = off (default: 40)", &f.params.top_k, 0,
                 1 << 30)
        .float_opt("--top-p", "P", "nucleus sampling threshold; 1 = off (default: 0.95)", &f.params.top_p, 0.0f,
                   1.0f)
        .float_opt("--min-p", "P", "drop tokens below P x the best probability; 0 = off (default: 0.05)",
                   &f.params.min_p, 0.0f, 1.0f)
        .float_opt("--repeat-penalty", "X", "penalty for recently seen tokens; 1 = off (default: 1.0)",
                   &f.params.repeat_penalty, 0.0f, 1e6f)
        .int_opt("--repeat-last-n", "N", "tokens the repeat penalty looks back over; -1 = all (default: 64)",
                 &f.params.repeat_last_n, -1, 1 << 30)
        .u64_opt("--seed", "S", "random seed (default: 12648430)", &f.params.seed)
        .list_opt("--stop", "STR", "stop when this text is generated (repeatable)", &f.stops)
        .flag("--greedy", "always pick the most likely token (same as --temp 0)", &f.greedy);
}

}  // namespace mnemo::cli
