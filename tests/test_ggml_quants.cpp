// GGUF's block types (mnemo/quant/ggml_quants.hpp) against the NumPy reference written from the
// format's definition (tools/reference/ggml_quants.py -> tests/data/quant/; regenerate with
// /usr/bin/python3 tools/reference/quant_golden.py tests/data/quant): dequantization of random
// blocks and the reference rounding of Q8_0 and Q4_0, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

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
    EXPECT_MENTIONS(required_error("writing Q4_K", [&] { quantize_row(ggml_type::Q4_K, out, nullptr, 256); }), "cannot write Q4_K (12)");
    EXPECT_TRUE(can_dequantize(ggml_type::Q6_K));
    EXPECT_FALSE(can_quantize(ggml_type::Q6_K));
}
