// SHA-256 as FIPS 180-4 §6.2 specifies it: 512-bit blocks, a 64-word message schedule, 64 rounds,
// the message padded with a 1 bit, zeros and its bit length as a big-endian 64-bit integer.
#include "io/sha256.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "mnemo/error.hpp"

namespace mnemo {
namespace {

// The first 32 bits of the fractional parts of the cube roots of the first 64 primes (§4.2.2).
constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

// The first 32 bits of the fractional parts of the square roots of the first 8 primes (§5.3.3).
constexpr std::array<uint32_t, 8> kInitial = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                              0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

uint32_t load_be32(const uint8_t* p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

Sha256::Sha256() { reset(); }

void Sha256::reset() {
    h_ = kInitial;
    buffered_ = 0;
    total_ = 0;
    finished_ = false;
}

void Sha256::block(const uint8_t* p) {
    uint32_t w[64];
    for (int t = 0; t < 16; ++t) w[t] = load_be32(p + 4 * t);
    for (int t = 16; t < 64; ++t) {
        const uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        const uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int t = 0; t < 64; ++t) {
        const uint32_t big_s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        const uint32_t ch = (e & f) ^ (~e & g);
        const uint32_t t1 = h + big_s1 + ch + kRound[t] + w[t];
        const uint32_t big_s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        const uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        const uint32_t t2 = big_s0 + maj;
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
    h_[5] += f;
    h_[6] += g;
    h_[7] += h;
}

void Sha256::update(const void* data, size_t size) {
    if (finished_) throw Error("sha256: update() after finish() (call reset() first)");
    const auto* p = static_cast<const uint8_t*>(data);
    total_ += size;
    if (buffered_ > 0) {
        const size_t take = std::min(size, buf_.size() - buffered_);
        std::memcpy(buf_.data() + buffered_, p, take);
        buffered_ += take;
        p += take;
        size -= take;
        if (buffered_ < buf_.size()) return;
        block(buf_.data());
        buffered_ = 0;
    }
    for (; size >= 64; p += 64, size -= 64) block(p);
    if (size > 0) std::memcpy(buf_.data(), p, size);
    buffered_ = size;
}

Sha256Digest Sha256::finish() {
    if (finished_) throw Error("sha256: finish() called twice (call reset() first)");
    // The length is of the message in bits, modulo 2^64 (§5.1.1).
    const uint64_t bits = total_ * 8;
    buf_[buffered_++] = 0x80;
    if (buffered_ > 56) {  // no room for the length: pad this block out and start another
        std::memset(buf_.data() + buffered_, 0, buf_.size() - buffered_);
        block(buf_.data());
        buffered_ = 0;
    }
    std::memset(buf_.data() + buffered_, 0, 56 - buffered_);
    for (int i = 0; i < 8; ++i) buf_[56 + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    block(buf_.data());
    finished_ = true;
    Sha256Digest out;
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 4; ++j) out[static_cast<size_t>(4 * i + j)] = static_cast<uint8_t>(h_[i] >> (24 - 8 * j));
    return out;
}

Sha256Digest sha256(const void* data, size_t size) {
    Sha256 s;
    s.update(data, size);
    return s.finish();
}

Sha256Digest sha256(std::istream& in) {
    Sha256 s;
    std::vector<char> chunk(size_t{1} << 16);
    while (in) {
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        s.update(chunk.data(), static_cast<size_t>(in.gcount()));
    }
    if (!in.eof()) throw Error("sha256: the stream failed before its end");
    return s.finish();
}

std::string to_hex(const Sha256Digest& digest) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    s.reserve(64);
    for (uint8_t b : digest) {
        s += digits[b >> 4];
        s += digits[b & 15];
    }
    return s;
}

std::string sha256_hex(const void* data, size_t size) { return to_hex(sha256(data, size)); }

bool digest_matches_hex(const Sha256Digest& digest, std::string_view hex) {
    if (hex.size() != 64) return false;
    for (size_t i = 0; i < 32; ++i) {
        const int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0 || digest[i] != static_cast<uint8_t>(hi << 4 | lo)) return false;
    }
    return true;
}

}  // namespace mnemo
