// Secrets that are stored only as their hash: the access tokens of `mnemo-kb serve` and the API
// keys of `mnemo serve`. Both files hold "sha256:HEX" for each token (never the token), name each
// client with [A-Za-z0-9._-], and compare a presented token by its digest in constant time.
// OpenSSL's libcrypto does the hashing and the random draw. This library (mnemo_token_hash) links
// nothing of Mnemo's, so the engine-static test program and the shared-engine programs can both
// use it; errors are std::runtime_error, for the callers to put in context.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mnemo::app {

using TokenDigest = std::array<uint8_t, 32>;

// SHA-256 of a token's text.
TokenDigest token_digest(std::string_view token);
// "sha256:" + the lowercase hex of the token's digest: what a token file stores.
std::string token_hash_field(std::string_view token);
// Reads a "sha256:" + 64 hex digits field; false when it is not one.
bool parse_token_hash(std::string_view field, TokenDigest* out);
// True when the digests are equal, compared in constant time (CRYPTO_memcmp).
bool same_digest(const TokenDigest& a, const TokenDigest& b);
// True when `name` can name a client: 1..64 characters of [A-Za-z0-9._-].
bool valid_token_name(std::string_view name);
// The whitespace-separated fields of one line of a token file.
std::vector<std::string_view> token_line_fields(std::string_view line);
// A fresh token: `prefix` + 32 random bytes (RAND_bytes) in base64url, 43 characters.
std::string generate_token(std::string_view prefix);

}  // namespace mnemo::app
