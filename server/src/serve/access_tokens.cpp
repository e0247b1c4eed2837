#include "access_tokens.hpp"

#include <filesystem>

#include "mnemo/error.hpp"
#include "mnemo/io/atomic_file.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::kb {
namespace {

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

const char* scope_name(TokenScope scope) {
    switch (scope) {
        case TokenScope::Admin: return "admin";
        case TokenScope::Shard: return "shard";
        default: return "read";
    }
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
        const std::vector<std::string_view> f = app::token_line_fields(line);
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
        } else if (f[1] == "shard") {
            e->scope = TokenScope::Shard;
        } else {
            throw Error(at + "scope '" + printable(f[1], 80) + "' is not 'read', 'admin' or 'shard'");
        }
        if (!app::parse_token_hash(f[2], &e->digest)) throw Error(at + "hash is not 'sha256:' followed by 64 hex digits");
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
        if (app::same_digest(d, e->digest)) found = e.get();
    return found;
}

std::string generate_token() {
    try {
        return app::generate_token("mkb_");
    } catch (const std::exception& e) {
        throw Error(std::string("generating a token: ") + e.what());
    }
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
    t.new_text += name + " " + scope_name(scope) + " " + app::token_hash_field(t.token) + "\n";
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
