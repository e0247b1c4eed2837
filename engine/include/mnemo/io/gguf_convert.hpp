// Writing a model folder (config.json + safetensors; the Llama family: llama, qwen2) as one GGUF
// file in the layout llama.cpp reads: its metadata keys and tensor names, W_q / W_k rows permuted
// for interleaved RoPE in `llama` files, Llama 3 RoPE scaling as a rope_freqs tensor; or a GGUF
// file rewritten in another mix. What `mnemo quantize` runs. The tensor types follow the mix
// (docs/gguf.md, "Mixes", and src/gguf/gguf_mix.cpp): 1-D tensors stay F32; 2-D weights take the
// mix's base type, with llama.cpp's exceptions (the output head at Q6_K, attn_v / ffn_down at
// Q6_K on the "more bits" layers of the _M mixes...); a weight whose rows are not whole blocks of
// its type falls back to Q8_0, then F16.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "mnemo/api.hpp"
#include "mnemo/io/ggml_type.hpp"

namespace mnemo {

// llama.cpp's usual mixes (its llama_ftype names), and the float types.
enum class GgufMix : uint32_t { F32, F16, BF16, Q8_0, Q4_0, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K };

struct GgufConvertOptions {
    // Without `mix`, the mix of this one type: F32, F16, BF16, Q8_0, Q4_0 or Q6_K.
    uint32_t type = ggml_type::F16;
    std::optional<GgufMix> mix;
    // A GGUF input that holds quantized tensors is refused unless this is set (requantizing loses
    // quality: the second quantization starts from the first one's errors); `warn` is told when
    // it happens.
    bool allow_requantize = false;
    std::function<void(const std::string&)> warn;
    int threads = 0;                 // threads that convert one tensor's rows (0: all cores)
    // Called after each tensor: (tensors done, tensors in all, name of the last one).
    std::function<void(size_t, size_t, const std::string&)> progress;
};

// `in` is a model folder or a GGUF file (any type Mnemo reads: dequantized, then written in the
// mix, metadata and tokenizer carried over). Throws mnemo::Error naming the folder, file or field
// that cannot be written, and leaves no partial `out` behind (mnemo/io/atomic_file.hpp).
MNEMO_API void convert_to_gguf(const std::string& in, const std::string& out, const GgufConvertOptions& options);

// "q8_0" -> Q8_0 ... ; false for a name Mnemo cannot write.
MNEMO_API bool gguf_write_type_from_name(const std::string& name, uint32_t* type);
// "q4_k_m" -> GgufMix::Q4_K_M ...; false for any other name. gguf_mix_names() lists them all.
MNEMO_API bool gguf_mix_from_name(const std::string& name, GgufMix* mix);
MNEMO_API const char* gguf_mix_name(GgufMix mix);
MNEMO_API std::string gguf_mix_names();

}  // namespace mnemo
