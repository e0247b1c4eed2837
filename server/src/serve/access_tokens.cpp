#include "access_tokens.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <filesystem>

#include "bank/sha256_hex.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/atomic_file.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::kb {
namespace {

constexpr std::string_view kHashPrefix = "sha256:";

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool parse_digest(std::string_view text, TokenDigest* out) {
    if (text.substr(0, kHashPrefix.size()) != kHashPrefix) return false;
    text.remove_prefix(kHashPrefix.size());
    if (text.size() != 64) return false;
    for (size_t i = 0; i < 32; ++i) {
        const int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        (*out)[i] = static_cast<uint8_t>(hi * 16 + lo);
    }
    return true;
}

std::vector<std::string_view> fields_of(std::string_view line) {
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

// Regular files only, size-capped (mnemo/io/file_read.hpp): a FIFO named as the token file must
// not hang the server's start.
std::string read_file(const std::string& path) {
    try {
        return read_file_capped(path, kMaxSmallFileBytes, "tokens file");
    } catch (const std::exception& e) {
        throw Error("tokens file '" + printable(path) + "': cannot be read: " + printable(e.what()));
    }
}

}  // namespace

const char* scope_name(TokenScope scope) { return scope == TokenScope::Admin ? "admin" : "read"; }

TokenDigest token_digest(std::string_view token) {
    TokenDigest d;
    SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), d.data());
    return d;
}

bool valid_token_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            return false;
    return true;
}

std::shared_ptr<const TokenTable> TokenTable::parse(std::string_view text, const std::string& where) {
    auto table = std::make_shared<TokenTable>();
    size_t line_no = 0;
    while (!text.empty()) {
        const size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const std::vector<std::string_view> f = fields_of(line);
        if (f.empty() || f[0][0] == '#') continue;
        const std::string at = where + ": line " + std::to_string(line_no) + ": ";
        if (f.size() != 3) throw Error(at + "expected 'NAME SCOPE sha256:HEX', got " + std::to_string(f.size()) + " fields");
        auto e = std::make_unique<TokenEntry>();
        e->name = std::string(f[0]);
        if (!valid_token_name(e->name)) throw Error(at + "name '" + printable(e->name, 80) + "' is not 1..64 characters of [A-Za-z0-9._-]");
        for (const auto& other : table->entries_)
            if (other->name == e->name) throw Error(at + "name '" + e->name + "' appears twice");
        if (f[1] == "read") {
            e->scope = TokenScope::Read;
        } else if (f[1] == "admin") {
            e->scope = TokenScope::Admin;
        } else {
            throw Error(at + "scope '" + printable(f[1], 80) + "' is neither 'read' nor 'admin'");
        }
        if (!parse_digest(f[2], &e->digest)) throw Error(at + "hash is not 'sha256:' followed by 64 hex digits");
        table->entries_.push_back(std::move(e));
    }
    return table;
}

std::shared_ptr<const TokenTable> TokenTable::load(const std::string& path) {
    return parse(read_file(path), "tokens file '" + printable(path) + "'");
}

std::shared_ptr<const TokenTable> TokenTable::anonymous() {
    auto table = std::make_shared<TokenTable>();
    auto e = std::make_unique<TokenEntry>();
    e->name = "anonymous";
    e->scope = TokenScope::Admin;
    table->entries_.push_back(std::move(e));
    table->anonymous_ = true;
    return table;
}

const TokenEntry* TokenTable::find(std::string_view token) const {
    if (anonymous_) return entries_.front().get();
    const TokenDigest d = token_digest(token);
    const TokenEntry* found = nullptr;
    // No early exit: the loop's length does not depend on where (or whether) a match is.
    for (const auto& e : entries_)
        if (CRYPTO_memcmp(d.data(), e->digest.data(), d.size()) == 0) found = e.get();
    return found;
}

std::string generate_token() {
    unsigned char raw[32];
    if (RAND_bytes(raw, sizeof raw) != 1) throw Error("generating a token: OpenSSL RAND_bytes failed");
    static const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out = "mkb_";
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

PreparedToken prepare_token(const std::string& path, const std::string& name, TokenScope scope) {
    if (!valid_token_name(name)) throw Error("token name '" + printable(name) + "' is not 1..64 characters of [A-Za-z0-9._-]");
    PreparedToken t;
    t.path = path;
    const std::string where = "tokens file '" + printable(path) + "'";
    std::error_code ec;
    t.existed = std::filesystem::exists(path, ec);
    if (t.existed) {
        t.read_text = read_file(path);
        const auto table = TokenTable::parse(t.read_text, where);
        for (size_t i = 0; i < table->size(); ++i)
            if (table->entry(i).name == name) throw Error(where + ": a token named '" + name + "' exists; delete its line first");
        t.new_text = t.read_text;
        if (!t.new_text.empty() && t.new_text.back() != '\n') t.new_text += '\n';
    } else {
        t.new_text = "# mnemo-kb access tokens: NAME SCOPE sha256:HEX (the tokens themselves are never stored)\n";
    }
    t.token = generate_token();
    t.new_text += name + " " + scope_name(scope) + " sha256:" + sha256_hex(t.token) + "\n";
    return t;
}

void commit_token(const PreparedToken& t) {
    // Another `token new` may have rewritten the file meanwhile: writing ours would drop its line.
    std::error_code ec;
    const bool exists = std::filesystem::exists(t.path, ec);
    if (exists != t.existed || (exists && read_file(t.path) != t.read_text))
        throw Error("tokens file '" + printable(t.path) + "' changed while the token was made; nothing was added (run again)");
    write_file_atomically(t.path, t.new_text, 0600);
}

std::string add_token(const std::string& path, const std::string& name, TokenScope scope) {
    const PreparedToken t = prepare_token(path, name, scope);
    commit_token(t);
    return t.token;
}

}  // namespace mnemo::kb
