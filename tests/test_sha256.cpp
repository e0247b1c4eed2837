// SHA-256 (engine/src/io/sha256.cpp): the FIPS 180-2 appendix B examples, messages around the
// padding boundaries (55/56 and 119/120 bytes decide whether the length fits the last block;
// digests from Python's hashlib), any split into updates, streams, and the hex helpers.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "io/sha256.hpp"

namespace {

std::string hex_of(const std::string& s) { return mnemo::sha256_hex(s.data(), s.size()); }

TEST(Sha256, Fips180_2Examples) {
    // B.1: one block.
    EXPECT_EQ(hex_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    // B.2: 448 bits, so the padding needs a second block.
    EXPECT_EQ(hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    // B.3: one million 'a', fed in uneven pieces.
    mnemo::Sha256 s;
    const std::string piece(997, 'a');
    size_t fed = 0;
    for (; fed + piece.size() <= 1000000; fed += piece.size()) s.update(piece.data(), piece.size());
    s.update(piece.data(), 1000000 - fed);
    EXPECT_EQ(mnemo::to_hex(s.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, EmptyMessage) {
    EXPECT_EQ(mnemo::sha256_hex(nullptr, 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

std::string pattern(size_t n) {
    std::string m(n, '\0');
    for (size_t i = 0; i < n; ++i) m[i] = static_cast<char>((i * 7 + 3) & 255);
    return m;
}

TEST(Sha256, PaddingBoundaries) {
    const std::pair<size_t, const char*> cases[] = {
        {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
        {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
        {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
        {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
        {65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
        {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
        {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
        {128, "d2742f1f4ac6bb7ca2b239ee18402ba8b3f9f8e652d2a72973c2b9ba11c08cf6"},
    };
    for (const auto& [n, want] : cases) EXPECT_EQ(hex_of(pattern(n)), want) << n << " bytes";
}

TEST(Sha256, AnySplitGivesTheSameDigest) {
    const std::string m = pattern(300);
    const mnemo::Sha256Digest whole = mnemo::sha256(m.data(), m.size());
    for (size_t a = 0; a <= m.size(); a += 7)
        for (size_t b = a; b <= m.size(); b += 29) {
            mnemo::Sha256 s;
            s.update(m.data(), a);
            s.update(m.data() + a, b - a);
            s.update(m.data() + b, m.size() - b);
            ASSERT_EQ(s.finish(), whole) << "split at " << a << " and " << b;
        }
}

TEST(Sha256, StreamsAndReset) {
    const std::string m = pattern(200000);  // several of the stream reader's 64 KiB chunks
    std::istringstream in(m);
    EXPECT_EQ(mnemo::to_hex(mnemo::sha256(in)), hex_of(m));
    std::istringstream empty("");
    EXPECT_EQ(mnemo::to_hex(mnemo::sha256(empty)), mnemo::sha256_hex(nullptr, 0));

    mnemo::Sha256 s;
    s.update("abc", 3);
    s.finish();
    EXPECT_THROW(s.update("x", 1), mnemo::Error);
    EXPECT_THROW(s.finish(), mnemo::Error);
    s.reset();
    s.update("abc", 3);
    EXPECT_EQ(mnemo::to_hex(s.finish()), hex_of("abc"));
}

TEST(Sha256, HexComparison) {
    const mnemo::Sha256Digest d = mnemo::sha256("abc", 3);
    EXPECT_TRUE(mnemo::digest_matches_hex(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    EXPECT_TRUE(mnemo::digest_matches_hex(d, "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
    EXPECT_FALSE(mnemo::digest_matches_hex(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ae"));
    EXPECT_FALSE(mnemo::digest_matches_hex(d, "ba7816bf"));
    EXPECT_FALSE(mnemo::digest_matches_hex(d, "zz7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
}

}  // namespace
