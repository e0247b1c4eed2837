// A GGUF file rewritten in another mix (convert_to_gguf with a .gguf input): the metadata travels
// as it is (tokenizer, chat template, Mnemo's config) but for general.file_type; each tensor is
// dequantized to f32 and written in the type the mix gives it, one tensor at a time. A tensor
// already in that type is copied byte for byte (no second rounding), integer tensors too.
#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

#include "gguf/gguf_mix.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/gguf.hpp"
#include "mnemo/quant/ggml_quants.hpp"

namespace mnemo::detail {
namespace {

bool is_float(uint32_t t) { return t == ggml_type::F32 || t == ggml_type::F16 || t == ggml_type::BF16; }

// Layers for the _M mixes' rules: <arch>.block_count, else one past the largest blk.N.
int layer_count(const GgufFile& f) {
    const GgufValue* arch = f.header().find("general.architecture");
    if (arch && arch->type == GgufValueType::String && f.has(arch->s + ".block_count")) return static_cast<int>(f.get_int(arch->s + ".block_count"));
    int n = 0;
    for (const GgufTensorInfo& t : f.header().tensors)
        if (t.name.starts_with("blk.")) n = std::max(n, std::atoi(t.name.c_str() + 4) + 1);
    return n;
}

}  // namespace

void requantize_gguf(const std::string& in, const std::string& out, GgufMix mix, const GgufConvertOptions& o) {
    const GgufFile f(in);
    const GgufHeader& h = f.header();
    GgufMixModel model{layer_count(f), h.tensor("output.weight") != nullptr || h.tensor("lm_head.weight") != nullptr};
    GgufMetadata md;
    bool has_file_type = false;
    for (const auto& [key, value] : h.metadata) {
        if (key == "general.file_type") {
            md.emplace_back(key, gguf_u32(gguf_mix_file_type(mix)));
            has_file_type = true;
        } else {
            md.emplace_back(key, value);
        }
    }
    if (!has_file_type) md.emplace_back("general.file_type", gguf_u32(gguf_mix_file_type(mix)));

    std::vector<GgufTensorToWrite> infos;
    std::vector<std::string> requantized;
    for (const GgufTensorInfo& t : h.tensors) {
        GgufTensorToWrite w{t.name, t.type, t.shape(), nullptr, t.nbytes};
        if (!is_float(t.type) && !can_dequantize(t.type)) {
            if (t.type != ggml_type::I32 && t.type != ggml_type::I8 && t.type != ggml_type::I16)
                throw Error(in + ": tensor '" + t.name + "' is " + ggml_type_label(t.type) + ": Mnemo requantizes from F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K");
        } else {
            const uint32_t type = gguf_mix_tensor_type(mix, t.name, w.shape, model);
            if (type != t.type) {
                if (!is_float(t.type)) requantized.push_back(t.name + " (" + ggml_type_info(t.type)->name + " -> " + ggml_type_info(type)->name + ")");
                const GgmlTypeInfo* ti = ggml_type_info(type);
                w.type = type;
                w.nbytes = static_cast<uint64_t>(t.elements() / ti->block_elems * ti->block_bytes);
            }
        }
        infos.push_back(std::move(w));
    }
    if (!requantized.empty()) {
        const std::string what = std::to_string(requantized.size()) + " quantized tensor(s), e.g. " + requantized.front();
        if (!o.allow_requantize)
            throw Error(in + ": requantizing " + what + " loses quality (the new rounding starts from the old one's errors); "
                        "quantize from the f16 / f32 model, or allow it (--allow-requantize)");
        if (o.warn) o.warn("requantizing " + what + ": quality is lost beyond what quantizing the f16 model would lose");
    }

    const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    GgufWriter writer(out, md, infos);
    for (size_t i = 0; i < h.tensors.size(); ++i) {
        const GgufTensorInfo& t = h.tensors[i];
        const GgufTensorToWrite& w = infos[i];
        if (w.type == t.type) {
            writer.write_tensor(f.tensor_data(t), t.nbytes);
        } else {
            const int64_t n = t.elements();
            const int64_t cols = t.ne.empty() ? 1 : t.ne[0];
            std::vector<float> v(static_cast<size_t>(n));
            dequantize_row(t.type, f.tensor_data(t), v.data(), n);
            std::vector<uint8_t> bytes(static_cast<size_t>(w.nbytes));
            quantize_rows(w.type, v.data(), bytes.data(), cols == 0 ? 0 : n / cols, cols, threads);
            writer.write_tensor(bytes.data(), bytes.size());
        }
        if (o.progress) o.progress(i + 1, h.tensors.size(), t.name);
    }
    writer.commit();
}

}  // namespace mnemo::detail
