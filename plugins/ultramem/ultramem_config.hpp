// config.json of an UltraMem (model_type "ultramem", the official UltraMemLayerV1) or UltraMemV2
// ("ultramem_v2", UltraMemLayerV2) model: the HF Llama-style backbone fields plugins/common reads,
// the OLMo per-head QK-norm switch, and the memory layers' mem_* fields (common/ultramem_fields).
// docs/models/ultramem.md and ultramem_v2.md list every field.
#pragma once

#include <string>

#include "llama_config.hpp"
#include "ultramem_fields.hpp"

namespace mnemo::ultramem {

struct UltraMemConfig {
    llama::LlamaConfig base;
    bool qk_norm = true;  // OLMo attention_layer_norm: per-head q_norm/k_norm gains [head_dim]
    MemoryLayersConfig memory;
};

// Reads and checks config.json; errors name the field and what the official code would do.
UltraMemConfig read_ultramem_config(const plugin::Host& host);

std::string describe(const UltraMemConfig& c);

}  // namespace mnemo::ultramem
