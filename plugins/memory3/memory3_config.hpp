// Hyper-parameters of a Memory3 model (shared/papers/004, §3.1-3.3): an HF Llama backbone read by
// llama::read_config, plus the optional config.json object "memory3" (docs in
// tools/reference/memory3.py, "Model folder format"). Memory3 adds no parameters (§3). A
// checkpoint may also carry UltraMemV2 memory layers: the top-level mem_* fields of model_type
// "ultramem_v2" (common/ultramem_fields), switched on by the presence of mem_insert_way
// (docs/models/memory3.md, "Memory layers").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llama_config.hpp"
#include "mnemo/plugin.hpp"
#include "ultramem_fields.hpp"

namespace mnemo::memory3 {

// How the writer weighs a reference token (§3.3): "softmax" sums the attention weights every
// reference token pays it; "exp_sum" sums the unnormalised exp(score), the approximation the
// authors' implementation used. The value is the ATTN_MASS op's mode.
enum class Selection { Softmax = 0, ExpSum = 1 };

struct Memory3Config {
    llama::LlamaConfig base;
    std::vector<int64_t> memory_layers;  // ascending; default range(L / 2) (§3.3: "the first half")
    int64_t tokens_per_head = 8;         // reference tokens kept per kv head (§3.3)
    int64_t reference_length = 128;      // R: most tokens of a reference, its BOS not counted (§3.1)
    int64_t chunk_length = 64;           // context tokens that share one retrieval (§3.1)
    int64_t references_per_chunk = 5;    // most memories one chunk reads (§3.1)
    std::string reference_bos = "<s>Reference:";  // §3.2's modified BOS
    std::vector<int32_t> prefix_ids;     // its token ids (b of them; may be none)
    Selection selection = Selection::Softmax;
    int64_t retrieval_layer = 0;         // "hidden" is the state after this many layers
    // UltraMemV2 memory layers (mem_* fields); empty without mem_insert_way. Not to be confused
    // with memory_layers above, the layers that read explicit memories.
    std::optional<ultramem::MemoryLayersConfig> ultramem;

    bool is_memory_layer(int64_t layer) const;
    int64_t n_prefix() const { return static_cast<int64_t>(prefix_ids.size()); }
    // Prefix slots of a memory layer's block: the reference BOS, then every memory's tokens.
    int64_t memory_slots() const { return n_prefix() + references_per_chunk * tokens_per_head; }
};

// Reads and checks config.json; errors name config.json and the field. The reference BOS ids
// come from memory3.reference_bos_ids, else from tokenizing memory3.reference_bos with the
// checkpoint's tokenizer.
Memory3Config read_config(const plugin::Host& host);

// "memory3 (llama GQA 4/2, memory layers 0-1, 8 tokens/head, chunk 64)", then the UltraMemV2
// memory layers when there are any ("; UltraMemV2 memory full (4 layers): TDQKR ...").
std::string describe(const Memory3Config& c);

}  // namespace mnemo::memory3
