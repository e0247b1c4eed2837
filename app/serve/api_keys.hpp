// The API keys `mnemo serve --api-key-file F` accepts (as Authorization: Bearer KEY). The file
// holds one line per key, never the key itself, as mnemo-kb's token file does:
//     NAME sha256:HEX
// NAME names the client ([A-Za-z0-9._-], unique), HEX is the SHA-256 of the key's text. Blank
// lines and lines starting with '#' are ignored. `mnemo serve --new-api-key NAME --api-key-file F`
// makes a key, prints it once and appends its line.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

private:
    struct Entry {
        std::string name;
        std::array<uint8_t, 32> digest{};
    };
    std::vector<Entry> entries_;
};

// A new random key ("mnemo_" + 43 base64url characters of 32 random bytes) and the line to store.
struct NewApiKey {
    std::string key;
    std::string line;  // "NAME sha256:HEX\n"
};
NewApiKey new_api_key(const std::string& name);

// Appends the new key's line to the file (created with mode 0600 when missing); refuses a name
// the file already has. Throws mnemo::Error naming the file.
void append_api_key(const std::string& path, const NewApiKey& key, const std::string& name);

}  // namespace mnemo::serve
