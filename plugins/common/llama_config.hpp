// Hyper-parameters of the Llama family (Llama 2/3, Qwen2, OLMo-2) read from config.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mnemo/plugin.hpp"

namespace mnemo::llama {

enum class Variant { Llama, Qwen2, Olmo2 };

struct RopeScaling {
    std::string type = "default";  // "default", "linear", "llama3"
    double factor = 1.0;
    double low_freq_factor = 1.0;
    double high_freq_factor = 4.0;
    double original_max_positions = 8192;
    // Per-frequency divisors (GGUF's rope_freqs tensor, config field rope_freq_factors, head_dim/2
    // of them): frequency j is divided by factor j after the scaling above.
    std::vector<double> freq_factors;
};

struct LlamaConfig {
    Variant variant = Variant::Llama;
    std::string model_type;
    int64_t hidden = 0;
    int64_t layers = 0;
    int64_t heads = 0;
    int64_t kv_heads = 0;
    int64_t head_dim = 0;
    int64_t ffn = 0;
    int64_t vocab = 0;
    int64_t max_positions = 0;
    double rms_eps = 1e-6;
    double rope_theta = 10000.0;
    RopeScaling rope_scaling;
    bool tied_embeddings = false;
    bool qkv_bias = false;  // Qwen2 always; Llama when attention_bias
    bool o_bias = false;    // Llama attention_bias also covers o_proj
    bool mlp_bias = false;
    bool qk_norm = false;   // OLMo-2: RMSNorm over the whole q / k projections
    bool post_norms = false;  // OLMo-2: norms after attention / MLP instead of before
    // RoPE rotates adjacent pairs (2i, 2i+1) instead of halves (i, i + d/2): the weights of a
    // GGUF `llama` file, whose W_q / W_k rows are stored permuted for it (config field
    // rope_interleaved, written by the GGUF reader).
    bool rope_interleaved = false;
};

// Reads and checks config.json; errors name the field and the expected value.
LlamaConfig read_config(const plugin::Host& host);

std::string describe(const LlamaConfig& c);

// A config.json list of integers ("memory_anchors": [1, 3]) read element by element. Errors name
// the field: absent, not a non-empty list, or an element that is not an integer.
std::vector<int64_t> read_int_list(const plugin::Host& host, const std::string& field);

}  // namespace mnemo::llama
