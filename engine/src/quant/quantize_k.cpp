// Quantizers of the K-quant block types (layouts: mnemo/quant/ggml_quants.hpp). Each block of 256
// weights is fitted in three steps:
//   1. every sub-block gets a continuous scale (and, for Q4_K / Q5_K, a min) by weighted least
//      squares over a ladder of candidate grid spacings: for each candidate the weights are
//      rounded to the grid, the best (scale, min) for those integers is solved in closed form, and
//      the candidate with the smallest weighted squared error is kept. Weights: av|x| + |x| for
//      Q4_K / Q5_K, x^2 for Q6_K (the large weights matter most to a matmul);
//   2. the sub-block scales (and mins) are themselves quantized, to 6 bits against the f16
//      super-block scale d (and dmin) or to int8 against d for Q6_K;
//   3. the weights are rounded again with the quantized scales, which is what the file holds.
// Step 2's rounding is where most of the error beyond step 1 comes from, so it is tried with a few
// super-block scales around the largest sub-block scale (kSuperFactors; 1.0 first, which is the
// classic choice made by llama.cpp's reference quantizer), and the block whose dequantized values
// (through dequantize_row's arithmetic) have the smallest plain squared error is written: never
// worse than the first candidate on the same block (docs/gguf.md has the figures against llama.cpp).
//
// Every float operation is written in a fixed order (sums left to right, no fused multiply-add:
// the engine's CMakeLists compiles this file with -ffp-contract=off) so that
// tools/reference/ggml_quants.py reproduces the bytes exactly. Rounding is to nearest, ties to
// even (std::nearbyint in the default mode). Inputs must be finite; a block whose scale exceeds
// f16's range is clipped at 65504 rather than written as infinity.
#include "quant/quantize_k.hpp"

#include <cmath>
#include <cstring>

#include "mnemo/ops/dtype.hpp"

