// Reference quantizers of the block types Mnemo writes, with the format's rounding (so a file
// Mnemo writes matches what llama.cpp's reference quantizer writes from the same floats):
//   Q8_0: d = max|x| / 127, q = round(x / d) (halves away from zero);
//   Q4_0: d = -m / 8 where m is the value of largest magnitude (sign kept), q = min(15,
//         trunc(x / d + 8.5)), so m itself maps to 0 and the grid spans [-8d, 7d];
//   Q4_K, Q5_K, Q6_K: an error-minimising search per block (quantize_k.cpp).
// The scale is stored as f16 but the quants are computed with the f32 scale, as the format's
// reference does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "mnemo/error.hpp"
#include "mnemo/io/ggml_type.hpp"
#include "mnemo/ops/dtype.hpp"
#include "mnemo/quant/ggml_quants.hpp"
#include "quant/quantize_k.hpp"

namespace mnemo {
namespace {

constexpr int kQK = 32;

void put_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// round(v) as a q8_0 code. For every block of normal numbers |v| <= 127 and this is the format's
// plain rounding; a block whose largest value is subnormal has 1 / d = inf, so v is +-inf (or NaN
// for a zero): the cast of those to int8 is undefined, so they are pinned to +-127 (NaN to 0).
int8_t q8_code(float v) {
    const float r = std::round(v);
    if (!(r == r)) return 0;
    return static_cast<int8_t>(r >= 127.0f ? 127.0f : r <= -127.0f ? -127.0f : r);
}

void quantize_q8_0(const float* x, uint8_t* b) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_u16(b, f32_to_f16(d));
    int8_t* q = reinterpret_cast<int8_t*>(b + 2);
    for (int j = 0; j < kQK; ++j) q[j] = q8_code(x[j] * id);
}

void quantize_q4_0(const float* x, uint8_t* b) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j)
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_u16(b, f32_to_f16(d));
    uint8_t* qs = b + 2;
    for (int j = 0; j < kQK / 2; ++j) {
        const int lo = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
        const int hi = std::min(15, static_cast<int>(static_cast<int8_t>(x[j + kQK / 2] * id + 8.5f)));
        qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
}

}  // namespace

bool can_quantize(uint32_t t) {
    using namespace ggml_type;
    return t == F32 || t == F16 || t == BF16 || t == Q8_0 || t == Q4_0 || t == Q4_K || t == Q5_K || t == Q6_K;
}

void quantize_row(uint32_t type, const float* src, void* dst, int64_t n) {
    const GgmlTypeInfo* ti = ggml_type_info(type);
    if (!ti || !can_quantize(type)) throw Error("cannot write " + ggml_type_label(type) + ": Mnemo writes F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K");
    if (n < 0 || n % ti->block_elems != 0)
        throw Error("cannot quantize " + std::to_string(n) + " elements to " + ti->name + ": not a whole number of blocks of " + std::to_string(ti->block_elems));
    uint8_t* p = static_cast<uint8_t*>(dst);
    const int64_t blocks = n / ti->block_elems;
    for (int64_t k = 0; k < blocks; ++k, p += ti->block_bytes, src += ti->block_elems) {
        switch (type) {
            case ggml_type::F32: std::memcpy(p, src, 4); break;
            case ggml_type::F16: put_u16(p, f32_to_f16(*src)); break;
            case ggml_type::BF16: put_u16(p, f32_to_bf16(*src)); break;
            case ggml_type::Q8_0: quantize_q8_0(src, p); break;
            case ggml_type::Q4_0: quantize_q4_0(src, p); break;
            case ggml_type::Q4_K: detail::quantize_block_q4_k(src, p); break;
            case ggml_type::Q5_K: detail::quantize_block_q5_k(src, p); break;
            case ggml_type::Q6_K: detail::quantize_block_q6_k(src, p); break;
        }
    }
}

}  // namespace mnemo
