#include "ultramem_config.hpp"

#include <sstream>

#include "config_checks.hpp"

namespace mnemo::ultramem {

UltraMemConfig read_ultramem_config(const plugin::Host& h) {
    UltraMemConfig c;
    c.base = llama::read_config(h);
    // The OLMo QK-norm is per head; transformer_blocks' full-width OLMo-2 norm must stay off.
    c.base.qk_norm = false;
    const llama::LlamaConfig& b = c.base;
    config::require(b.model_type == "ultramem" || b.model_type == "ultramem_v2",
                    "model_type '" + b.model_type + "' is not ultramem or ultramem_v2");
    c.qk_norm = h.get_bool("qk_norm", true);
    // V2's shipped configs put a memory after every block; V1 has no default placement.
    const bool v2 = b.model_type == "ultramem_v2";
    c.memory = read_memory_layers_config(h, b.layers, v2 ? Version::V2 : Version::V1, v2 ? "full" : "");
    return c;
}

std::string describe(const UltraMemConfig& c) {
    const llama::LlamaConfig& b = c.base;
    std::ostringstream s;
    s << (c.memory.v2() ? "UltraMemV2" : "UltraMem V1") << " on OLMo (" << b.layers << " layers, dim " << b.hidden
      << ", heads " << b.heads << "/" << b.kv_heads << ", SwiGLU " << b.ffn << (c.qk_norm ? ", per-head QK-norm" : "")
      << (b.tied_embeddings ? ", tied" : "") << "); " << describe(c.memory);
    return s.str();
}

}  // namespace mnemo::ultramem
