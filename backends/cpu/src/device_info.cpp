#include "device_info.hpp"

#include <sys/sysinfo.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "cpu_features.hpp"

namespace mnemo_cpu {
namespace {

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return {};
    const size_t e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

// x86 kernels say "model name", arm64 ones often only "CPU part"/"Hardware"; take the first
// descriptive field present.
std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    std::string fallback;
    while (std::getline(in, line)) {
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string key = trim(line.substr(0, colon));
        const std::string value = trim(line.substr(colon + 1));
        if (value.empty()) continue;
        if (key == "model name") return value;
        if ((key == "Hardware" || key == "Processor") && fallback.empty()) fallback = value;
    }
    if (!fallback.empty()) return fallback;
#if defined(__aarch64__)
    return "arm64 CPU";
#else
    return "CPU";
#endif
}

void copy_text(char* dst, size_t cap, const std::string& src) {
    std::snprintf(dst, cap, "%s", src.c_str());
}

// Which path each block-quantized weight type takes in MATMUL (kernels/matmul_quant.cpp): the
// same for q8_0, q4_0, q4_k, q5_k and q6_k, chosen by the ISA.
std::string quantized_paths() {
    const char* types = "q8_0 q4_0 q4_k q5_k q6_k";
    if (best_isa() == Isa::Avx2 && use_avx512_vnni())
        return std::string(types) + ": int8 dot products (avx512-vnni) in decode and prefill";
    if (best_isa() == Isa::Avx2)
        return std::string(types) + ": int8 dot products (avx2) in decode, dequantized to f32 in prefill";
    if (best_isa() == Isa::Neon)
        return std::string(types) + ": int8 dot products (" + (use_neon_dotprod() ? "neon-dotprod" : "neon") + ") in decode and prefill";
    return std::string(types) + ": dequantized to f32 (portable)";
}

// Which path f32/f16/bf16 weights take in MATMUL (kernels/matmul.cpp): decode is a mat-vec bound
// by memory, prefill a register-tiled GEMM, 32-register where AVX-512 is there.
std::string dense_paths() {
    const char* types = "f32 f16 bf16";
    if (best_isa() == Isa::Avx2)
        return std::string(types) + ": avx2 mat-vec in decode, " + (use_avx512() ? "avx512" : "avx2") + " GEMM in prefill";
    if (best_isa() == Isa::Neon) return std::string(types) + ": neon";
    return std::string(types) + ": portable";
}

}  // namespace

void fill_device_info(mnemo_device_info* out) {
    std::memset(out, 0, sizeof(*out));
    copy_text(out->name, sizeof(out->name), cpu_model_name());
    const unsigned threads = std::thread::hardware_concurrency();
    const std::string desc = std::to_string(threads ? threads : 1) + " hardware threads; features: " +
                             feature_list(cpu_features()) + "; kernels: " + isa_name(best_isa()) + "; " + dense_paths() + "; " +
                             quantized_paths();
    copy_text(out->description, sizeof(out->description), desc);
    out->type = MNEMO_DEVICE_CPU;
    out->caps = MNEMO_CAP_HOST_MEMORY | MNEMO_CAP_F16 | MNEMO_CAP_BF16 | MNEMO_CAP_QUANT | MNEMO_CAP_PROFILE;
    struct sysinfo si {};
    if (sysinfo(&si) == 0) {
        const uint64_t unit = si.mem_unit ? si.mem_unit : 1;
        out->memory_total = static_cast<uint64_t>(si.totalram) * unit;
        // freeram ignores the page cache, which the kernel gives back on demand; count it as
        // free like "available" in free(1) does, approximately, via bufferram.
        out->memory_free = (static_cast<uint64_t>(si.freeram) + si.bufferram) * unit;
    }
    // /proc/meminfo has the kernel's own estimate of what can be allocated without swapping.
    std::ifstream mi("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (mi >> key >> kib) {
        std::getline(mi, unit);
        if (key == "MemAvailable:") {
            out->memory_free = kib * 1024ull;
            break;
        }
    }
}

}  // namespace mnemo_cpu
