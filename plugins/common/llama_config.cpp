#include "llama_config.hpp"

#include <sstream>

#include "config_checks.hpp"

namespace mnemo::llama {

using config::require;

LlamaConfig read_config(const plugin::Host& h) {
    LlamaConfig c;
    c.model_type = h.get_string("model_type", "");
    if (c.model_type == "qwen2") {
        c.variant = Variant::Qwen2;
        c.qkv_bias = true;
    } else if (c.model_type == "olmo2") {
        c.variant = Variant::Olmo2;
        c.qk_norm = true;
        c.post_norms = true;
    }
    c.hidden = h.get_int("hidden_size");
    c.layers = h.get_int("num_hidden_layers");
    c.heads = h.get_int("num_attention_heads");
    c.kv_heads = h.get_int("num_key_value_heads", c.heads);
    c.ffn = h.get_int("intermediate_size");
    c.vocab = h.get_int("vocab_size");
    require(c.hidden > 0 && c.layers > 0 && c.heads > 0 && c.ffn > 0 && c.vocab > 0,
            "hidden_size, num_hidden_layers, num_attention_heads, intermediate_size and vocab_size must be > 0");
    require(c.kv_heads > 0 && c.heads % c.kv_heads == 0,
            "num_attention_heads (" + std::to_string(c.heads) + ") must be a multiple of num_key_value_heads (" +
                std::to_string(c.kv_heads) + ")");
    c.head_dim = h.get_int("head_dim", c.hidden / c.heads);
    require(c.head_dim > 0 && c.head_dim % 2 == 0, "head_dim must be even and > 0, got " + std::to_string(c.head_dim));
    require(h.has("head_dim") || c.hidden % c.heads == 0,
            "hidden_size must be a multiple of num_attention_heads when head_dim is not given");
    c.max_positions = h.get_int("max_position_embeddings", 0);
    c.rms_eps = h.get_float("rms_norm_eps", 1e-6);
    c.rope_theta = h.get_float("rope_theta", 10000.0);
    require(c.rope_theta > 0, "rope_theta must be > 0");
    c.tied_embeddings = h.get_bool("tie_word_embeddings", false);
    if (c.variant == Variant::Llama) {
        c.qkv_bias = c.o_bias = h.get_bool("attention_bias", false);
        c.mlp_bias = h.get_bool("mlp_bias", false);
    }
    if (h.has("partial_rotary_factor"))
        require(h.get_float("partial_rotary_factor") == 1.0, "partial_rotary_factor other than 1 is not supported");

    if (h.has("rope_scaling")) {
        RopeScaling& s = c.rope_scaling;
        // transformers writes "rope_type"; older configs write "type".
        s.type = h.has("rope_scaling.rope_type") ? h.get_string("rope_scaling.rope_type", "default")
                                                 : h.get_string("rope_scaling.type", "default");
        if (s.type == "linear") {
            s.factor = h.get_float("rope_scaling.factor");
        } else if (s.type == "llama3") {
            s.factor = h.get_float("rope_scaling.factor");
            s.low_freq_factor = h.get_float("rope_scaling.low_freq_factor");
            s.high_freq_factor = h.get_float("rope_scaling.high_freq_factor");
            s.original_max_positions = h.get_float("rope_scaling.original_max_position_embeddings");
            require(s.high_freq_factor > s.low_freq_factor,
                    "rope_scaling.high_freq_factor must exceed rope_scaling.low_freq_factor");
        } else if (s.type != "default") {
            throw plugin::PluginError("config.json: rope_scaling type '" + s.type +
                                      "' is not supported (supported: default, linear, llama3)");
        }
        require(s.factor > 0, "rope_scaling.factor must be > 0");
    }
    c.rope_interleaved = h.get_bool("rope_interleaved", false);
    if (h.has("rope_freq_factors")) {
        require(h.has("rope_freq_factors.0"), "rope_freq_factors must be a non-empty list of numbers");
        for (size_t i = 0; h.has(("rope_freq_factors." + std::to_string(i)).c_str()); ++i) {
            const double f = h.get_float(("rope_freq_factors." + std::to_string(i)).c_str());
            require(f > 0, "rope_freq_factors." + std::to_string(i) + " must be > 0");
            c.rope_scaling.freq_factors.push_back(f);
        }
        require(static_cast<int64_t>(c.rope_scaling.freq_factors.size()) == c.head_dim / 2,
                "rope_freq_factors has " + std::to_string(c.rope_scaling.freq_factors.size()) + " factors (expected head_dim / 2 = " +
                    std::to_string(c.head_dim / 2) + ")");
    }
    return c;
}

std::string describe(const LlamaConfig& c) {
    std::ostringstream s;
    s << c.model_type << " (" << c.layers << " layers, dim " << c.hidden << ", heads " << c.heads << "/" << c.kv_heads
      << ", head_dim " << c.head_dim << ", ffn " << c.ffn << ", RoPE " << c.rope_scaling.type;
    if (!c.rope_scaling.freq_factors.empty()) s << " with frequency factors";
    if (c.rope_interleaved) s << ", interleaved";
    if (c.tied_embeddings) s << ", tied embeddings";
    if (c.qk_norm) s << ", QK-norm";
    s << ")";
    return s.str();
}

std::vector<int64_t> read_int_list(const plugin::Host& h, const std::string& field) {
    require(h.has(field.c_str()), "field '" + field + "' is missing (expected a list of integers)");
    // The host resolves "field.i" to the i-th element of a list; a scalar or an empty list has no
    // element 0.
    require(h.has((field + ".0").c_str()), "field '" + field + "' must be a non-empty list of integers");
    std::vector<int64_t> out;
    for (size_t i = 0;; ++i) {
        const std::string path = field + "." + std::to_string(i);
        if (!h.has(path.c_str())) break;
        out.push_back(h.get_int(path.c_str()));
    }
    return out;
}

}  // namespace mnemo::llama
