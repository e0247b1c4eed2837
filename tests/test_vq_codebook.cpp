// The VQ codebook loader (engine/src/memory/vq_codebook.cpp): the FAISS-trained goldens of
// tests/data/ops_golden/vq/ load with their hashes and write back to the same bytes, and every
// malformed input is refused with the file, the field and what was expected.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "io/sha256.hpp"
#include "mnemo/memory/vq_codebook.hpp"
#include "npy.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(MNEMO_TEST_DATA) / "ops_golden" / "vq";

std::vector<uint8_t> read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw mnemo::Error(p.string() + ": cannot open");
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string read_hash(const std::string& name) {
    std::ifstream in(kDir / (name + ".sha256"));
    std::string hex;
    in >> hex;
    return hex;
}

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}

void put_f32(std::vector<uint8_t>& b, size_t at, float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    put_u32(b, at, bits);
}

// The message of parsing `bytes` as "test.mvqc" ("" when it parses).
std::string error_of(const std::vector<uint8_t>& bytes, const std::string& expected_sha256 = "") {
    try {
        mnemo::parse_vq_codebook(bytes.data(), bytes.size(), "test.mvqc", expected_sha256);
    } catch (const mnemo::Error& e) {
        return e.what();
    }
    return "";
}

#define EXPECT_REFUSED(bytes, ...)                                                             \
    do {                                                                                       \
        const std::string msg_ = error_of(bytes);                                              \
        EXPECT_EQ(msg_.rfind("test.mvqc: ", 0), 0u) << "no file name in: " << msg_;            \
        for (const char* part_ : {__VA_ARGS__}) EXPECT_NE(msg_.find(part_), std::string::npos) \
            << "'" << part_ << "' missing from: " << msg_;                                     \
    } while (0)

TEST(VqCodebook, LoadsTheFaissGoldensWithTheirHashes) {
    const mnemo::VqCodebook opq = mnemo::load_vq_codebook((kDir / "opq16.mvqc").string(), read_hash("opq16"));
    EXPECT_EQ(opq.d_in, 16u);
    EXPECT_EQ(opq.d_out, 16u);
    EXPECT_EQ(opq.coarse_m, 2u);
    EXPECT_EQ(opq.coarse_nbits, 6u);
    EXPECT_EQ(opq.pq_m, 4u);
    EXPECT_EQ(opq.pq_nbits, 5u);
    EXPECT_TRUE(opq.has_rotation());
    EXPECT_EQ(opq.coarse_code_size(), 2u);
    EXPECT_EQ(opq.pq_code_size(), 3u);
    EXPECT_EQ(opq.code_size(), 5u);
    EXPECT_EQ(opq.code_words(), 2u);
    EXPECT_EQ(opq.sha256, read_hash("opq16"));
    // The arrays are the ones FAISS trained (exported separately by the generator as .npy).
    const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
        return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
    };
    EXPECT_TRUE(same(opq.rotation, mnemo::test::load_npy((kDir / "opq16_A.npy").string()).as_f32()));
    EXPECT_TRUE(same(opq.coarse, mnemo::test::load_npy((kDir / "opq16_coarse.npy").string()).as_f32()));
    EXPECT_TRUE(same(opq.pq, mnemo::test::load_npy((kDir / "opq16_pq.npy").string()).as_f32()));
    EXPECT_EQ(opq.to_bytes(), read_bytes(kDir / "opq16.mvqc"));

    const mnemo::VqCodebook flat = mnemo::load_vq_codebook((kDir / "flat24.mvqc").string(), read_hash("flat24"));
    EXPECT_FALSE(flat.has_rotation());
    EXPECT_EQ(flat.d_in, 24u);
    EXPECT_EQ(flat.d_out, 24u);
    EXPECT_EQ(flat.coarse_m, 1u);
    EXPECT_EQ(flat.coarse_nbits, 7u);
    EXPECT_EQ(flat.pq_m, 3u);
    EXPECT_EQ(flat.pq_nbits, 10u);
    EXPECT_EQ(flat.code_size(), 5u);
    EXPECT_EQ(flat.coarse.size(), 128u * 24u);
    EXPECT_EQ(flat.pq.size(), 3u * 1024u * 8u);
    EXPECT_EQ(flat.to_bytes(), read_bytes(kDir / "flat24.mvqc"));
    // Upper-case hex is the same hash; without one the bytes are not checked.
    std::string upper = read_hash("flat24");
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    EXPECT_NO_THROW(mnemo::load_vq_codebook((kDir / "flat24.mvqc").string(), upper));
    EXPECT_NO_THROW(mnemo::load_vq_codebook((kDir / "flat24.mvqc").string(), ""));
}

