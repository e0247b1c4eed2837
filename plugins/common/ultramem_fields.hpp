// The mem_* fields of config.json that describe UltraMem (the official UltraMemLayerV1) or
// UltraMemV2 (UltraMemLayerV2) memory layers: the official training config's names, plus the
// constructor constants the official model.py never exposes (mem_tucker_rank,
// mem_tucker_multihead). Shared by the ultramem plugin (an OLMo backbone) and the memory3 plugin
// (a Llama backbone with UltraMemV2 memory layers); docs/models/ultramem.md and ultramem_v2.md
// list every field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mnemo/plugin.hpp"

namespace mnemo::ultramem {

enum class Version { V1, V2 };

// Memory layer i reads block read_block's ff_norm output; its output is added to the residual
// after block add_block returns (olmo/model.py, mem_insert_way).
struct Placement {
    int64_t read_block = 0;
    int64_t add_block = 0;
};

// The memory layers of one model; sizes derived as the official constructors derive them.
struct MemoryLayersConfig {
    Version version = Version::V1;
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

// Reads and checks the mem_* fields for a backbone of `layers` blocks, read as `version` reads
// them; `default_insert_way` stands in for an absent mem_insert_way ("" makes it required).
// Errors say config.json, name the field and what the official code would do.
MemoryLayersConfig read_memory_layers_config(const plugin::Host& host, int64_t layers, Version version,
                                             const std::string& default_insert_way);

// "memory full (4 layers): TDQKR H=2 R=2 C=2 Nk=12 kdim=8 knn=4, shared table 64x8 ..."
std::string describe(const MemoryLayersConfig& c);

}  // namespace mnemo::ultramem
