// The CUDA backend's block decoders (backends/cuda/src/kernels/quant_blocks.cuh), compiled for the
// host: the same per-weight code the MATMUL and GET_ROWS kernels run, checked bit for bit against
// the NumPy golden blocks (tests/data/quant, as test_ggml_quants.cpp) and against the engine's
// reference dequantizer on random blocks. Runs everywhere, GPU or not; the GPU side of the
// decoders differs only in mul_rn / sub_rn / the f16 conversion being device intrinsics of the
// same single rounding. The q8_0 quantizer KV_STORE runs on the device (q8_0_encode.cuh) is
// checked the same way, byte for byte against the engine's reference quantizer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "../backends/cuda/src/kernels/q8_0_encode.cuh"
#include "../backends/cuda/src/kernels/quant_blocks.cuh"
#include "mnemo/io/ggml_type.hpp"
#include "mnemo/ops/dtype.hpp"
#include "mnemo/quant/ggml_quants.hpp"
#include "npy.hpp"

namespace {

using mnemo::test::load_npy;

uint32_t bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

// Every weight of `blocks` blocks at `p`, in row order, through Q::weight one at a time and through
// dequantize_sub a sub-block at a time; the two must agree before either is compared.
template <class Q>
std::vector<float> decode(const uint8_t* p, size_t blocks) {
    std::vector<float> out(blocks * Q::kElems);
    for (size_t b = 0; b < blocks; ++b)
        for (int sub = 0; sub < Q::kSubs; ++sub) {
            float y[32];
            mnemo_cuda::dequantize_sub<Q>(p + b * Q::kBytes, sub, y);
            for (int l = 0; l < 32; ++l) {
                const float one = Q::weight(p + b * Q::kBytes, sub, l);
                EXPECT_EQ(bits(one), bits(y[l])) << "block " << b << " sub-block " << sub << " weight " << l;
                out[b * Q::kElems + static_cast<size_t>(sub) * 32 + static_cast<size_t>(l)] = y[l];
            }
        }
    return out;
}

size_t mismatches(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
    size_t n = 0;
    for (size_t i = 0; i < want.size(); ++i)
        if (bits(got[i]) != bits(want[i]) && n++ < 5) ADD_FAILURE() << what << " element " << i << ": " << got[i] << " != " << want[i];
    return n;
}

// Random bytes with every f16 field finite (a NaN's payload is not a value to compare): the
// quantized codes, scales and mins take every bit pattern.
template <class Q>
std::vector<uint8_t> random_blocks(size_t blocks, std::mt19937& rng, std::initializer_list<int> f16_fields) {
    std::vector<uint8_t> raw(blocks * Q::kBytes);
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& v : raw) v = static_cast<uint8_t>(byte(rng));
    for (size_t b = 0; b < blocks; ++b)
        for (int at : f16_fields) {
            uint8_t& hi = raw[b * Q::kBytes + static_cast<size_t>(at) + 1];
            if ((hi & 0x7c) == 0x7c) hi = static_cast<uint8_t>(hi & ~0x40);  // exponent 31 -> 15
        }
    return raw;
}

template <class Q>
void check_type(const char* file, uint32_t ggml, std::initializer_list<int> f16_fields) {
    SCOPED_TRACE(file);
    // The NumPy golden blocks, placed one byte past an aligned address: the decoders read bytes.
    std::ifstream in(std::string(MNEMO_TEST_DATA) + "/quant/" + file + "_blocks.bin", std::ios::binary);
    const std::string golden{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    ASSERT_FALSE(golden.empty()) << "missing golden " << file;
    ASSERT_EQ(golden.size() % Q::kBytes, 0u);
    std::vector<uint8_t> shifted(golden.size() + 1);
    std::memcpy(shifted.data() + 1, golden.data(), golden.size());
    const std::vector<float> want = load_npy(std::string(MNEMO_TEST_DATA) + "/quant/" + file + "_dequant.npy").as_f32();
    const size_t blocks = golden.size() / Q::kBytes;
    ASSERT_EQ(want.size(), blocks * Q::kElems);
    EXPECT_EQ(mismatches(decode<Q>(shifted.data() + 1, blocks), want, "golden"), 0u);

    // Random blocks against the engine's reference.
    std::mt19937 rng(20261127u + ggml);
    const size_t n = 64;
    const std::vector<uint8_t> raw = random_blocks<Q>(n, rng, f16_fields);
    std::vector<float> ref(n * Q::kElems);
    mnemo::dequantize_row(ggml, raw.data(), ref.data(), static_cast<int64_t>(ref.size()));
    EXPECT_EQ(mismatches(decode<Q>(raw.data(), n), ref, "random"), 0u);
}

}  // namespace

TEST(CudaQuantBlocks, HalfToFloatIsExactForEveryPattern) {
    for (uint32_t h = 0; h < 0x10000u; ++h) {
        const float got = mnemo_cuda::qblock::half_bits_to_f32(static_cast<uint16_t>(h));
        const float want = mnemo::f16_to_f32(static_cast<uint16_t>(h));
        if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << std::hex << h;
        else EXPECT_EQ(bits(got), bits(want)) << std::hex << h;
    }
}

