// Model folder -> GGUF (mnemo/io/gguf_convert.hpp).
#include "mnemo/io/gguf_convert.hpp"

#include <algorithm>
#include <cmath>
#include <thread>
#include <cstring>
#include <optional>
#include <filesystem>
#include <vector>

#include "gguf/gguf_llama_names.hpp"
#include "gguf/gguf_mix.hpp"
#include "gguf/gguf_mnemo_arch.hpp"
#include "gguf/gguf_tokenizer_export.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/gguf.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/io/safetensors.hpp"
#include "mnemo/ops/dtype.hpp"
#include "mnemo/quant/ggml_quants.hpp"

namespace mnemo {
namespace {

namespace fs = std::filesystem;
using detail::GgufLlamaArch;

struct Config {
    const json::Value& root;
    std::string file;
    const json::Value& need(const char* field) const {
        const json::Value* v = root.find(field);
        if (!v || v->is_null()) throw Error(file + ": field '" + std::string(field) + "' is missing");
        return *v;
    }
    int64_t i(const char* field) const {
        const json::Value& v = need(field);
        if (!v.is_integer()) throw Error(file + ": field '" + std::string(field) + "' is not an integer");
        return v.as_int();
    }
    int64_t i(const char* field, int64_t fallback) const { return has(field) ? i(field) : fallback; }
    double f(const char* field, double fallback) const {
        if (!has(field)) return fallback;
        const json::Value& v = need(field);
        if (!v.is_number()) throw Error(file + ": field '" + std::string(field) + "' is not a number");
        return v.as_double();
    }
    bool has(const char* field) const {
        const json::Value* v = root.find(field);
        return v && !v->is_null();
    }
};

// Llama 3.1's RoPE scaling as per-frequency divisors (what llama.cpp stores in rope_freqs): the
// same wavelength bands as the llama plugin's rope_frequencies.cpp (plugins/common), expressed as
// original frequency / scaled frequency.
std::vector<float> llama3_rope_factors(const json::Value& s, const std::string& file, int64_t head_dim, double theta) {
    auto num = [&](const char* k) {
        const json::Value* v = s.find(k);
        if (!v || !v->is_number()) throw Error(file + ": field 'rope_scaling." + std::string(k) + "' is missing or not a number");
        return v->as_double();
    };
    const double factor = num("factor"), lo = num("low_freq_factor"), hi = num("high_freq_factor");
    const double orig = num("original_max_position_embeddings");
    const double pi = 3.14159265358979323846;
    std::vector<float> out;
    for (int64_t j = 0; j < head_dim / 2; ++j) {
        const double f = 1.0 / std::pow(theta, static_cast<double>(2 * j) / static_cast<double>(head_dim));
        const double wavelen = 2.0 * pi / f;
        double scaled = f;
        if (wavelen > orig / lo) {
            scaled = f / factor;
        } else if (wavelen >= orig / hi) {
            const double smooth = (orig / wavelen - lo) / (hi - lo);
            scaled = (1.0 - smooth) * f / factor + smooth * f;
        }
        out.push_back(static_cast<float>(f / scaled));
    }
    return out;
}

struct OwnedTensor {
    std::string name;
    uint32_t type;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
};

// W_q / W_k (and their biases) of a `llama` file: rows reordered for interleaved RoPE.
bool permute_name(const GgufLlamaArch* arch, const std::string& name) {
    return arch && arch->permuted_qk &&
           (name.ends_with(".attn_q.weight") || name.ends_with(".attn_k.weight") || name.ends_with(".attn_q.bias") || name.ends_with(".attn_k.bias"));
}

}  // namespace

bool gguf_write_type_from_name(const std::string& name, uint32_t* type) {
    static const std::pair<const char*, uint32_t> kNames[] = {{"f32", ggml_type::F32},   {"f16", ggml_type::F16},
                                                              {"bf16", ggml_type::BF16}, {"q8_0", ggml_type::Q8_0},
                                                              {"q4_0", ggml_type::Q4_0}, {"q6_k", ggml_type::Q6_K}};
    for (const auto& [n, t] : kNames)
        if (name == n) {
            *type = t;
            return true;
        }
    return false;
}

namespace detail {

GgufMix gguf_mix_of(const GgufConvertOptions& o) {
    if (o.mix) return *o.mix;
    const std::string label = ggml_type_label(o.type);
    for (const GgufMix m : {GgufMix::F32, GgufMix::F16, GgufMix::BF16, GgufMix::Q8_0, GgufMix::Q4_0, GgufMix::Q6_K})
        if (gguf_mix_base_type(m) == o.type) return m;
    throw Error("cannot write " + label + " as a single type: Mnemo writes the mixes " + gguf_mix_names());
}

// Rows are independent blocks: split them over threads.
void quantize_rows(uint32_t type, const float* src, uint8_t* dst, int64_t rows, int64_t cols, int threads) {
    const GgmlTypeInfo* ti = ggml_type_info(type);
    const int64_t row_bytes = cols / ti->block_elems * ti->block_bytes;
    const int64_t per = std::max<int64_t>(1, (rows + threads - 1) / threads);
    std::vector<std::thread> pool;
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
        const int64_t r1 = std::min(rows, r0 + per);
        auto work = [=] { quantize_row(type, src + r0 * cols, dst + r0 * row_bytes, (r1 - r0) * cols); };
        if (r1 == rows) work();
        else pool.emplace_back(work);
    }
    for (std::thread& t : pool) t.join();
}

}  // namespace detail

