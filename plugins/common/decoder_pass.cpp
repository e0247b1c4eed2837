#include "decoder_pass.hpp"

namespace mnemo::blocks {

Pass::Pass(const Graph& g, const llama::LlamaConfig& c, const DecoderEnds& ends)
    : g_(g), c_(c), ends_(ends), p_(blocks::positions(g, ends.inv_freq)), eps_(static_cast<float>(c.rms_eps)) {}

T Pass::embed() const { return embed_tokens(g_, ends_); }

T Pass::norm(T x, mnemo_tid gain) const { return g_.rms_norm(x, g_.param(gain), eps_); }

T Pass::attention(const Attention& a, T x, int64_t rope_mode) const {
    return blocks::attention(g_, c_, a, x, p_, rope_mode);
}

void Pass::logits(T h) const { output_logits(g_, ends_, h, eps_); }

}  // namespace mnemo::blocks
