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
    bool neon = false;
};

const CpuFeatures& cpu_features();  // detected once, then cached

// The best kernel set for this machine. The environment variable MNEMO_CPU_ISA ("scalar",
// "avx2", "neon") can only lower the choice: it exists so the portable path can be tested on
// a machine that has the vector units.
Isa best_isa();

const char* isa_name(Isa isa);
std::string feature_list(const CpuFeatures& f);  // "avx2 fma f16c"

}  // namespace mnemo_cpu
