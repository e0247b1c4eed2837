#include "serve/api_keys.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "mnemo/error.hpp"

namespace mnemo::serve {

namespace {

constexpr std::string_view kPrefix = "sha256:";

bool valid_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            return false;
    return true;
}

std::array<uint8_t, 32> digest_of(std::string_view text) {
    std::array<uint8_t, 32> d{};
    SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), d.data());
    return d;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string hex_of(const std::array<uint8_t, 32>& d) {
    static const char* hex = "0123456789abcdef";
    std::string s;
    for (uint8_t b : d) {
        s += hex[b >> 4];
        s += hex[b & 15];
    }
    return s;
}

}  // namespace

ApiKeys ApiKeys::parse(std::string_view text, const std::string& where) {
    ApiKeys keys;
    std::istringstream in{std::string(text)};
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const size_t first = line.find_first_not_of(" \t");
        if (first == std::string::npos || line[first] == '#') continue;
        std::istringstream fields(line);
        std::vector<std::string> f;
        for (std::string x; fields >> x;) f.push_back(x);
        const std::string at = where + ", line " + std::to_string(n) + ": ";
        if (f.size() != 2) throw Error(at + "expected 'NAME sha256:HEX', got " + std::to_string(f.size()) + " fields");
        if (!valid_name(f[0])) throw Error(at + "name '" + f[0] + "' is not 1-64 of [A-Za-z0-9._-]");
        for (const Entry& e : keys.entries_)
            if (e.name == f[0]) throw Error(at + "name '" + f[0] + "' is used twice");
        Entry e;
        e.name = f[0];
        const std::string& h = f[1];
        if (h.size() != kPrefix.size() + 64 || h.compare(0, kPrefix.size(), kPrefix) != 0)
            throw Error(at + "hash is not 'sha256:' followed by 64 hex digits");
        for (size_t i = 0; i < 32; ++i) {
            const int hi = hex_value(h[kPrefix.size() + 2 * i]), lo = hex_value(h[kPrefix.size() + 2 * i + 1]);
            if (hi < 0 || lo < 0) throw Error(at + "hash is not 'sha256:' followed by 64 hex digits");
            e.digest[i] = static_cast<uint8_t>(hi * 16 + lo);
        }
        keys.entries_.push_back(std::move(e));
    }
    if (keys.entries_.empty()) throw Error(where + " holds no key (lines 'NAME sha256:HEX'): every request would be refused");
    return keys;
}

ApiKeys ApiKeys::load(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("API key file '" + path + "': cannot be read: " + std::strerror(errno));
    std::ostringstream ss;
    ss << f.rdbuf();
    return parse(ss.str(), "API key file '" + path + "'");
}

std::string ApiKeys::find(std::string_view key) const {
    const std::array<uint8_t, 32> d = digest_of(key);
    const Entry* found = nullptr;
    for (const Entry& e : entries_)
        if (CRYPTO_memcmp(d.data(), e.digest.data(), d.size()) == 0) found = &e;
    return found ? found->name : std::string();
}

NewApiKey new_api_key(const std::string& name) {
    if (!valid_name(name)) throw Error("API key name '" + name + "' is not 1-64 of [A-Za-z0-9._-]");
    unsigned char raw[32];
    if (RAND_bytes(raw, sizeof raw) != 1) throw Error("making an API key: OpenSSL RAND_bytes failed");
    static const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    NewApiKey k;
    k.key = "mnemo_";
    uint32_t acc = 0;
    int bits = 0;
    for (unsigned char c : raw) {
        acc = (acc << 8) | c;
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            k.key += kB64[(acc >> bits) & 63];
        }
    }
    if (bits > 0) k.key += kB64[(acc << (6 - bits)) & 63];
    k.line = name + " sha256:" + hex_of(digest_of(k.key)) + "\n";
    return k;
}

void append_api_key(const std::string& path, const NewApiKey& key, const std::string& name) {
    {
        std::ifstream f(path, std::ios::binary);
        if (f) {
            std::ostringstream ss;
            ss << f.rdbuf();
            const std::string text = ss.str();
            std::istringstream in(text);
            for (std::string line; std::getline(in, line);) {
                std::istringstream fields(line);
                std::string first;
                fields >> first;
                if (first == name) throw Error("API key file '" + path + "' already has a key named '" + name + "'");
            }
        }
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) throw Error("API key file '" + path + "': cannot be opened for writing: " + std::strerror(errno));
    const ssize_t n = ::write(fd, key.line.data(), key.line.size());
    const int err = errno;
    const bool synced = ::fsync(fd) == 0;
    ::close(fd);
    if (n != static_cast<ssize_t>(key.line.size()) || !synced)
        throw Error("API key file '" + path + "': writing the new line failed: " + std::strerror(err));
}

}  // namespace mnemo::serve
