// Hyper-parameters of an XLM transformer with product-key memories (Lample et al. 2019), read
// from config.json. The field names are XLM's own training flags (params in an XLM checkpoint),
// so a converter copies them; docs/models/pkm.md describes each one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mnemo/plugin.hpp"

namespace mnemo::pkm {

// Where a memory sits in block `layer` (XLM's "%i_in" / "%i_after" memories).
enum class MemWhere { In, After };

struct MemPosition {
    int64_t layer = 0;
    MemWhere where = MemWhere::In;
    std::string key() const;  // "2_in" / "2_after": the module name in XLM's state dict
};

struct PkmConfig {
    // Backbone (xlm/model/transformer.py TransformerModel).
    int64_t dim = 0;            // emb_dim
    int64_t layers = 0;         // n_layers
    int64_t heads = 0;          // n_heads
    int64_t head_dim = 0;       // emb_dim / n_heads
    int64_t ffn = 0;            // ffn_dim (XLM: 4 * emb_dim)
    int64_t vocab = 0;          // n_words
    int64_t max_positions = 0;  // max_position_embeddings (XLM's N_MAX_POSITIONS = 512)
    double ln_eps = 1e-12;      // layer_norm_eps (XLM's nn.LayerNorm(eps=1e-12))
    bool tied = true;           // share_inout_emb
    int64_t n_langs = 1;        // n_langs; a language embedding is added when > 1 and use_lang_emb
    bool use_lang_emb = true;
    int64_t lang_id = -1;  // lang_id: the language of every token (needed when n_langs > 1)

    // Memories (xlm/model/memory/memory.py HashingMemoryProductFast), shared by every position.
    std::vector<MemPosition> mem_positions;
    int64_t mem_k_dim = 0;   // full key / query size k; each half has k/2
    int64_t mem_heads = 0;   // H
    int64_t mem_knn = 0;     // candidates per side AND selected keys per head
    int64_t mem_n_keys = 0;  // sub-keys per side; n_keys^2 values
    int64_t mem_v_dim = 0;   // value size (must be emb_dim: the memory output is added to h)
    bool mem_query_bias = true;
    bool mem_query_batchnorm = false;
    double mem_bn_eps = 1e-5;  // torch BatchNorm1d default
    double mem_temperature = 1.0;
    bool mem_score_softmax = true;

    bool has_memory(int64_t layer, MemWhere where) const;
};

// Reads and checks config.json; errors name the field and what was expected.
PkmConfig read_config(const plugin::Host& host);

std::string describe(const PkmConfig& c);

}  // namespace mnemo::pkm
