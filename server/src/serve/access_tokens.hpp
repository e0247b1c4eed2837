// Bearer tokens of `mnemo-kb serve` (docs/kb-protocol.md, "Authentication"). The token file holds
// one line per token, never the token itself:
//     NAME SCOPE sha256:HEX
// NAME names the client in logs and limits ([A-Za-z0-9._-], unique), SCOPE is `read`, `admin`
// (admin may also Reload) or `shard` (the token one node of a sharded index asks the others with:
// shard requests, Info and Health only, and not held to max_streams_per_client, since the asking
// node's own clients are), HEX the SHA-256 of the token's text. Blank lines and lines starting
// with '#' are ignored. A stolen file therefore grants nothing; a lost token is replaced by a new
// line, a revoked one by deleting its line (and restarting or reloading the server).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "app/token_hash.hpp"

namespace mnemo::kb {

enum class TokenScope { Read, Admin, Shard };

const char* scope_name(TokenScope scope);

// The digest, SHA-256 and name rules every hashed-token file of Mnemo shares (app/token_hash.hpp).
using app::TokenDigest;
using app::token_digest;
using app::valid_token_name;

// Read calls: every scope (a shard token's are narrowed further by the service to Info, Health and
// shard requests); admin calls: admin only; shard requests: shard or admin.
inline bool scope_allows(TokenScope scope, TokenScope needed) {
    return needed == TokenScope::Read || scope == TokenScope::Admin || (needed == TokenScope::Shard && scope == TokenScope::Shard);
}

// One client: its name and scope, and the calls it has in flight now (the per-client limit; an
// atomic so the read path needs no lock).
struct TokenEntry {
    std::string name;
    TokenScope scope = TokenScope::Read;
    TokenDigest digest{};
    mutable std::atomic<uint32_t> in_flight{0};

    bool allows(TokenScope needed) const { return scope_allows(scope, needed); }
};

// The clients a server accepts. Immutable once loaded (the counters aside), shared by every call.
class TokenTable {
public:
    // Parses a token file's text; `where` ("tokens file 'F'") prefixes every error, which names
    // the line and the field. Throws mnemo::Error.
    static std::shared_ptr<const TokenTable> parse(std::string_view text, const std::string& where);
    static std::shared_ptr<const TokenTable> load(const std::string& path);
    // The one client of a server started with --no-auth: every call is allowed, as "anonymous".
    static std::shared_ptr<const TokenTable> anonymous();

    // The entry whose digest is the token's, or nullptr. Every entry is compared, each in constant
    // time (CRYPTO_memcmp), so the time taken says nothing about which bytes matched.
    const TokenEntry* find(std::string_view token) const;
    bool is_anonymous() const { return anonymous_; }
    size_t size() const { return entries_.size(); }
    const TokenEntry& entry(size_t i) const { return *entries_[i]; }

private:
    std::vector<std::unique_ptr<TokenEntry>> entries_;
    bool anonymous_ = false;
};

// A fresh token: "mkb_" + 32 random bytes (OpenSSL RAND_bytes) in base64url, 47 characters.
std::string generate_token();

// `mnemo-kb token new` in two steps, so that the token is shown before it is stored: a token
// that was never printed (stdout on a full disk, a closed pipe) must not become valid.
// prepare_token reads and checks the file (refuses a bad or duplicate name and a file that does
// not parse) and draws the token; commit_token adds "NAME SCOPE sha256:HEX" to the file (created
// with mode 0600 when missing) by an atomic rewrite (temporary file, fsync, rename, fsync of the
// folder), and refuses when the file changed since prepare_token read it.
struct PreparedToken {
    std::string path;
    std::string token;
    bool existed = false;     // the file existed when it was read
    std::string read_text;    // ... with this content
    std::string new_text;     // what commit_token writes
};
PreparedToken prepare_token(const std::string& path, const std::string& name, TokenScope scope);
void commit_token(const PreparedToken& t);
// Both steps at once; returns the token.
std::string add_token(const std::string& path, const std::string& name, TokenScope scope);

}  // namespace mnemo::kb