namespace mnemo::detail {
namespace {

constexpr int kQK_K = 256;
constexpr float kGroupEps = 1e-15f;  // below this a Q6_K sub-block is all zero
constexpr float kF16Max = 65504.0f;

// Candidate super-block scales, as factors of the largest sub-block scale (min).
constexpr float kScaleFactors[] = {1.0f, 0.99f, 1.01f, 1.02f, 1.03f, 1.05f};
constexpr float kMinFactors[] = {1.0f, 1.02f, 1.05f};
constexpr float kQ6Factors[] = {1.0f, 0.995f, 1.005f, 1.01f, 1.02f, 1.03f};

// Round to nearest (ties to even) and clamp to [lo, hi]; NaN goes to lo.
int round_clamp(float v, int lo, int hi) {
    const float r = std::nearbyint(v);
    if (r > static_cast<float>(hi)) return hi;
    if (r >= static_cast<float>(lo)) return static_cast<int>(r);
    return lo;
}

// f16 bits of v, with |v| clipped to f16's largest finite value.
uint16_t f16_bits(float v) {
    if (v > kF16Max) v = kF16Max;
    if (v < -kF16Max) v = -kF16Max;
    return f32_to_f16(v);
}

void put_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// Step 1 for Q4_K / Q5_K: x ~ scale * L - neg_min with L in [0, nmax]. Returns the scale; the
// min is returned negated (>= 0), as the format stores it.
float fit_scale_min(const float* x, const float* w, int n, int nmax, float rmin, float rdelta, int nstep, float* neg_min) {
    float lo = x[0], hi = x[0];
    float sum_w = w[0];
    float sum_x = w[0] * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (lo > 0.0f) lo = 0.0f;
    if (hi == lo) {
        *neg_min = -lo;
        return 0.0f;
    }
    const float range = hi - lo;
    float iscale = static_cast<float>(nmax) / range;
    float scale = 1.0f / iscale;
    float min = lo;
    float best = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = round_clamp(iscale * (x[i] - lo), 0, nmax);
        const float diff = scale * static_cast<float>(l) + lo - x[i];
        best += w[i] * (diff * diff);
    }
    int L[32];
    for (int step = 0; step <= nstep; ++step) {
        iscale = (rmin + rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / range;
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; ++i) {
            L[i] = round_clamp(iscale * (x[i] - lo), 0, nmax);
            const float wl = w[i] * static_cast<float>(L[i]);
            sum_l += wl;
            sum_l2 += wl * static_cast<float>(L[i]);
            sum_xl += wl * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (!(D > 0.0f)) continue;
        float s = (sum_w * sum_xl - sum_x * sum_l) / D;
        float m = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (m > 0.0f) {  // the grid must reach zero from below: a min of zero, scale refitted
            m = 0.0f;
            s = sum_xl / sum_l2;
        }
        float err = 0.0f;
        for (int i = 0; i < n; ++i) {
            const float diff = s * static_cast<float>(L[i]) + m - x[i];
            err += w[i] * (diff * diff);
        }
        if (err < best) {
            best = err;
            scale = s;
            min = m;
        }
    }
    *neg_min = -min;
    return scale;
}

// Q4_K (nmax 15) and Q5_K (nmax 31).
void quantize_k4(const float* x, uint8_t* b, int nmax, float rmin, float rdelta, int nstep) {
    float scales[8], mins[8], w[32];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; ++j) {
        const float* xs = x + 32 * j;
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
        const float av = std::sqrt(sum_x2 / 32.0f);
        for (int l = 0; l < 32; ++l) w[l] = av + std::fabs(xs[l]);
        scales[j] = fit_scale_min(xs, w, 32, nmax, rmin, rdelta, nstep, &mins[j]);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    // Steps 2 and 3 for each candidate (d, dmin); the best is kept in these.
    float best_err = 0.0f;
    bool have = false;
    uint8_t best_sc[8] = {}, best_m[8] = {}, best_L[kQK_K] = {};
    uint16_t best_d = 0, best_dmin = 0;
    for (const float fs : kScaleFactors) {
        for (const float fm : kMinFactors) {
            const float S = max_scale * fs, M = max_min * fm;
            const float inv_s = S > 0.0f ? 63.0f / S : 0.0f;
            const float inv_m = M > 0.0f ? 63.0f / M : 0.0f;
            const uint16_t dh = f16_bits(S / 63.0f), mh = f16_bits(M / 63.0f);
            const float d = f16_to_f32(dh), dmin = f16_to_f32(mh);
            uint8_t sc[8], m[8], L[kQK_K];
            float err = 0.0f;
            for (int j = 0; j < 8; ++j) {
                sc[j] = static_cast<uint8_t>(round_clamp(inv_s * scales[j], 0, 63));
                m[j] = static_cast<uint8_t>(round_clamp(inv_m * mins[j], 0, 63));
                const float d1 = d * static_cast<float>(sc[j]);
                const float m1 = dmin * static_cast<float>(m[j]);
                for (int l = 0; l < 32; ++l) {
                    const int i = 32 * j + l;
                    L[i] = d1 != 0.0f ? static_cast<uint8_t>(round_clamp((x[i] + m1) / d1, 0, nmax)) : 0;
                    const float y = d1 * static_cast<float>(L[i]) - m1;  // dequantize_row's order
                    err += (y - x[i]) * (y - x[i]);
                }
            }
            if (!have || err < best_err) {
                have = true;
                best_err = err;
                std::memcpy(best_sc, sc, 8);
                std::memcpy(best_m, m, 8);
                std::memcpy(best_L, L, kQK_K);
                best_d = dh;
                best_dmin = mh;
            }
        }
    }
    put_u16(b, best_d);
    put_u16(b + 2, best_dmin);
    uint8_t* s = b + 4;  // 12 bytes: the packing dequantize.cpp's scale_min_k4 reads
    std::memset(s, 0, 12);
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            s[j] = best_sc[j];
            s[j + 4] = best_m[j];
        } else {
            s[j + 4] = static_cast<uint8_t>((best_sc[j] & 0x0f) | ((best_m[j] & 0x0f) << 4));
            s[j - 4] |= static_cast<uint8_t>((best_sc[j] >> 4) << 6);
            s[j] |= static_cast<uint8_t>((best_m[j] >> 4) << 6);
        }
    }
    uint8_t* qh = nmax == 31 ? b + 16 : nullptr;
    uint8_t* qs = nmax == 31 ? b + 48 : b + 16;
    if (qh) std::memset(qh, 0, 32);
    for (int k = 0; k < 4; ++k) {
        for (int l = 0; l < 32; ++l) {
            const int lo = best_L[64 * k + l], hi = best_L[64 * k + 32 + l];
            qs[32 * k + l] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
            if (qh) qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * k)) | ((hi >> 4) << (2 * k + 1)));
        }
    }
}

