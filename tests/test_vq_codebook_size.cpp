// A codebook's size before its bytes (mnemo/memory/vq_codebook.hpp): what the header implies,
// and the most any header can announce for vectors of a given dimension. The knowledge-server
// client sizes its downloads by these, so both must agree with the full parser.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures/error_checks.hpp"
#include "mnemo/memory/vq_codebook.hpp"

using mnemo::VqCodebook;

namespace {

VqCodebook shaped(uint32_t d_in, uint32_t d_out, uint32_t cb, uint32_t pb, bool rotation) {
    VqCodebook c;
    c.d_in = d_in;
    c.d_out = d_out;
    c.coarse_m = 1;
    c.coarse_nbits = cb;
    c.pq_m = 2;
    c.pq_nbits = pb;
    if (rotation) c.rotation.assign(size_t{d_out} * d_in, 0.0f);
    c.coarse.assign((size_t{1} << cb) * d_out, 0.0f);
    c.pq.assign(2 * (size_t{1} << pb) * (d_out / 2), 0.0f);
    return c;
}

}  // namespace

TEST(VqCodebookSize, HeaderImpliesTheWholeSize) {
    for (const VqCodebook& c : {shaped(16, 16, 8, 8, false), shaped(16, 18, 4, 6, true), shaped(8, 8, 16, 16, false)}) {
        const std::vector<uint8_t> bytes = c.to_bytes();
        VqCodebook shape;
        EXPECT_EQ(mnemo::vq_codebook_bytes(bytes.data(), VqCodebook::kHeaderBytes, "cb", &shape), bytes.size());
        EXPECT_EQ(shape.d_in, c.d_in);
        EXPECT_EQ(shape.d_out, c.d_out);
        EXPECT_EQ(shape.pq_nbits, c.pq_nbits);
        EXPECT_TRUE(shape.coarse.empty());
        // And the whole parser agrees with it.
        EXPECT_EQ(mnemo::parse_vq_codebook(bytes.data(), bytes.size(), "cb", "").d_out, c.d_out);
    }
}

TEST(VqCodebookSize, HeaderChecksAreTheParsersChecks) {
    std::vector<uint8_t> bytes = shaped(16, 16, 8, 8, false).to_bytes();
    const std::string short_header = mnemo::test::required_error("a short header", [&] { mnemo::vq_codebook_bytes(bytes.data(), 39, "cb"); });
    EXPECT_MENTIONS(short_header, "cb: truncated: 39 bytes, the header alone needs 40");
    bytes[36] = 17;  // pq_nbits
    EXPECT_MENTIONS(mnemo::test::required_error("17 bits", [&] { mnemo::vq_codebook_bytes(bytes.data(), bytes.size(), "cb"); }),
                    "pq_nbits (offset 36) is 17, expected 1..16");
}

TEST(VqCodebookSize, NoHeaderAnnouncesMoreThanTheMaximum) {
    // The widest codebook for d_in: a rotation into 2 d_in dimensions and 16-bit tables.
    for (uint32_t d : {2u, 16u}) {
        const std::vector<uint8_t> widest = shaped(d, 2 * d, 16, 16, true).to_bytes();
        EXPECT_EQ(mnemo::vq_codebook_bytes(widest.data(), VqCodebook::kHeaderBytes, "cb"), mnemo::vq_codebook_max_bytes(d));
        const std::vector<uint8_t> usual = shaped(d, d, 8, 8, false).to_bytes();
        EXPECT_LT(usual.size(), mnemo::vq_codebook_max_bytes(d));
    }
    EXPECT_LT(mnemo::vq_codebook_max_bytes(32), uint64_t{40} << 20) << "a 32-dimensional head's codebook is tens of MiB at most";
}