TEST(VqCodebook, RefusesAnotherHash) {
    const std::vector<uint8_t> bytes = read_bytes(kDir / "opq16.mvqc");
    const std::string other = read_hash("flat24");
    EXPECT_NE(error_of(bytes, other).find("SHA-256 mismatch"), std::string::npos) << error_of(bytes, other);
    EXPECT_NE(error_of(bytes, other).find(other), std::string::npos);
    EXPECT_NE(error_of(bytes, "abc").find("not 64 hex digits"), std::string::npos);
    std::string not_hex = read_hash("opq16");
    not_hex[10] = 'g';
    EXPECT_NE(error_of(bytes, not_hex).find("not 64 hex digits"), std::string::npos);
    // One flipped bit anywhere changes the hash.
    std::vector<uint8_t> flipped = bytes;
    flipped[flipped.size() / 2] ^= 1;
    EXPECT_NE(error_of(flipped, read_hash("opq16")).find("SHA-256 mismatch"), std::string::npos);
    try {
        mnemo::load_vq_codebook((kDir / "missing.mvqc").string(), "");
        FAIL() << "a missing file loaded";
    } catch (const mnemo::Error& e) {
        EXPECT_NE(std::string(e.what()).find("missing.mvqc"), std::string::npos) << e.what();
    }
}

TEST(VqCodebook, RefusesMalformedHeaders) {
    const std::vector<uint8_t> good = read_bytes(kDir / "opq16.mvqc");
    ASSERT_EQ(error_of(good), "");
    auto with_u32 = [&](size_t at, uint32_t v) {
        std::vector<uint8_t> b = good;
        put_u32(b, at, v);
        return b;
    };
    std::vector<uint8_t> magic = good;
    magic[7] = 'X';
    EXPECT_REFUSED(magic, "magic", "\"MNEMOVQX\"", "expected \"MNEMOVQC\"");
    EXPECT_REFUSED(std::vector<uint8_t>(good.begin(), good.begin() + 39), "truncated", "39 bytes", "header");
    EXPECT_REFUSED(with_u32(8, 2), "format version", "is 2", "expected 1");
    EXPECT_REFUSED(with_u32(12, 2), "flags", "are 2", "expected 0 or 1");
    EXPECT_REFUSED(with_u32(16, 0), "d_in", "expected at least 1");
    EXPECT_REFUSED(with_u32(20, 0), "d_out", "expected at least 1");
    EXPECT_REFUSED(with_u32(24, 3), "coarse_M", "is 3", "divisor of d_out = 16");
    EXPECT_REFUSED(with_u32(32, 0), "pq_M", "is 0", "divisor of d_out = 16");
    EXPECT_REFUSED(with_u32(28, 0), "coarse_nbits", "is 0", "expected 1..16");
    EXPECT_REFUSED(with_u32(36, 17), "pq_nbits", "is 17", "expected 1..16");
    // Without the rotation flag d_in must equal d_out.
    std::vector<uint8_t> plain = with_u32(12, 0);
    put_u32(plain, 16, 8);
    EXPECT_REFUSED(plain, "d_in", "is 8", "expected d_out = 16");
}

