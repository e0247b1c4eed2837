// Reference dequantizers of GGUF's block types (layouts: mnemo/quant/ggml_quants.hpp). Products
// are evaluated in the order the format's reference does, in float, so the results are bit-exact
// with it (and with tools/reference/ggml_quants.py).
#include <cstring>
#include <string>

#include "mnemo/error.hpp"
#include "mnemo/io/ggml_type.hpp"
#include "mnemo/ops/dtype.hpp"
#include "mnemo/quant/ggml_quants.hpp"

namespace mnemo {
namespace {

constexpr int kQK = 32, kQK_K = 256;

uint16_t u16_at(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

void dequantize_q8_0(const uint8_t* b, float* y) {
    const float d = f16_to_f32(u16_at(b));
    const int8_t* q = reinterpret_cast<const int8_t*>(b + 2);
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(q[j]) * d;
}

void dequantize_q4_0(const uint8_t* b, float* y) {
    const float d = f16_to_f32(u16_at(b));
    const uint8_t* qs = b + 2;
    for (int j = 0; j < kQK / 2; ++j) {
        y[j] = static_cast<float>((qs[j] & 0x0f) - 8) * d;
        y[j + kQK / 2] = static_cast<float>((qs[j] >> 4) - 8) * d;
    }
}

// Scale and min of sub-block j (0..7) from the 12 packed bytes of Q4_K / Q5_K: sub-blocks 0-3
// keep 6 bits in bytes j (scale) and j + 4 (min); 4-7 keep their low 4 bits in byte j + 4 and
// their high 2 bits in the top bits of bytes j - 4 (scale) and j (min).
void scale_min_k4(int j, const uint8_t* s, uint8_t& sc, uint8_t& m) {
    if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
    } else {
        sc = static_cast<uint8_t>((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
        m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

// Q4_K and Q5_K share the layout but for Q5_K's 32 bytes of high bits (qh == nullptr for Q4_K):
// weights 64i .. 64i+31 are the low nibbles of qs[32i ..], 64i+32 .. the high nibbles; their
// fifth bits are bits 2i and 2i+1 of qh[l].
void dequantize_k4(const uint8_t* b, const uint8_t* qh, const uint8_t* qs, float* y) {
    const float d = f16_to_f32(u16_at(b));
    const float dmin = f16_to_f32(u16_at(b + 2));
    const uint8_t* scales = b + 4;
    for (int i = 0; i < kQK_K / 64; ++i) {
        uint8_t sc, m;
        scale_min_k4(2 * i, scales, sc, m);
        const float d1 = d * sc, m1 = dmin * m;
        scale_min_k4(2 * i + 1, scales, sc, m);
        const float d2 = d * sc, m2 = dmin * m;
        const uint8_t* q = qs + 32 * i;
        for (int l = 0; l < 32; ++l) {
            const int hi = qh ? ((qh[l] >> (2 * i)) & 1) << 4 : 0;
            const float p = d1 * static_cast<float>((q[l] & 0x0f) + hi);
            y[64 * i + l] = p - m1;
        }
        for (int l = 0; l < 32; ++l) {
            const int hi = qh ? ((qh[l] >> (2 * i + 1)) & 1) << 4 : 0;
            const float p = d2 * static_cast<float>((q[l] >> 4) + hi);
            y[64 * i + 32 + l] = p - m2;
        }
    }
}

// Q6_K: two halves of 128 weights; in half h, weight 32k + l (k = 0..3, l = 0..31) takes its low
// 4 bits from ql[64h + l] (k = 0, 2: low nibble of byte l / l + 32; k = 1, 3: high nibble) and
// its high 2 bits from bits 2k of qh[32h + l]; sub-block of 16 -> scale scales[8h + 2k + l / 16].
void dequantize_q6_k(const uint8_t* b, float* y) {
    const uint8_t* ql = b;
    const uint8_t* qh = b + kQK_K / 2;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + kQK_K / 2 + kQK_K / 4);
    const float d = f16_to_f32(u16_at(b + kQK_K / 2 + kQK_K / 4 + kQK_K / 16));
    for (int h = 0; h < 2; ++h) {
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const uint8_t hb = qh[l];
            const int q1 = ((ql[l] & 0x0f) | (((hb >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0x0f) | (((hb >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((hb >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((hb >> 6) & 3) << 4)) - 32;
            y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
            y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
            y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
            y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

}  // namespace

bool can_dequantize(uint32_t t) {
    using namespace ggml_type;
    return t == F32 || t == F16 || t == BF16 || t == Q8_0 || t == Q4_0 || t == Q4_K || t == Q5_K || t == Q6_K;
}

void dequantize_row(uint32_t type, const void* src, float* dst, int64_t n) {
    const GgmlTypeInfo* ti = ggml_type_info(type);
    if (!ti || !can_dequantize(type)) throw Error("cannot dequantize " + ggml_type_label(type) + ": Mnemo reads F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K");
    if (n < 0 || n % ti->block_elems != 0)
        throw Error("cannot dequantize " + std::to_string(n) + " elements of " + ti->name + ": not a whole number of blocks of " + std::to_string(ti->block_elems));
    const uint8_t* p = static_cast<const uint8_t*>(src);
    const int64_t blocks = n / ti->block_elems;
    for (int64_t k = 0; k < blocks; ++k, p += ti->block_bytes, dst += ti->block_elems) {
        switch (type) {
            case ggml_type::F32: std::memcpy(dst, p, 4); break;
            case ggml_type::F16: *dst = f16_to_f32(u16_at(p)); break;
            case ggml_type::BF16: *dst = bf16_to_f32(u16_at(p)); break;
            case ggml_type::Q8_0: dequantize_q8_0(p, dst); break;
            case ggml_type::Q4_0: dequantize_q4_0(p, dst); break;
            case ggml_type::Q4_K: dequantize_k4(p, nullptr, p + 16, dst); break;
            case ggml_type::Q5_K: dequantize_k4(p, p + 16, p + 48, dst); break;
            case ggml_type::Q6_K: dequantize_q6_k(p, dst); break;
        }
    }
}

}  // namespace mnemo