namespace {

// The keys llama.cpp reads for the Llama family, and Llama 3 RoPE scaling as rope_freqs.weight.
void llama_metadata(const Config& c, const GgufLlamaArch& arch, GgufMetadata& md, std::vector<OwnedTensor>& extra) {
    const std::string a = arch.gguf_name;
    auto key = [&](const char* k) { return a + "." + k; };
    const std::string& config_path = c.file;
    const int64_t hidden = c.i("hidden_size"), heads = c.i("num_attention_heads");
    const int64_t kv_heads = c.i("num_key_value_heads", heads), head_dim = c.i("head_dim", hidden / heads);
    const double theta = c.f("rope_theta", 10000.0);
    md.insert(md.end(), {
        {key("context_length"), gguf_u32(static_cast<uint32_t>(c.i("max_position_embeddings", 2048)))},
        {key("embedding_length"), gguf_u32(static_cast<uint32_t>(hidden))},
        {key("block_count"), gguf_u32(static_cast<uint32_t>(c.i("num_hidden_layers")))},
        {key("feed_forward_length"), gguf_u32(static_cast<uint32_t>(c.i("intermediate_size")))},
        {key("attention.head_count"), gguf_u32(static_cast<uint32_t>(heads))},
        {key("attention.head_count_kv"), gguf_u32(static_cast<uint32_t>(kv_heads))},
        {key("attention.layer_norm_rms_epsilon"), gguf_f32(static_cast<float>(c.f("rms_norm_eps", 1e-6)))},
        {key("rope.freq_base"), gguf_f32(static_cast<float>(theta))},
        {key("rope.dimension_count"), gguf_u32(static_cast<uint32_t>(head_dim))},
        {key("vocab_size"), gguf_u32(static_cast<uint32_t>(c.i("vocab_size")))},
    });
    if (head_dim * heads != hidden) {
        md.emplace_back(key("attention.key_length"), gguf_u32(static_cast<uint32_t>(head_dim)));
        md.emplace_back(key("attention.value_length"), gguf_u32(static_cast<uint32_t>(head_dim)));
    }
    if (!c.has("rope_scaling")) return;
    const json::Value& s = c.need("rope_scaling");
    const json::Value* t = s.find("rope_type");
    if (!t) t = s.find("type");
    const std::string type = t && t->is_string() ? t->as_string() : "";
    if (type == "linear") {
        md.emplace_back(key("rope.scaling.type"), gguf_string("linear"));
        const json::Value* f = s.find("factor");
        if (!f || !f->is_number()) throw Error(config_path + ": field 'rope_scaling.factor' is missing or not a number");
        md.emplace_back(key("rope.scaling.factor"), gguf_f32(static_cast<float>(f->as_double())));
    } else if (type == "llama3") {
        const std::vector<float> factors = llama3_rope_factors(s, config_path, head_dim, theta);
        OwnedTensor r{"rope_freqs.weight", ggml_type::F32, {static_cast<int64_t>(factors.size())}, {}};
        r.bytes.resize(factors.size() * 4);
        std::memcpy(r.bytes.data(), factors.data(), r.bytes.size());
        extra.push_back(std::move(r));
    } else if (type != "default") {
        throw Error(config_path + ": rope_scaling type '" + type + "' cannot be written as GGUF (Mnemo writes linear and llama3)");
    }
}

// Mnemo's own architectures (docs/gguf.md): the folder's config.json and generation_config.json
// travel whole, and the tensors keep the names the plugin declares.
void mnemo_metadata(const std::string& dir, const std::string& model_type, GgufMetadata& md) {
    md.emplace_back(std::string(detail::kGgufMnemoConfigKey), gguf_string(read_file_capped((fs::path(dir) / "config.json").string(), kMaxSmallFileBytes, "config")));
    const std::string generation = (fs::path(dir) / "generation_config.json").string();
    std::error_code ec;
    if (fs::exists(generation, ec))
        md.emplace_back(std::string(detail::kGgufMnemoGenerationConfigKey), gguf_string(read_file_capped(generation, kMaxSmallFileBytes, "generation config")));
    (void)model_type;
}

}  // namespace

