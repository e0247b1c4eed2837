// SHA-256 (FIPS 180-4) of bytes, incrementally or in one call, and its lowercase hex form.
// Used to pin downloaded artefacts (VQ codebooks) to the exact bytes a model was built with; it
// is not a MAC and makes no attempt at constant time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <string_view>

namespace mnemo {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
public:
    Sha256();
    // Feeds `size` more bytes; any split of a message into updates gives the same digest.
    void update(const void* data, size_t size);
    // The digest of everything fed so far. The object is then spent: update() and finish()
    // throw mnemo::Error until reset().
    Sha256Digest finish();
    void reset();

private:
    void block(const uint8_t* p);

    std::array<uint32_t, 8> h_;
    std::array<uint8_t, 64> buf_;
    size_t buffered_ = 0;
    uint64_t total_ = 0;  // bytes fed
    bool finished_ = false;
};

Sha256Digest sha256(const void* data, size_t size);
// Reads `in` to its end; throws mnemo::Error when the stream fails before that.
Sha256Digest sha256(std::istream& in);

// 64 lowercase hex digits.
std::string to_hex(const Sha256Digest& digest);
std::string sha256_hex(const void* data, size_t size);

// True when `hex` is 64 hex digits (either case) spelling `digest`.
bool digest_matches_hex(const Sha256Digest& digest, std::string_view hex);

}  // namespace mnemo