TEST(CudaQuantBlocks, Q8_0DecodesAsTheReference) { check_type<mnemo_cuda::Q8_0Block>("q8_0", mnemo::ggml_type::Q8_0, {0}); }
TEST(CudaQuantBlocks, Q4_0DecodesAsTheReference) { check_type<mnemo_cuda::Q4_0Block>("q4_0", mnemo::ggml_type::Q4_0, {0}); }
TEST(CudaQuantBlocks, Q4_KDecodesAsTheReference) { check_type<mnemo_cuda::Q4_KBlock>("q4_k", mnemo::ggml_type::Q4_K, {0, 2}); }
TEST(CudaQuantBlocks, Q5_KDecodesAsTheReference) { check_type<mnemo_cuda::Q5_KBlock>("q5_k", mnemo::ggml_type::Q5_K, {0, 2}); }
TEST(CudaQuantBlocks, Q6_KDecodesAsTheReference) { check_type<mnemo_cuda::Q6_KBlock>("q6_k", mnemo::ggml_type::Q6_K, {208}); }

// ------------------------------------------------------------------ q8_0 quantizer (KV_STORE)

namespace {

void expect_half_as_engine(uint32_t x) {
    float f;
    std::memcpy(&f, &x, 4);
    const uint16_t got = mnemo_cuda::qblock::f32_to_half_bits(f), want = mnemo::f32_to_f16(f);
    if (got != want) ADD_FAILURE() << std::hex << "f32 0x" << x << ": 0x" << got << " != 0x" << want;
}

}  // namespace

// The scale's f16 rounding: every f32 whose result is a subnormal half or rounds there (the
// shifts that differ per exponent), every tie and its neighbours of the normal range, and a
// stride through everything else (inf, NaN, overflow, both signs).
TEST(CudaQuantBlocks, FloatToHalfRoundsAsTheEngine) {
    for (uint32_t x = 0x32fffff0u; x < 0x38800010u; ++x) {
        expect_half_as_engine(x);
        expect_half_as_engine(x | 0x80000000u);
    }
    for (uint32_t top = 0; top < (1u << 19); ++top)
        for (uint32_t low : {0x0000u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu}) expect_half_as_engine((top << 13) | low);
    for (uint64_t x = 0; x <= 0xffffffffu; x += 997) expect_half_as_engine(static_cast<uint32_t>(x));
}

// Blocks of finite values (the reference's int8 conversion of a NaN code is undefined, so no NaN
// or inf inputs) written one byte past an aligned address: scales from subnormal to near the f16
// limit and past it (the scale becomes inf, every code 0), all-zero blocks, exact .5 ties (amax
// 127: d = 1), single non-zero values and mixed signs.
TEST(CudaQuantBlocks, Q8_0QuantizesAsTheReference) {
    std::mt19937 rng(20261127u);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> pick(0, 31);
    std::vector<std::vector<float>> blocks;
    for (float scale : {0.0f, 1e-42f, 1e-38f, 3e-8f, 1e-5f, 0.01f, 1.0f, 37.0f, 1e4f, 8e6f, 1e38f}) {
        for (int rep = 0; rep < 200; ++rep) {
            std::vector<float> b(32);
            for (float& v : b) v = normal(rng) * scale;
            if (rep % 5 == 1) b[static_cast<size_t>(pick(rng))] *= 50.0f;  // one outlier sets d
            if (rep % 5 == 2)
                for (float& v : b) v = std::fabs(v);
            blocks.push_back(b);
        }
    }
    {
        std::vector<float> ties(32);
        for (int j = 0; j < 32; ++j) ties[static_cast<size_t>(j)] = static_cast<float>(j - 16) + 0.5f;
        ties[0] = 127.0f;
        blocks.push_back(ties);
        std::vector<float> one(32, 0.0f);
        one[7] = -3.25f;
        blocks.push_back(one);
    }
    std::vector<uint8_t> got(35), want(34);
    size_t bad = 0;
    for (size_t i = 0; i < blocks.size(); ++i) {
        mnemo_cuda::quantize_q8_0_block(blocks[i].data(), got.data() + 1);
        mnemo::quantize_row(mnemo::ggml_type::Q8_0, blocks[i].data(), want.data(), 32);
        if (std::memcmp(got.data() + 1, want.data(), 34) != 0 && bad++ < 5) ADD_FAILURE() << "block " << i << " differs";
        // The block decodes (quant_blocks.cuh) to what the reference dequantizer reads from it.
        float ref[32];
        mnemo::dequantize_row(mnemo::ggml_type::Q8_0, want.data(), ref, 32);
        for (int l = 0; l < 32; ++l)
            if (bits(mnemo_cuda::Q8_0Block::weight(got.data() + 1, 0, l)) != bits(ref[l]) && bad++ < 5)
                ADD_FAILURE() << "block " << i << " weight " << l << " decodes differently";
    }
    EXPECT_EQ(bad, 0u);
}
