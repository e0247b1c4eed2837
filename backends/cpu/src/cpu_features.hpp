// Which vector instruction sets this CPU (and its OS) can run, detected once at run time so the
// module is built for the baseline ISA and still uses AVX2/FMA/F16C or NEON where they exist.
#pragma once

#include <string>

namespace mnemo_cpu {

enum class Isa {
    Scalar,  // portable C++ loops (any CPU)
    Avx2,    // x86-64 with AVX2 + FMA + F16C
    Neon,    // arm64 Advanced SIMD
};

struct CpuFeatures {
    bool avx = false;
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx512f = false;
    bool avx512vl = false;    // AVX-512 instructions on 256-bit registers
    bool avx512bw = false;    // AVX-512 byte and word instructions
    bool avx512vnni = false;  // VPDPBUSD: 8-bit integer dot products (with avx512vl on ymm)
    bool neon = false;
    bool neon_dotprod = false;  // ARMv8.2 SDOT/UDOT: 8-bit integer dot products
};

const CpuFeatures& cpu_features();  // detected once, then cached

// The best kernel set for this machine. The environment variable MNEMO_CPU_ISA ("scalar",
// "avx2", "neon") can only lower the choice: it exists so the portable path can be tested on
// a machine that has the vector units.
Isa best_isa();

// Whether the quantized MATMUL kernels may use AVX-512 VNNI's VPDPBUSD on 256-bit registers
// (AVX-512 VNNI + VL + BW, and the OS saving the AVX-512 state) on top of the AVX2 kernel set.
// MNEMO_CPU_ISA=avx2 (or scalar) turns it off, so the plain AVX2 path can be tested here too.
bool use_avx512_vnni();

// Whether the Q8_0 / Q4_0 MATMUL of several x rows may take the VNNI tiles of eight W rows
// (use_avx512_vnni() and MNEMO_CPU_TILES not "0"): the variable lets the row-at-a-time VNNI
// kernels they replace be compared and tested on the same machine.
bool use_vnni_tiles();

// Whether kernels may use AVX-512 F/BW/VL on 512-bit registers (and the OS saves their state) on
// top of the AVX2 kernel set: the f32/f16/bf16 prefill GEMM does. MNEMO_CPU_ISA=avx2 (or scalar)
// turns it off, so the plain AVX2 path can be tested here too.
bool use_avx512();

// Whether the quantized MATMUL kernels may use the ARMv8.2 dot-product instructions on top of the
// NEON kernel set. MNEMO_CPU_ISA=neon (or scalar) turns it off, so the baseline NEON path can be
// tested on such a CPU too.
bool use_neon_dotprod();

const char* isa_name(Isa isa);
std::string feature_list(const CpuFeatures& f);  // "avx2 fma f16c"

}  // namespace mnemo_cpu
