#include "gguf/gguf_llama_names.hpp"

#include <array>
#include <cstdlib>
#include <utility>

namespace mnemo::detail {
namespace {

constexpr std::array kArchs = {
    GgufLlamaArch{"llama", "llama", true},
    GgufLlamaArch{"qwen2", "qwen2", false},
};

// GGUF name -> HF name, for the tensors outside the layers.
constexpr std::array<std::pair<const char*, const char*>, 3> kGlobal = {{
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
}};

// blk.N.<gguf> <-> model.layers.N.<hf>
constexpr std::array<std::pair<const char*, const char*>, 15> kLayer = {{
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_output.bias", "self_attn.o_proj.bias"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
    {"ffn_gate.bias", "mlp.gate_proj.bias"},
    {"ffn_down.bias", "mlp.down_proj.bias"},
}};

// "<prefix><digits>.<rest>" -> (digits, rest)
std::optional<std::pair<std::string, std::string>> split_layer(const std::string& name, const std::string& prefix) {
    if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
    size_t i = prefix.size();
    const size_t start = i;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
    if (i == start || i - start > 6 || i >= name.size() || name[i] != '.') return std::nullopt;
    return std::make_pair(name.substr(start, i - start), name.substr(i + 1));
}

}  // namespace

const GgufLlamaArch* gguf_llama_arch(const std::string& gguf_name) {
    for (const GgufLlamaArch& a : kArchs)
        if (gguf_name == a.gguf_name) return &a;
    return nullptr;
}

const GgufLlamaArch* gguf_llama_arch_for_model_type(const std::string& model_type) {
    for (const GgufLlamaArch& a : kArchs)
        if (model_type == a.model_type) return &a;
    return nullptr;
}

std::string gguf_llama_arch_names() {
    std::string s;
    for (const GgufLlamaArch& a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a.gguf_name);
    return s;
}

std::optional<std::string> hf_tensor_name(const std::string& g) {
    for (const auto& [gguf, hf] : kGlobal)
        if (g == gguf) return std::string(hf);
    if (const auto parts = split_layer(g, "blk."))
        for (const auto& [gguf, hf] : kLayer)
            if (parts->second == gguf) return "model.layers." + parts->first + "." + hf;
    return std::nullopt;
}

std::optional<std::string> gguf_tensor_name(const std::string& h) {
    for (const auto& [gguf, hf] : kGlobal)
        if (h == hf) return std::string(gguf);
    if (const auto parts = split_layer(h, "model.layers."))
        for (const auto& [gguf, hf] : kLayer)
            if (parts->second == hf) return "blk." + parts->first + "." + gguf;
    return std::nullopt;
}

}  // namespace mnemo::detail
