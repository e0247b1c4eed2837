// How the Llama family (GGUF architectures `llama` and `qwen2`) is written in GGUF, as llama.cpp's
// converter writes it: the metadata keys of the hyper-parameters and the tensor names, both ways
// between GGUF's names ("blk.3.attn_q.weight") and the Hugging Face names the llama plugin
// declares ("model.layers.3.self_attn.q_proj.weight").
//
// `llama` files store W_q and W_k with the rows of each head permuted so that RoPE rotates
// adjacent pairs (2i, 2i+1) instead of HF's halves (i, i + d/2); attention scores do not change
// under a permutation applied to both q and k, so Mnemo reads such weights as they are and runs
// RoPE in its interleaved mode (config field `rope_interleaved`). `qwen2` files keep HF's order.
#pragma once

#include <optional>
#include <string>

namespace mnemo::detail {

struct GgufLlamaArch {
    const char* gguf_name;    // general.architecture
    const char* model_type;   // config.json's model_type, the plugin's key
    bool permuted_qk;         // W_q / W_k rows stored for interleaved RoPE
};

// nullptr for an architecture outside the family.
const GgufLlamaArch* gguf_llama_arch(const std::string& gguf_name);
const GgufLlamaArch* gguf_llama_arch_for_model_type(const std::string& model_type);
// "llama, qwen2": for messages.
std::string gguf_llama_arch_names();

// Tensor names: nullopt when the name is not one of the family's tensors.
std::optional<std::string> hf_tensor_name(const std::string& gguf_name);
std::optional<std::string> gguf_tensor_name(const std::string& hf_name);

// The permutation between HF's rotate-half rows and GGUF's interleaved rows of one projection
// [heads * head_dim, in]: GGUF row `r` of a head holds HF row hf_row_of_gguf_row(r, head_dim).
inline int64_t hf_row_of_gguf_row(int64_t r, int64_t head_dim) {
    const int64_t head = r / head_dim, within = r % head_dim;
    return head * head_dim + (within % 2) * (head_dim / 2) + within / 2;
}

}  // namespace mnemo::detail
