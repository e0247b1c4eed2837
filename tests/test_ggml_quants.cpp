// GGUF's block types (mnemo/quant/ggml_quants.hpp) against the NumPy reference written from the
// format's definition (tools/reference/ggml_quants.py -> tests/data/quant/; regenerate with
// /usr/bin/python3 tools/reference/quant_golden.py tests/data/quant): dequantization of random
// blocks and the reference rounding of Q8_0 and Q4_0, bit for bit; the K-quant quantizers' search
// (src/quant/quantize_k.cpp) against the NumPy one, byte for byte, and their round-trip error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include "fixtures/error_checks.hpp"
#include "mnemo/io/ggml_type.hpp"
#include "mnemo/quant/ggml_quants.hpp"
#include "npy.hpp"

using namespace mnemo;
using mnemo::test::load_npy;
using mnemo::test::required_error;

namespace {

const std::string kDir = std::string(MNEMO_TEST_DATA) + "/quant/";

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

uint32_t bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

struct TypeCase {
    const char* file;
    uint32_t type;
};

class Dequantize : public ::testing::TestWithParam<TypeCase> {};

}  // namespace

TEST_P(Dequantize, RandomBlocksGiveTheReferenceValuesBitForBit) {
    const TypeCase c = GetParam();
    const std::string raw = read_bytes(kDir + c.file + "_blocks.bin");
    const std::vector<float> want = load_npy(kDir + c.file + "_dequant.npy").as_f32();
    const GgmlTypeInfo* ti = ggml_type_info(c.type);
    ASSERT_NE(ti, nullptr);
    ASSERT_FALSE(raw.empty()) << "missing golden " << c.file;
    ASSERT_EQ(raw.size() / ti->block_bytes * ti->block_elems, want.size());
    std::vector<float> got(want.size() + 1, 12345.0f);  // one guard value after the row
    dequantize_row(c.type, raw.data(), got.data(), static_cast<int64_t>(want.size()));
    size_t mismatches = 0;
    for (size_t i = 0; i < want.size(); ++i)
        if (bits(got[i]) != bits(want[i]) && mismatches++ < 5)
            ADD_FAILURE() << ti->name << " element " << i << " (block " << i / ti->block_elems << "): " << got[i] << " != " << want[i];
    EXPECT_EQ(mismatches, 0u);
    EXPECT_EQ(got.back(), 12345.0f) << "wrote past the row";
}

INSTANTIATE_TEST_SUITE_P(GgmlQuants, Dequantize,
                         ::testing::Values(TypeCase{"q8_0", ggml_type::Q8_0}, TypeCase{"q4_0", ggml_type::Q4_0},
                                           TypeCase{"q4_k", ggml_type::Q4_K}, TypeCase{"q5_k", ggml_type::Q5_K},
                                           TypeCase{"q6_k", ggml_type::Q6_K}),
                         [](const auto& info) { return std::string(info.param.file); });

TEST(GgmlQuants, Q8_0AndQ4_0RoundAsTheFormatsReference) {
    const std::vector<float> x = load_npy(kDir + "quant_input.npy").as_f32();
    ASSERT_EQ(x.size() % 32, 0u);
    for (const auto& [file, type] : {std::pair{"q8_0", ggml_type::Q8_0}, std::pair{"q4_0", ggml_type::Q4_0}}) {
        const std::string want = read_bytes(kDir + file + "_quantized.bin");
        std::string got(want.size(), '\0');
        quantize_row(type, x.data(), got.data(), static_cast<int64_t>(x.size()));
        EXPECT_EQ(got, want) << file;
        // And back: Q8_0 within half a step of every value; Q4_0's grid is [-8d, 7d] with the
        // largest magnitude at -8d, so a value of the other sign near it is clipped at 7d: one step.
        std::vector<float> back(x.size());
        dequantize_row(type, got.data(), back.data(), static_cast<int64_t>(x.size()));
        for (size_t b = 0; b < x.size() / 32; ++b) {
            float amax = 0.0f;
            for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
            const float bound = type == ggml_type::Q8_0 ? amax / 127.0f * 0.5f : amax / 8.0f;
            for (size_t j = 0; j < 32; ++j)
                EXPECT_LE(std::fabs(back[32 * b + j] - x[32 * b + j]), bound + amax * 1e-3f + 1e-7f)
                    << file << " block " << b << " element " << j;
        }
    }
}

TEST(GgmlQuants, WhatCannotBeDoneIsRefusedNamingTheType) {
    float out[256];
    const uint8_t in[256 * 4] = {};
    EXPECT_MENTIONS(required_error("IQ2_XXS", [&] { dequantize_row(16, in, out, 256); }), "cannot dequantize IQ2_XXS (16)");
    EXPECT_MENTIONS(required_error("an unknown id", [&] { dequantize_row(77, in, out, 32); }), "unknown type 77");
    EXPECT_MENTIONS(required_error("a partial block", [&] { dequantize_row(ggml_type::Q4_K, in, out, 32); }),
                    "32 elements of Q4_K: not a whole number of blocks of 256");
    EXPECT_MENTIONS(required_error("writing Q3_K", [&] { quantize_row(ggml_type::Q3_K, out, nullptr, 256); }), "cannot write Q3_K (11)");
    EXPECT_MENTIONS(required_error("a partial K block", [&] { quantize_row(ggml_type::Q6_K, out, nullptr, 128); }),
                    "128 elements to Q6_K: not a whole number of blocks of 256");
    EXPECT_TRUE(can_dequantize(ggml_type::Q6_K));
    EXPECT_TRUE(can_quantize(ggml_type::Q6_K));
    EXPECT_FALSE(can_quantize(ggml_type::Q3_K));
}

