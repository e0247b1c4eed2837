// A GGUF file as a model the plugins load: the hyper-parameters become the config.json fields the
// plugin reads, the tensors a Checkpoint under the plugin's names. F32, F16 and BF16 tensors are
// used in place inside the file's mapping; quantized tensors (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) are
// dequantized to F32 at load until the backends compute with them directly (docs/gguf.md says
// what that costs). Families: see gguf_llama_names.hpp.
#pragma once

#include <string>

#include "mnemo/io/json.hpp"
#include "mnemo/io/safetensors.hpp"

namespace mnemo::detail {

struct GgufModel {
    json::Value config;  // as a config.json of the model would be
    Checkpoint checkpoint;
};

// Throws mnemo::Error naming the file and the key or tensor that is missing or wrong.
GgufModel open_gguf_model(const std::string& path);

}  // namespace mnemo::detail
