// What the ISA files of PK_SCORE share with its dispatch (product_keys_score.cpp): the node's
// arguments, and the entry points of each vector path. The AVX2 path is in
// arch/x86/product_keys_score_avx2.cpp, the NEON path in arch/arm/product_keys_score_neon.cpp;
// a build compiles the one of its architecture (backends/cpu/CMakeLists.txt), and the dispatch
// calls it only for ranks 1, 2, 4 and 8 (the layout in product_keys_score.cpp's opening comment).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "vector_isa.hpp"

namespace mnemo_cpu::pk_score {

struct ScoreArgs {
    const float* q;
    const void* keys;
    const void* gain;  // null without key norm
    int32_t gain_dt;
    float eps;
    float* out;
    int64_t n, nq, heads, share, nk, kdim, rank;
    int64_t len;  // elements per key: K * Rk
};

inline float inv_rms(float sum_sq, int64_t kdim, float eps) {
    return kdim > 0 ? 1.0f / std::sqrt(sum_sq / static_cast<float>(kdim) + eps) : 1.0f;
}

// One ISA's vector path, for keys of dtype DT (instantiated for F32, F16 and BF16 in its file):
//  - score_block: keys j0..j1-1 of bank b against tokens n0..n1-1, whose expanded queries are in
//    qx; the scores are multiplied by the keys' inverse RMS `inv` unless it is null;
//  - score_keys_norm: keys j0..j1-1 of bank b for the single token n, writing their inverse RMS
//    to `inv` on the way (decode with the key norm: one pass over the keys);
//  - key_inv_rms: the inverse RMS of each rank of the key starting at element k0.
// packed_product_<isa> is the packed path's product of `tokens` query rows by `rows` packed key
// rows, out[t * ldo + i].
#if defined(MNEMO_HAVE_AVX2_KERNELS)
template <int DT>
struct Avx2 {
    MNEMO_AVX2 static void score_block(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, int64_t n0, int64_t n1,
                                       const float* qx, const float* inv);
    MNEMO_AVX2 static void score_keys_norm(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, int64_t n,
                                           const float* qx, float* inv);
    MNEMO_AVX2 static void key_inv_rms(const ScoreArgs& a, size_t k0, float* inv);
};
MNEMO_AVX2 void packed_product_avx2(const float* qg, int64_t tokens, const float* packed, int64_t rows, int64_t kd,
                                    float* out, int64_t ldo);
#endif

#if defined(MNEMO_HAVE_NEON_KERNELS)
template <int DT>
struct Neon {
    static void score_block(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, int64_t n0, int64_t n1,
                            const float* qx, const float* inv);
    static void score_keys_norm(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, int64_t n, const float* qx,
                                float* inv);
    static void key_inv_rms(const ScoreArgs& a, size_t k0, float* inv);
};
void packed_product_neon(const float* qg, int64_t tokens, const float* packed, int64_t rows, int64_t kd, float* out,
                         int64_t ldo);
#endif

}  // namespace mnemo_cpu::pk_score