namespace {

constexpr uint32_t kKTypes[] = {ggml_type::Q4_K, ggml_type::Q5_K, ggml_type::Q6_K};

std::vector<float> round_trip(uint32_t type, const std::vector<float>& x) {
    const GgmlTypeInfo* ti = ggml_type_info(type);
    std::vector<uint8_t> q(x.size() / ti->block_elems * ti->block_bytes);
    quantize_row(type, x.data(), q.data(), static_cast<int64_t>(x.size()));
    std::vector<float> y(x.size());
    dequantize_row(type, q.data(), y.data(), static_cast<int64_t>(x.size()));
    return y;
}

// Squared error over squared signal.
double nmse(const std::vector<float>& x, const std::vector<float>& y) {
    double e = 0.0, s = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
        e += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
        s += static_cast<double>(x[i]) * x[i];
    }
    return e / s;
}

std::vector<float> gaussian(size_t n, float scale, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> x(n);
    for (float& v : x) v = d(rng) * scale;
    return x;
}

bool all_finite(const std::vector<float>& v) {
    for (const float f : v)
        if (!std::isfinite(f)) return false;
    return true;
}

}  // namespace

TEST(GgmlQuants, KQuantsWriteTheReferenceSearchsBytes) {
    const std::vector<float> x = load_npy(kDir + "quant_k_input.npy").as_f32();
    ASSERT_EQ(x.size(), 6u * 256u);
    for (const auto& [file, type] : {std::pair{"q4_k", ggml_type::Q4_K}, std::pair{"q5_k", ggml_type::Q5_K}, std::pair{"q6_k", ggml_type::Q6_K}}) {
        const std::string want = read_bytes(kDir + file + "_quantized.bin");
        ASSERT_EQ(want.size(), x.size() / 256 * ggml_type_info(type)->block_bytes) << "missing golden " << file;
        std::string got(want.size(), '\0');
        quantize_row(type, x.data(), got.data(), static_cast<int64_t>(x.size()));
        const size_t bb = ggml_type_info(type)->block_bytes;
        for (size_t b = 0; b < x.size() / 256; ++b)
            EXPECT_EQ(got.substr(b * bb, bb), want.substr(b * bb, bb)) << file << " block " << b;
    }
}

// Bounds from the measured round trip of Gaussian weights (Q4_K 0.0050, Q5_K 0.00125, Q6_K
// 0.00031, where llama.cpp's reference quantizer gives 0.0052, 0.0015, 0.00032), with a margin;
// the same at 1e-3 and 1e3 (scale-free, inside f16's range for the block scales).
TEST(GgmlQuants, KQuantRoundTripErrorIsBounded) {
    const double bound[] = {0.0060, 0.0015, 0.00040};
    for (int k = 0; k < 3; ++k)
        for (const float scale : {1.0f, 1e-3f, 1e3f}) {
            const std::vector<float> x = gaussian(64 * 256, scale, 17 + k);
            const std::vector<float> y = round_trip(kKTypes[k], x);
            ASSERT_TRUE(all_finite(y));
            EXPECT_LT(nmse(x, y), bound[k]) << ggml_type_info(kKTypes[k])->name << " at scale " << scale;
        }
}

TEST(GgmlQuants, KQuantsOfZeroConstantAndExtremeBlocks) {
    for (const uint32_t type : kKTypes) {
        SCOPED_TRACE(ggml_type_info(type)->name);
        const std::vector<float> zero(256, 0.0f);
        for (const float v : round_trip(type, zero)) ASSERT_EQ(v, 0.0f);
        // A constant block: every weight within 1% of it (the grid has a point near any value).
        for (const float c : {0.75f, -2.5f}) {
            const std::vector<float> y = round_trip(type, std::vector<float>(256, c));
            for (const float v : y) ASSERT_NEAR(v, c, std::fabs(c) * 0.01f);
        }
        // Tiny weights (block scales in f16's subnormals or below) and weights beyond what an f16
        // block scale can reach (clipped at 65504, never infinite): finite values, no NaN.
        for (const float scale : {1e-7f, 1e-30f, 1e9f}) {
            const std::vector<float> x = gaussian(4 * 256, scale, 3);
            const std::vector<float> y = round_trip(type, x);
            ASSERT_TRUE(all_finite(y)) << "scale " << scale;
            for (size_t i = 0; i < x.size(); ++i) ASSERT_LE(std::fabs(y[i]), 8.0f * scale) << "scale " << scale << " element " << i;
        }
        // One huge weight among small ones must not break the rest of the block.
        std::vector<float> x = gaussian(256, 1.0f, 5);
        x[100] = 1000.0f;
        const std::vector<float> y = round_trip(type, x);
        ASSERT_TRUE(all_finite(y));
        EXPECT_NEAR(y[100], 1000.0f, 20.0f);
    }
}