void convert_to_gguf(const std::string& dir, const std::string& out, const GgufConvertOptions& o) {
    const GgufMix mix = detail::gguf_mix_of(o);
    if (looks_like_gguf(dir)) return detail::requantize_gguf(dir, out, mix, o);
    const std::string config_path = (fs::path(dir) / "config.json").string();
    const json::Value root = json::parse_file(config_path);
    if (!root.is_object()) throw Error(config_path + ": expected a JSON object");
    const Config c{root, config_path};
    const json::Value& mt = c.need("model_type");
    if (!mt.is_string() || mt.as_string().empty()) throw Error(config_path + ": field 'model_type' is not a non-empty string");
    const std::string model_type = mt.as_string();
    const GgufLlamaArch* arch = detail::gguf_llama_arch_for_model_type(model_type);
    const std::string a = arch ? arch->gguf_name : detail::mnemo_gguf_arch(model_type);
    GgufMetadata md = {
        {"general.architecture", gguf_string(a)},
        {"general.name", gguf_string(fs::path(dir).filename().string())},
        {"general.file_type", gguf_u32(detail::gguf_mix_file_type(mix))},
    };
    std::vector<OwnedTensor> extra;
    if (arch) llama_metadata(c, *arch, md, extra);
    else mnemo_metadata(dir, model_type, md);
    // The folder's tokenizer (tokenizer.ggml.*, tokenizer.chat_template), so the file stands alone
    // (llama.cpp refuses a model without one). A tokenizer GGUF cannot represent is an error here,
    // before any tensor is converted.
    for (auto& kv : detail::tokenizer_gguf_metadata(dir)) md.push_back(std::move(kv));
    const int64_t head_dim = arch ? c.i("head_dim", c.i("hidden_size") / c.i("num_attention_heads")) : 0;

    const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const Checkpoint cp = Checkpoint::open(dir);

    // First every tensor's name, type and shape (the header needs them all), then the tensors one
    // at a time: converted, written, freed. Peak memory is one tensor, not the model.
    struct Planned {
        const TensorView* source = nullptr;  // nullptr: one of `extra`
        GgufTensorToWrite out;
        bool permute = false;
    };
    std::vector<Planned> plan;
    detail::GgufMixModel mix_model{static_cast<int>(c.i("num_hidden_layers", 0)), false};
    std::vector<std::string> names;
    for (const TensorView& t : cp.tensors()) {
        const std::optional<std::string> name = arch ? detail::gguf_tensor_name(t.name) : std::optional<std::string>(t.name);
        if (!name) throw Error(t.file + ": tensor '" + t.name + "' has no GGUF name in a " + a + " model");
        if (*name == "output.weight" || *name == "lm_head.weight") mix_model.has_output = true;
        names.push_back(*name);
    }
    size_t index = 0;
    for (const TensorView& t : cp.tensors()) {
        const std::optional<std::string> name = names[index++];
        if (t.shape.size() > 4) throw Error(t.file + ": tensor '" + t.name + "' has " + std::to_string(t.shape.size()) + " dimensions (GGUF holds at most 4)");
        const std::vector<int64_t> shape = t.shape.empty() ? std::vector<int64_t>{1} : t.shape;  // a scalar is [1]
        Planned p{&t, {*name, ggml_type::I32, shape, nullptr, 0}, permute_name(arch, *name)};
        if (t.dtype == DType::I32) {  // indices (a memory layer's shuffle): copied as they are
            p.out.nbytes = t.nbytes;
        } else {
            const uint32_t type = detail::gguf_mix_tensor_type(mix, *name, shape, mix_model);
            const GgmlTypeInfo* ti = ggml_type_info(type);
            p.out.type = type;
            p.out.nbytes = static_cast<uint64_t>(t.nbytes / dtype_size(t.dtype)) / ti->block_elems * ti->block_bytes;
        }
        plan.push_back(std::move(p));
    }
    for (const OwnedTensor& e : extra) plan.push_back({nullptr, {e.name, e.type, e.shape, e.bytes.data(), e.bytes.size()}, false});

    std::vector<GgufTensorToWrite> infos;
    for (const Planned& p : plan) infos.push_back(p.out);
    GgufWriter writer(out, md, infos);
    size_t done = 0;
    for (const Planned& p : plan) {
        const TensorView* t = p.source;
        if (!t) {
            writer.write_tensor(p.out.data, p.out.nbytes);
        } else if (t->dtype == DType::I32) {
            writer.write_tensor(t->data, t->nbytes);
        } else {
            const size_t n = static_cast<size_t>(t->nbytes / dtype_size(t->dtype));
            // Rows of q / k (a bias is a column of them) are reordered for interleaved RoPE.
            const int64_t cols = t->shape.size() < 2 ? 1 : t->shape.back();
            const int64_t rows = cols == 0 ? 0 : static_cast<int64_t>(n) / cols;
            std::vector<float> v(n);
            for (int64_t r = 0; r < rows; ++r) {
                const int64_t src = p.permute ? detail::hf_row_of_gguf_row(r, head_dim) : r;
                for (int64_t k = 0; k < cols; ++k)
                    v[static_cast<size_t>(r * cols + k)] = load_as_f32(t->data, t->dtype, static_cast<size_t>(src * cols + k));
            }
            std::vector<uint8_t> bytes(static_cast<size_t>(p.out.nbytes));
            detail::quantize_rows(p.out.type, v.data(), bytes.data(), rows, static_cast<int64_t>(n) / std::max<int64_t>(rows, 1), threads);
            writer.write_tensor(bytes.data(), bytes.size());
        }
        if (o.progress && t) o.progress(++done, cp.tensors().size(), t->name);
    }
    writer.commit();
}

}  // namespace mnemo
