#include "midus_config.hpp"

#include <cstdint>
#include <sstream>

#include "config_checks.hpp"

namespace mnemo::midus {

using config::require;

MidusConfig read_midus_config(const plugin::Host& h) {
    MidusConfig c;
    c.base = llama::read_config(h);  // also rejects an odd or zero head_dim (RoPE pairs)
    const llama::LlamaConfig& b = c.base;
    // HML concatenates the H head outputs of width d_h into the residual stream (eq. 5), so the
    // heads must tile the hidden size exactly.
    require(b.heads * b.head_dim == b.hidden,
            "MIDUS memory blocks add [H x head_dim] to the hidden state (eq. 5): num_attention_heads (" +
                std::to_string(b.heads) + ") x head_dim (" + std::to_string(b.head_dim) + ") must equal hidden_size (" +
                std::to_string(b.hidden) + ")");
    // Product keys split each head's query into row and column halves of d_p = d_h / 2.
    require(b.head_dim % 2 == 0, "head_dim must be even for product keys (d_p = head_dim / 2), got " +
                                     std::to_string(b.head_dim));

    c.anchors = llama::read_int_list(h, "memory_anchors");
    for (size_t j = 0; j < c.anchors.size(); ++j) {
        const int64_t a = c.anchors[j];
        require(a >= 0 && a < b.layers, "memory_anchors[" + std::to_string(j) + "] = " + std::to_string(a) +
                                             " is not a base block index 0.." + std::to_string(b.layers - 1));
        if (j > 0)  // (the message reads anchors[j - 1]: build it only when there is one)
            require(a > c.anchors[j - 1],
                    "memory_anchors must be strictly increasing (one memory block before each anchor block), but [" +
                        std::to_string(j - 1) + "] = " + std::to_string(c.anchors[j - 1]) + " and [" +
                        std::to_string(j) + "] = " + std::to_string(a));
    }

    c.n_keys = h.get_int("memory_n_keys");
    // n² composite keys are addressed by i32 indices.
    require(c.n_keys >= 1 && c.n_keys <= 46340,  // (46340² <= INT32_MAX; no n² that could overflow)
            "memory_n_keys must be in 1..46340 (n² composite keys fit i32 indices), got " + std::to_string(c.n_keys));
    c.topk = h.get_int("memory_topk");
    require(c.topk >= 1 && c.topk <= c.n_keys, "memory_topk (" + std::to_string(c.topk) +
                                                   ") must be in 1..memory_n_keys (" + std::to_string(c.n_keys) +
                                                   "): the first stage keeps k of the n sub-keys per side");
    c.latent_dim = h.get_int("memory_latent_dim", b.head_dim);
    require(c.latent_dim >= 1, "memory_latent_dim must be >= 1, got " + std::to_string(c.latent_dim));
    return c;
}

std::string describe(const MidusConfig& c) {
    std::ostringstream s;
    s << "MIDUS-HML " << llama::describe(c.base) << " + " << c.anchors.size() << " memory blocks before blocks {";
    for (size_t j = 0; j < c.anchors.size(); ++j) s << (j ? "," : "") << c.anchors[j];
    s << "}, n " << c.n_keys << " (" << c.n_keys * c.n_keys << " keys/head), top-" << c.topk << ", r " << c.latent_dim;
    return s.str();
}

}  // namespace mnemo::midus
