#include "cpu_features.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace mnemo_cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// XGETBV tells whether the OS saves the wide registers on context switches; a CPU that has AVX
// but an OS that does not enable it must be treated as having no AVX.
uint64_t read_xcr0() {
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (static_cast<uint64_t>(hi) << 32) | lo;
}
#endif

CpuFeatures detect() {
    CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool osxsave = (c >> 27) & 1u;
    const bool cpu_avx = (c >> 28) & 1u;
    const bool cpu_fma = (c >> 12) & 1u;
    const bool cpu_f16c = (c >> 29) & 1u;
    if (!osxsave || !cpu_avx) return f;
    const uint64_t xcr0 = read_xcr0();
    const bool ymm_state = (xcr0 & 0x6u) == 0x6u;          // SSE + AVX state
    const bool zmm_state = (xcr0 & 0xe6u) == 0xe6u;        // plus opmask and upper ZMM
    if (!ymm_state) return f;
    f.avx = true;
    f.fma = cpu_fma;
    f.f16c = cpu_f16c;
    unsigned max_leaf = __get_cpuid_max(0, nullptr);
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f.avx2 = (b >> 5) & 1u;
        f.avx512f = zmm_state && ((b >> 16) & 1u);
        f.avx512vl = f.avx512f && ((b >> 31) & 1u);
        f.avx512bw = f.avx512f && ((b >> 30) & 1u);
        f.avx512vnni = f.avx512f && ((c >> 11) & 1u);
    }
#elif defined(__aarch64__)
#if defined(__linux__)
    f.neon = (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
    f.neon_dotprod = f.neon && (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
    f.neon = true;  // Advanced SIMD is mandatory on AArch64
#endif
#endif
    return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = detect();
    return features;
}

Isa best_isa() {
    const CpuFeatures& f = cpu_features();
    Isa isa = Isa::Scalar;
    if (f.avx2 && f.fma && f.f16c) isa = Isa::Avx2;
#if defined(__aarch64__)
    if (f.neon) isa = Isa::Neon;
#endif
    if (const char* want = std::getenv("MNEMO_CPU_ISA")) {
        if (std::strcmp(want, "scalar") == 0) isa = Isa::Scalar;
    }
    return isa;
}

bool use_avx512_vnni() {
    const CpuFeatures& f = cpu_features();
    if (!(f.avx2 && f.fma && f.f16c && f.avx512vl && f.avx512bw && f.avx512vnni)) return false;
    const char* want = std::getenv("MNEMO_CPU_ISA");
    return !(want && (std::strcmp(want, "scalar") == 0 || std::strcmp(want, "avx2") == 0));
}

bool use_vnni_tiles() {
    const char* want = std::getenv("MNEMO_CPU_TILES");
    return use_avx512_vnni() && !(want && std::strcmp(want, "0") == 0);
}

bool use_avx512() {
    const CpuFeatures& f = cpu_features();
    if (!(f.avx2 && f.fma && f.f16c && f.avx512f && f.avx512vl && f.avx512bw)) return false;
    const char* want = std::getenv("MNEMO_CPU_ISA");
    return !(want && (std::strcmp(want, "scalar") == 0 || std::strcmp(want, "avx2") == 0));
}

bool use_neon_dotprod() {
    if (best_isa() != Isa::Neon || !cpu_features().neon_dotprod) return false;
    const char* want = std::getenv("MNEMO_CPU_ISA");
    return !(want && std::strcmp(want, "neon") == 0);
}

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::Scalar: return "scalar";
        case Isa::Avx2: return "avx2";
        case Isa::Neon: return "neon";
    }
    return "?";
}

std::string feature_list(const CpuFeatures& f) {
    std::string s;
    auto add = [&](bool on, const char* name) {
        if (!on) return;
        if (!s.empty()) s += ' ';
        s += name;
    };
    add(f.avx, "avx");
    add(f.avx2, "avx2");
    add(f.fma, "fma");
    add(f.f16c, "f16c");
    add(f.avx512f, "avx512f");
    add(f.avx512vl, "avx512vl");
    add(f.avx512bw, "avx512bw");
    add(f.avx512vnni, "avx512vnni");
    add(f.neon, "neon");
    add(f.neon_dotprod, "dotprod");
    return s.empty() ? std::string("baseline") : s;
}

}  // namespace mnemo_cpu
