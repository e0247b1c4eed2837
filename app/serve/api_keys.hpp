// The API keys `mnemo serve --api-key-file F` accepts (as Authorization: Bearer KEY). The file
// holds one line per key, never the key itself, as mnemo-kb's token file does (the hashing, name
// rule and constant-time comparison are the ones it uses: app/token_hash.hpp):
//     NAME sha256:HEX
// NAME names the client ([A-Za-z0-9._-], unique), HEX is the SHA-256 of the key's text. Blank
// lines and lines starting with '#' are ignored. `mnemo serve --new-api-key NAME --api-key-file F`
// makes a key, stores its line and prints it once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "app/token_hash.hpp"

namespace mnemo::serve {

class ApiKeys {
public:
    // Errors name the file, the line and the field (mnemo::Error).
    static ApiKeys parse(std::string_view text, const std::string& where);
    static ApiKeys load(const std::string& path);

    // The name of the key's client, or empty when no key matches. Every entry is compared in
    // constant time (CRYPTO_memcmp), with no early exit.
    std::string find(std::string_view key) const;
    size_t size() const { return entries_.size(); }
    bool has_name(std::string_view name) const;

private:
    struct Entry {
        std::string name;
        app::TokenDigest digest{};
    };
    std::vector<Entry> entries_;
};

// A new random key ("mnemo_" + 43 base64url characters of 32 random bytes) and the line to store.
struct NewApiKey {
    std::string key;
    std::string line;  // "NAME sha256:HEX\n"
};
NewApiKey new_api_key(const std::string& name);

// Adds the new key's line to the file (created with mode 0600 when missing) by an atomic rewrite;
// refuses a name the file already has and a file that does not parse. Throws mnemo::Error naming
// the file.
void append_api_key(const std::string& path, const NewApiKey& key, const std::string& name);

}  // namespace mnemo::serve
