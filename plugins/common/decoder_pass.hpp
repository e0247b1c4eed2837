// One forward pass of a Llama-family decoder, seen from a layer: what every layer reads (the
// tokens' RoPE positions, the RMSNorm epsilon) and the steps the papers write the same way in
// every model, so that a plugin's build() spells only its own block:
//     const blocks::Pass pass(g, c, ends_);
//     T h = pass.embed();
//     for (const Layer& l : layers_) {
//         h = g.add(h, pass.attention(l.attn, pass.norm(h, l.norms.attn)));  // h + Attn(RMSNorm(h) ⊙ g_in)
//         h = g.add(h, <the model's FFN>(pass.norm(h, l.norms.ffn)));          // h + FFN(RMSNorm(h) ⊙ g_post)
//     }
//     pass.logits(h);
#pragma once

#include "llama_config.hpp"
#include "mnemo/plugin.hpp"
#include "transformer_blocks.hpp"

namespace mnemo::blocks {

class Pass {
public:
    // Fetches the positions once; g, c and ends must outlive the pass (build() locals and members).
    Pass(const Graph& g, const llama::LlamaConfig& c, const DecoderEnds& ends);

    // What attentions of the model's own (OLMo, memory blocks) read.
    const Positions& positions() const { return p_; }

    // [N, hidden] embeddings of the batch's tokens.
    T embed() const;
    // RMSNorm(x) ⊙ gain
    T norm(T x, mnemo_tid gain) const;
    // The attention sub-layer output for the (already normed) x; rope_mode as blocks::attention.
    T attention(const Attention& a, T x, int64_t rope_mode = 0) const;
    // Final norm and LM head for the rows that ask for logits; sets the graph output.
    void logits(T h) const;

private:
    const Graph& g_;
    const llama::LlamaConfig& c_;
    const DecoderEnds& ends_;
    Positions p_;
    float eps_;
};

}  // namespace mnemo::blocks