// Step 1 for Q6_K: x ~ scale * L with L in [-32, 31], weights x^2; the grid is anchored on the
// value of largest magnitude (it lands on -32) and 19 spacings around it are tried.
float fit_scale_q6(const float* x, int n) {
    constexpr int nmax = 32;
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    if (amax < kGroupEps) return 0.0f;
    auto sums = [&](float iscale, float* sumlx, float* suml2) {
        *sumlx = 0.0f;
        *suml2 = 0.0f;
        for (int i = 0; i < n; ++i) {
            const float l = static_cast<float>(round_clamp(iscale * x[i], -nmax, nmax - 1));
            const float w = x[i] * x[i];
            *sumlx += w * x[i] * l;
            *suml2 += w * l * l;
        }
    };
    float sumlx, suml2;
    sums(-static_cast<float>(nmax) / max, &sumlx, &suml2);
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int step = -9; step <= 9; ++step) {
        if (step == 0) continue;
        sums(-(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max, &sumlx, &suml2);
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

}  // namespace

void quantize_block_q4_k(const float* x, uint8_t* b) { quantize_k4(x, b, 15, -1.0f, 0.1f, 20); }
void quantize_block_q5_k(const float* x, uint8_t* b) { quantize_k4(x, b, 31, -0.5f, 0.1f, 15); }

void quantize_block_q6_k(const float* x, uint8_t* b) {
    float scales[16];
    float max_scale = 0.0f, max_abs = 0.0f;
    for (int j = 0; j < 16; ++j) {
        scales[j] = fit_scale_q6(x + 16 * j, 16);
        if (std::fabs(scales[j]) > max_abs) {
            max_abs = std::fabs(scales[j]);
            max_scale = scales[j];
        }
    }
    std::memset(b, 0, 210);
    if (max_abs < kGroupEps) return;  // all zero: zero quants (32 - 32), scales and d
    float best_err = 0.0f;
    bool have = false;
    int8_t best_sc[16] = {};
    uint8_t best_L[kQK_K] = {};
    uint16_t best_d = 0;
    for (const float f : kQ6Factors) {
        const float iscale = -128.0f / (max_scale * f);
        const uint16_t dh = f16_bits(1.0f / iscale);
        const float d = f16_to_f32(dh);
        int8_t sc[16];
        uint8_t L[kQK_K];
        float err = 0.0f;
        for (int j = 0; j < 16; ++j) {
            sc[j] = static_cast<int8_t>(round_clamp(iscale * scales[j], -128, 127));
            const float dj = d * static_cast<float>(sc[j]);
            for (int l = 0; l < 16; ++l) {
                const int i = 16 * j + l;
                const int q = dj != 0.0f ? round_clamp(x[i] / dj, -32, 31) : 0;
                L[i] = static_cast<uint8_t>(q + 32);
                const float y = dj * static_cast<float>(q);  // d * sc * q, dequantize_row's order
                err += (y - x[i]) * (y - x[i]);
            }
        }
        if (!have || err < best_err) {
            have = true;
            best_err = err;
            std::memcpy(best_sc, sc, 16);
            std::memcpy(best_L, L, kQK_K);
            best_d = dh;
        }
    }
    uint8_t* ql = b;
    uint8_t* qh = b + 128;
    for (int h = 0; h < 2; ++h) {
        const uint8_t* L = best_L + 128 * h;
        for (int l = 0; l < 32; ++l) {
            ql[64 * h + l] = static_cast<uint8_t>((L[l] & 0x0f) | ((L[l + 64] & 0x0f) << 4));
            ql[64 * h + l + 32] = static_cast<uint8_t>((L[l + 32] & 0x0f) | ((L[l + 96] & 0x0f) << 4));
            qh[32 * h + l] = static_cast<uint8_t>((L[l] >> 4) | ((L[l + 32] >> 4) << 2) | ((L[l + 64] >> 4) << 4) | ((L[l + 96] >> 4) << 6));
        }
    }
    std::memcpy(b + 192, best_sc, 16);
    put_u16(b + 208, best_d);
}

}  // namespace mnemo::detail
