// The mixes' table (gguf_mix.hpp). Facts from llama.cpp's src/llama-quant.cpp (b4747) for the
// dense Llama family, without an importance matrix; the 70B-only and mixture-of-experts tweaks are
// left out (Mnemo's converter writes dense Llama / Qwen2 and its own architectures).
#include "gguf/gguf_mix.hpp"

#include <cstdlib>

#include "mnemo/io/ggml_type.hpp"

namespace mnemo {
namespace {

struct MixRow {
    GgufMix mix;
    const char* name;
    uint32_t base;
    uint32_t file_type;
};

constexpr MixRow kMixes[] = {
    {GgufMix::F32, "f32", ggml_type::F32, 0},        {GgufMix::F16, "f16", ggml_type::F16, 1},
    {GgufMix::BF16, "bf16", ggml_type::BF16, 32},    {GgufMix::Q8_0, "q8_0", ggml_type::Q8_0, 7},
    {GgufMix::Q4_0, "q4_0", ggml_type::Q4_0, 2},     {GgufMix::Q4_K_S, "q4_k_s", ggml_type::Q4_K, 14},
    {GgufMix::Q4_K_M, "q4_k_m", ggml_type::Q4_K, 15}, {GgufMix::Q5_K_S, "q5_k_s", ggml_type::Q5_K, 16},
    {GgufMix::Q5_K_M, "q5_k_m", ggml_type::Q5_K, 17}, {GgufMix::Q6_K, "q6_k", ggml_type::Q6_K, 18},
};

const MixRow& row_of(GgufMix m) {
    for (const MixRow& r : kMixes)
        if (r.mix == m) return r;
    return kMixes[1];
}

bool ends_with(const std::string& s, const char* tail) { return s.ends_with(tail); }

// "blk.7.ffn_down.weight" -> 7; -1 for a tensor outside the blocks.
int layer_of(const std::string& name) {
    if (!name.starts_with("blk.")) return -1;
    char* end = nullptr;
    const long v = std::strtol(name.c_str() + 4, &end, 10);
    return end && *end == '.' ? static_cast<int>(v) : -1;
}

// llama.cpp's "use_more_bits": the first and last eighth of the layers, and every third between.
bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool is_k_quant(uint32_t t) { return t == ggml_type::Q4_K || t == ggml_type::Q5_K || t == ggml_type::Q6_K; }

// A type whose block does not divide the rows falls back: a K-quant (blocks of 256) to Q8_0
// (llama.cpp takes Q5_0 / Q5_1 for Q4_K / Q5_K, which Mnemo does not write: Q8_0 is the closer
// one that it does), then anything to F16 when the rows are not whole blocks of 32 either.
uint32_t fit_rows(uint32_t t, int64_t cols) {
    if (cols % ggml_type_info(t)->block_elems == 0) return t;
    if (is_k_quant(t) && cols % 32 == 0) return ggml_type::Q8_0;
    return ggml_type::F16;
}

}  // namespace

bool gguf_mix_from_name(const std::string& name, GgufMix* mix) {
    for (const MixRow& r : kMixes)
        if (name == r.name) {
            *mix = r.mix;
            return true;
        }
    return false;
}

const char* gguf_mix_name(GgufMix mix) { return row_of(mix).name; }

std::string gguf_mix_names() {
    std::string s;
    for (const MixRow& r : kMixes) s += (s.empty() ? "" : ", ") + std::string(r.name);
    return s;
}

namespace detail {

uint32_t gguf_mix_base_type(GgufMix mix) { return row_of(mix).base; }
uint32_t gguf_mix_file_type(GgufMix mix) { return row_of(mix).file_type; }

uint32_t gguf_mix_tensor_type(GgufMix mix, const std::string& name, const std::vector<int64_t>& shape, const GgufMixModel& model) {
    if (shape.size() < 2) return ggml_type::F32;  // norms, biases, rope factors
    const uint32_t base = gguf_mix_base_type(mix);
    const int64_t cols = shape.back();
    if (base == ggml_type::F32 || base == ggml_type::F16 || base == ggml_type::BF16) return base;
    const bool head = name == "output.weight" || name == "lm_head.weight" || (!model.has_output && name == "token_embd.weight");
    if (head) {
        // The output head (or the embedding it is tied to) keeps 6 bits, 8 with q8_0; Q8_0 when
        // its rows are not whole blocks of 256.
        if (base == ggml_type::Q8_0) return fit_rows(ggml_type::Q8_0, cols);
        return cols % 256 == 0 ? ggml_type::Q6_K : fit_rows(ggml_type::Q8_0, cols);
    }
    uint32_t t = base;
    const int layer = layer_of(name);
    const bool v = ends_with(name, ".attn_v.weight"), down = ends_with(name, ".ffn_down.weight");
    if (layer >= 0 && (v || down)) {
        const int n = model.layers;
        if ((mix == GgufMix::Q4_K_M || mix == GgufMix::Q5_K_M) && more_bits(layer, n)) t = ggml_type::Q6_K;
        else if (mix == GgufMix::Q4_K_S && v && layer < 4) t = ggml_type::Q5_K;
        else if (mix == GgufMix::Q4_K_S && down && layer < n / 8) t = ggml_type::Q5_K;
    }
    return fit_rows(t, cols);
}

}  // namespace detail
}  // namespace mnemo
