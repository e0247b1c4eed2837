#include "gguf/gguf_model.hpp"

#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "gguf/gguf_llama_names.hpp"
#include "gguf/gguf_mnemo_arch.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/gguf.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::detail {
namespace {

using json::Value;
using Members = std::vector<std::pair<std::string, Value>>;

Value int_value(int64_t v) { return Value::make_number(static_cast<double>(v), true, v); }
Value float_value(double v) { return Value::make_number(v, false, 0); }

// The config.json fields of the llama plugin from the `<arch>.*` keys (llama.cpp's names).
Members llama_config(const GgufFile& f, const GgufLlamaArch& arch, const GgufHeader& h) {
    const std::string a = arch.gguf_name;
    auto key = [&](const char* k) { return a + "." + k; };
    Members m;
    m.emplace_back("model_type", Value::make_string(arch.model_type));
    m.emplace_back("hidden_size", int_value(f.get_int(key("embedding_length"))));
    m.emplace_back("num_hidden_layers", int_value(f.get_int(key("block_count"))));
    m.emplace_back("intermediate_size", int_value(f.get_int(key("feed_forward_length"))));
    const int64_t heads = f.get_int(key("attention.head_count"));
    m.emplace_back("num_attention_heads", int_value(heads));
    m.emplace_back("num_key_value_heads", int_value(f.has(key("attention.head_count_kv")) ? f.get_int(key("attention.head_count_kv")) : heads));
    if (f.has(key("attention.key_length"))) m.emplace_back("head_dim", int_value(f.get_int(key("attention.key_length"))));
    if (f.has(key("context_length"))) m.emplace_back("max_position_embeddings", int_value(f.get_int(key("context_length"))));
    m.emplace_back("rms_norm_eps", float_value(f.get_float(key("attention.layer_norm_rms_epsilon"))));
    if (f.has(key("rope.freq_base"))) m.emplace_back("rope_theta", float_value(f.get_float(key("rope.freq_base"))));
    const GgufTensorInfo* embed = h.tensor("token_embd.weight");
    if (!embed || embed->ne.size() != 2) throw Error(f.path() + ": tensor 'token_embd.weight' is missing or not 2-dimensional");
    m.emplace_back("vocab_size", int_value(embed->ne[1]));
    m.emplace_back("tie_word_embeddings", Value::make_bool(h.tensor("output.weight") == nullptr));
    m.emplace_back("rope_interleaved", Value::make_bool(arch.permuted_qk));
    if (f.has(key("rope.scaling.type"))) {
        const std::string type = f.get_string(key("rope.scaling.type"));
        if (type == "linear") {
            m.emplace_back("rope_scaling", Value::make_object({{"rope_type", Value::make_string("linear")},
                                                               {"factor", float_value(f.get_float(key("rope.scaling.factor")))}}));
        } else if (type != "none") {
            throw Error(f.path() + ": key '" + key("rope.scaling.type") + "' is '" + printable(type, 64) +
                        "': Mnemo reads none and linear (and the factors of a rope_freqs tensor)");
        }
    }
    return m;
}

// rope_freqs.weight (llama.cpp's Llama 3 frequency factors): RoPE divides frequency j by factor j.
void add_rope_factors(const GgufFile& f, const GgufHeader& h, Members& m) {
    const GgufTensorInfo* t = h.tensor("rope_freqs.weight");
    if (!t) return;
    if (t->type != ggml_type::F32 || t->ne.size() != 1)
        throw Error(f.path() + ": tensor 'rope_freqs.weight' is " + ggml_type_label(t->type) + " with " + std::to_string(t->ne.size()) +
                    " dimensions (expected a 1-dimensional F32 tensor)");
    std::vector<float> v(static_cast<size_t>(t->ne[0]));
    std::memcpy(v.data(), f.tensor_data(*t), v.size() * sizeof(float));
    std::vector<Value> factors;
    for (const float x : v) factors.push_back(float_value(x));
    m.emplace_back("rope_freq_factors", Value::make_array(std::move(factors)));
}

// A Mnemo architecture's config: the folder's config.json, stored whole; its model_type must be
// the one the architecture names.
Value mnemo_config(const GgufFile& f, const std::string& model_type) {
    const std::string key(kGgufMnemoConfigKey);
    Value config = json::parse(f.get_string(key), f.path() + ": key '" + key + "'");
    const Value* mt = config.is_object() ? config.find("model_type") : nullptr;
    if (!mt || !mt->is_string() || mt->as_string() != model_type)
        throw Error(f.path() + ": key '" + key + "' does not hold a config.json object with model_type '" + printable(model_type, 64) +
                    "' (general.architecture says so)");
    return config;
}

}  // namespace

GgufModel open_gguf_model(const std::string& path) {
    auto file = std::make_shared<GgufFile>(path);
    const GgufHeader& h = file->header();
    const std::string arch_name = file->get_string("general.architecture");
    const GgufLlamaArch* arch = gguf_llama_arch(arch_name);
    const std::optional<std::string> mnemo_type = model_type_of_mnemo_arch(arch_name);
    if (!arch && !mnemo_type)
        throw Error(path + ": key 'general.architecture' is '" + printable(arch_name, 64) + "': Mnemo reads the GGUF architectures " +
                    gguf_llama_arch_names() + " and its own mnemo_<model_type> (docs/gguf.md)");
    Value config_value;
    if (arch) {
        Members config = llama_config(*file, *arch, h);
        add_rope_factors(*file, h, config);
        config_value = Value::make_object(std::move(config));
    } else {
        config_value = mnemo_config(*file, *mnemo_type);
    }

    std::vector<TensorView> views;
    std::vector<std::shared_ptr<const void>> owners{file};
    for (const GgufTensorInfo& t : h.tensors) {
        if (t.name == "rope_freqs.weight") continue;  // in the config
        TensorView v;
        v.name = arch ? hf_tensor_name(t.name).value_or(t.name) : t.name;
        v.shape = t.shape();
        v.file = path;
        // Float, I32 and block-quantized tensors are all used in place, inside the mapping: a
        // quantized weight stays packed (the model host widens one to a float type only where the
        // plugin's declaration does not take its type).
        const std::optional<DType> dt = dtype_of_ggml_type(t.type);
        if (dt) {
            v.dtype = *dt;
            v.data = file->tensor_data(t);
            v.nbytes = t.nbytes;
        } else {
            throw Error(path + ": tensor '" + printable(t.name, 80) + "' is " + ggml_type_label(t.type) +
                        ", which Mnemo cannot read (it reads F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K)");
        }
        views.push_back(std::move(v));
    }
    return {std::move(config_value), Checkpoint::from_views(std::move(views), std::move(owners), {path})};
}

}  // namespace mnemo::detail
