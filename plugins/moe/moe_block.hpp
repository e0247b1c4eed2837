// The sparse MoE feed-forward block: a linear router choosing k of E SwiGLU experts per token,
// and the experts themselves (one MOE_FFN op over the stacked expert weights).
#pragma once

#include <string>

#include "moe_config.hpp"
#include "mnemo/plugin.hpp"

namespace mnemo::moe {

struct MoeBlock {
    mnemo_tid router = -1;          // W_g [E, D]
    mnemo_tid gate = -1, up = -1;   // [E, F, D], expert e's W_gate / W_up
    mnemo_tid down = -1;            // [E, D, F]
};

// Declares `<prefix><block>.gate.weight` and every `<prefix><block>.experts.<e>.<gate|up|down>.weight`
// (stacked into one tensor per projection). A checkpoint holding more experts than the config
// names is refused: the config is then almost certainly not this checkpoint's.
MoeBlock declare_moe(const plugin::Host& h, const MoeConfig& c, const std::string& prefix);

// out[n] = Σ_j w[n,j] · W_down[e_j] (SiLU(W_gate[e_j] x[n]) ⊙ W_up[e_j] x[n]) over the k experts
// e_j the router picks for token n, with weights w as the config's router style says.
plugin::T moe_ffn(const plugin::Graph& g, const MoeConfig& c, const MoeBlock& b, plugin::T x);

}  // namespace mnemo::moe
