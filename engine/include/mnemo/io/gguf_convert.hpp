// Writing a model folder (config.json + safetensors; the Llama family: llama, qwen2) as one GGUF
// file in the layout llama.cpp reads: its metadata keys and tensor names, W_q / W_k rows permuted
// for interleaved RoPE in `llama` files, Llama 3 RoPE scaling as a rope_freqs tensor. What
// `mnemo quantize` runs. The tensor types (docs/gguf.md, "Mixes"): 1-D tensors stay F32; 2-D
// weights take the requested type; with Q4_0 the output head is Q8_0 (llama.cpp keeps it at
// Q6_K, which Mnemo does not write yet); a weight whose rows are not whole blocks is F16.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "mnemo/api.hpp"
#include "mnemo/io/ggml_type.hpp"

namespace mnemo {

struct GgufConvertOptions {
    uint32_t type = ggml_type::F16;  // F32, F16, BF16, Q8_0 or Q4_0
    int threads = 0;                 // threads that convert one tensor's rows (0: all cores)
    // Called after each tensor: (tensors done, tensors in all, name of the last one).
    std::function<void(size_t, size_t, const std::string&)> progress;
};

// Throws mnemo::Error naming the folder, file or field that cannot be written, and leaves no
// partial `out` behind (mnemo/io/atomic_file.hpp).
MNEMO_API void convert_to_gguf(const std::string& model_dir, const std::string& out, const GgufConvertOptions& options);

// "q8_0" -> Q8_0 ... ; nullopt-like: returns false for a name Mnemo cannot write.
MNEMO_API bool gguf_write_type_from_name(const std::string& name, uint32_t* type);

}  // namespace mnemo
