#include "app/token_hash.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <stdexcept>

namespace mnemo::app {

namespace {

constexpr std::string_view kHashPrefix = "sha256:";

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

TokenDigest token_digest(std::string_view token) {
    TokenDigest d;
    SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), d.data());
    return d;
}

std::string token_hash_field(std::string_view token) {
    static const char* kHex = "0123456789abcdef";
    std::string out(kHashPrefix);
    for (uint8_t b : token_digest(token)) {
        out += kHex[b >> 4];
        out += kHex[b & 15];
    }
    return out;
}

bool parse_token_hash(std::string_view field, TokenDigest* out) {
    if (field.substr(0, kHashPrefix.size()) != kHashPrefix) return false;
    field.remove_prefix(kHashPrefix.size());
    if (field.size() != 64) return false;
    for (size_t i = 0; i < 32; ++i) {
        const int hi = hex_value(field[2 * i]), lo = hex_value(field[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        (*out)[i] = static_cast<uint8_t>(hi * 16 + lo);
    }
    return true;
}

bool same_digest(const TokenDigest& a, const TokenDigest& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

bool valid_token_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            return false;
    return true;
}

std::vector<std::string_view> token_line_fields(std::string_view line) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        size_t j = i;
        while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
        if (j > i) out.push_back(line.substr(i, j - i));
        i = j;
    }
    return out;
}

std::string generate_token(std::string_view prefix) {
    unsigned char raw[32];
    if (RAND_bytes(raw, sizeof raw) != 1) throw std::runtime_error("OpenSSL RAND_bytes failed");
    static const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out(prefix);
    uint32_t acc = 0;
    int bits = 0;
    for (unsigned char b : raw) {
        acc = (acc << 8) | b;
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out += kB64[(acc >> bits) & 63];
        }
    }
    if (bits > 0) out += kB64[(acc << (6 - bits)) & 63];
    return out;
}

}  // namespace mnemo::app
