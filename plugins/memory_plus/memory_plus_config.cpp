#include "memory_plus_config.hpp"

#include <algorithm>
#include <sstream>

#include "config_checks.hpp"

namespace mnemo::memory_plus {

using config::num;
using config::require;

bool MemoryPlusConfig::is_memory_layer(int64_t layer) const {
    return std::binary_search(mem_layers.begin(), mem_layers.end(), layer);
}

MemoryPlusConfig read_memory_plus_config(const plugin::Host& h) {
    MemoryPlusConfig c;
    c.base = llama::read_config(h);
    const llama::LlamaConfig& b = c.base;
    c.rope_interleaved = h.get_bool("rope_interleaved", true);

    c.mem_layers = llama::read_int_list(h, "mem_layers");
    for (int64_t l : c.mem_layers)
        require(l >= 0 && l < b.layers, "mem_layers holds layer " + num(l) + ", but the model has layers 0.." +
                                            num(b.layers - 1) + " (num_hidden_layers " + num(b.layers) + ")");
    std::sort(c.mem_layers.begin(), c.mem_layers.end());
    for (size_t i = 1; i < c.mem_layers.size(); ++i)
        require(c.mem_layers[i] != c.mem_layers[i - 1], "mem_layers lists layer " + num(c.mem_layers[i]) + " twice");

    c.n_keys = h.get_int("mem_n_keys");
    c.heads = h.get_int("mem_heads");
    c.knn = h.get_int("mem_knn");
    c.k_dim = h.get_int("mem_k_dim");
    const int64_t v_dim = h.get_int("mem_v_dim", -1);
    c.share_values = h.get_bool("mem_share_values", true);
    c.swilu = h.get_bool("swilu_projection", true);
    c.gated = h.get_bool("mem_gated", false);
    c.peer = h.get_bool("peer_variant", false);
    c.query_bias = h.get_bool("mem_query_bias", true);
    require(!h.get_bool("mem_query_batchnorm", false),
            "mem_query_batchnorm is not supported (the released Memory+ code never enables it)");

    // Value indices i*n_keys + j travel as int32.
    require(c.n_keys >= 1 && c.n_keys <= 46340, "mem_n_keys must be in 1..46340 (n_keys² value rows are indexed "
                                                "with 32-bit integers), got " + num(c.n_keys));
    require(c.heads >= 2, "mem_heads must be >= 2 (the Memory+ code asserts it), got " + num(c.heads));
    require(c.k_dim >= 2 && c.k_dim % 2 == 0,
            "mem_k_dim must be even and >= 2 (each query splits into two halves), got " + num(c.k_dim));
    require(c.knn >= 1 && c.knn <= c.n_keys, "mem_knn must be in 1..mem_n_keys (" + num(c.n_keys) +
                                                 ": the top knn of each sub-key side are kept), got " + num(c.knn));
    require(v_dim == -1 || v_dim > 0, "mem_v_dim must be -1 (the hidden size) or > 0, got " + num(v_dim));
    require(!(c.peer && v_dim > 0), "peer_variant needs mem_v_dim = -1: the PEER experts' rows are dotted with the "
                                    "hidden state, so they have hidden_size (" + num(b.hidden) + ") columns; got mem_v_dim " +
                                        num(v_dim));
    c.v_dim_given = v_dim > 0;
    c.v_dim = v_dim > 0 ? v_dim : b.hidden;
    return c;
}

std::string describe(const MemoryPlusConfig& c) {
    std::ostringstream s;
    const llama::LlamaConfig& b = c.base;
    s << "memory_plus (" << b.layers << " layers, dim " << b.hidden << ", heads " << b.heads << "/" << b.kv_heads
      << ", head_dim " << b.head_dim << ", ffn " << b.ffn << ", RoPE " << (c.rope_interleaved ? "interleaved" : "halves")
      << "; memory at layers";
    for (int64_t l : c.mem_layers) s << " " << l;
    s << ": " << (c.peer ? "PEER " : "") << c.n_keys << "² " << (c.share_values ? "shared " : "per-layer ")
      << "values x " << c.v_dim << ", " << c.heads << " heads, knn " << c.knn << ", k_dim " << c.k_dim;
    if (!c.peer) s << (c.swilu ? ", swilu" : "");
    if (c.gated) s << ", gated";
    s << ")";
    return s.str();
}

}  // namespace mnemo::memory_plus
