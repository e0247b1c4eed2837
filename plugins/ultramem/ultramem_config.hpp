// config.json of an UltraMem (model_type "ultramem", the official UltraMemLayerV1) or UltraMemV2
// ("ultramem_v2", UltraMemLayerV2) model: the HF Llama-style backbone fields plugins/common reads,
// plus the official training config's mem_* fields under the same names, plus the constructor
// constants the official model.py never exposes (mem_tucker_rank, mem_tucker_multihead).
// docs/models/ultramem.md and ultramem_v2.md list every field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llama_config.hpp"

namespace mnemo::ultramem {

enum class Version { V1, V2 };

// Memory layer i reads block read_block's ff_norm output; its output is added to the residual
// after block add_block returns (olmo/model.py, mem_insert_way).
struct Placement {
    int64_t read_block = 0;
    int64_t add_block = 0;
};

struct UltraMemConfig {
    llama::LlamaConfig base;
    Version version = Version::V1;
    bool qk_norm = true;  // OLMo attention_layer_norm: per-head q_norm/k_norm gains [head_dim]

    std::string insert_way;
    std::vector<Placement> memories;  // memory-layer order = the order of mem_insert_way

    int64_t knum = 0, kdim = 0, vdim = 0, knn = 0;
    int64_t heads = 1;         // mem_head: memory heads (two share one query)
    int64_t rank = 2;          // mem_tucker_rank R
    int64_t cores = 2;         // mem_tucker_multihead C (multi-core scoring)
    int64_t value_expand = 4;  // mem_value_expand_time

    // V2 only
    int64_t pre_vdim = 0;
    double share_ratio = 1.0;
    bool q_for_each_rank = false;
    bool glu_act = false;

    // Derived sizes (see read_ultramem_config).
    int64_t key_expand = 1;      // V1: floor(sqrt(E)); V2: mem_key_expand_time
    int64_t sub_keys = 0;        // Nk = key_expand * knum (V2: * knum_r)
    int64_t value_num = 0;       // rows one layer addresses: knum² (V2: knum_r²)
    int64_t table_rows = 0;      // A: rows of the value table (V2: shared, knum² * memories)
    int64_t virtual_values = 0;  // shuffle length: groups * value_num
    int64_t groups = 1;          // virtual blocks of the index pipeline: E (V2: Ek²)
    int64_t query_blocks = 1;    // 2*kdim blocks in query_proj's output (V2 with q_for_each: R)

    bool v2() const { return version == Version::V2; }
    // V2 with value_expand_time 1 sums the Ek² groups before its single values_proj.
    bool sum_groups() const { return v2() && value_expand == 1; }
    int64_t values_proj_in() const { return vdim * (sum_groups() ? 1 : groups); }
    // First row of memory layer l's window in the value table (V2: l * knum², config knum).
    int64_t window_offset(int64_t l) const { return v2() ? l * knum * knum : 0; }
};

// Parses mem_insert_way ("full" or "a:b/c:d/..."); errors name the field and the pair.
std::vector<Placement> parse_insert_way(const std::string& text, int64_t layers);

// Reads and checks config.json; errors name the field and what the official code would do.
UltraMemConfig read_ultramem_config(const plugin::Host& host);

std::string describe(const UltraMemConfig& c);

}  // namespace mnemo::ultramem