TEST(VqCodebook, RefusesSizesThatDoNotAddUp) {
    const std::vector<uint8_t> good = read_bytes(kDir / "opq16.mvqc");
    std::vector<uint8_t> shorter(good.begin(), good.end() - 4);
    EXPECT_REFUSED(shorter, "truncated", "A[16, 16], coarse[2, 64, 8], pq[4, 32, 4]", "implies 7208 bytes",
                   "has 7204");
    std::vector<uint8_t> longer = good;
    longer.push_back(0);
    EXPECT_REFUSED(longer, "trailing bytes", "implies 7208 bytes", "has 7209");
    // Clearing the rotation flag leaves A's 1024 bytes over.
    std::vector<uint8_t> no_rotation = good;
    put_u32(no_rotation, 12, 0);
    EXPECT_REFUSED(no_rotation, "trailing bytes", "implies 6184");
    // A header claiming enormous tables over a small file: refused before anything is allocated.
    std::vector<uint8_t> huge = good;
    put_u32(huge, 16, 0xFFFFFFFFu);
    put_u32(huge, 20, 0xFFFFFFF0u);
    EXPECT_REFUSED(huge, "truncated", "implies more than 2^62 bytes");
    std::vector<uint8_t> wide = good;
    put_u32(wide, 24, 2);
    put_u32(wide, 28, 16);
    put_u32(wide, 32, 1);
    put_u32(wide, 36, 16);
    EXPECT_REFUSED(wide, "truncated", "coarse[2, 65536, 8], pq[1, 65536, 16]");
    std::vector<uint8_t> too_many_coarse_bits = good;
    put_u32(too_many_coarse_bits, 24, 4);
    put_u32(too_many_coarse_bits, 28, 9);
    EXPECT_REFUSED(too_many_coarse_bits, "4 x 9 bits", "at most 32 bits");
}

TEST(VqCodebook, RefusesNonFiniteValuesNamingTheElement) {
    const std::vector<uint8_t> good = read_bytes(kDir / "opq16.mvqc");
    std::vector<uint8_t> nan_a = good;
    put_f32(nan_a, 40 + 4 * (3 * 16 + 5), std::numeric_limits<float>::quiet_NaN());
    EXPECT_REFUSED(nan_a, "A[3][5]", "NaN", "expected a finite float");
    std::vector<uint8_t> inf_coarse = good;
    const size_t coarse_at = 40 + 4 * 256;
    put_f32(inf_coarse, coarse_at + 4 * ((1 * 64 + 37) * 8 + 2), -std::numeric_limits<float>::infinity());
    EXPECT_REFUSED(inf_coarse, "coarse[1][37][2]", "infinite");
    std::vector<uint8_t> nan_pq = good;
    put_f32(nan_pq, good.size() - 4, std::numeric_limits<float>::quiet_NaN());
    EXPECT_REFUSED(nan_pq, "pq[3][31][3]", "offset 7204");
}

TEST(VqCodebook, ToBytesRoundTripsAnyCodebook) {
    mnemo::VqCodebook cb;
    cb.d_in = cb.d_out = 4;
    cb.coarse_m = 2;
    cb.coarse_nbits = 1;
    cb.pq_m = 1;
    cb.pq_nbits = 2;
    for (int i = 0; i < 2 * 2 * 2; ++i) cb.coarse.push_back(0.5f * static_cast<float>(i) - 1.0f);
    for (int i = 0; i < 4 * 4; ++i) cb.pq.push_back(-0.0f + 0.25f * static_cast<float>(i));
    cb.pq[0] = -0.0f;  // signed zero survives (the hash covers the bits as stored)
    const std::vector<uint8_t> bytes = cb.to_bytes();
    ASSERT_EQ(bytes.size(), 40u + 4 * (8 + 16));
    const mnemo::VqCodebook back = mnemo::parse_vq_codebook(bytes.data(), bytes.size(), "rt", mnemo::sha256_hex(bytes.data(), bytes.size()));
    EXPECT_EQ(back.to_bytes(), bytes);
    EXPECT_FALSE(back.has_rotation());
    EXPECT_TRUE(std::signbit(back.pq[0]));
    EXPECT_EQ(back.code_size(), 2u);  // 2 coarse bits -> 1 byte, 2 PQ bits -> 1 byte
}

TEST(VqCodebook, PacksCodesIntoLittleEndianWords) {
    const uint8_t codes[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0};
    const std::vector<int32_t> w = mnemo::vq_code_words(codes, 2, 5, 2);
    ASSERT_EQ(w.size(), 4u);
    EXPECT_EQ(static_cast<uint32_t>(w[0]), 0x04030201u);
    EXPECT_EQ(static_cast<uint32_t>(w[1]), 0x00000005u);
    EXPECT_EQ(static_cast<uint32_t>(w[2]), 0xD0C0B0A0u);
    EXPECT_EQ(static_cast<uint32_t>(w[3]), 0x000000E0u);
    EXPECT_THROW(mnemo::vq_code_words(codes, 2, 5, 1), mnemo::Error);
}

}  // namespace
