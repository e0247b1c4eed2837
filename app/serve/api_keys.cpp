#include "serve/api_keys.hpp"

#include <filesystem>

#include "app/token_hash.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/atomic_file.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::serve {

namespace {

// Regular files only, size-capped: a FIFO given as the key file must not hang the start.
std::string read_key_file(const std::string& path) {
    try {
        return read_file_capped(path, kMaxSmallFileBytes, "API key file");
    } catch (const std::exception& e) {
        throw Error("API key file '" + printable(path) + "': cannot be read: " + printable(e.what()));
    }
}

}  // namespace

ApiKeys ApiKeys::parse(std::string_view text, const std::string& where) {
    ApiKeys keys;
    for (size_t n = 1; !text.empty(); ++n) {
        const size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const std::vector<std::string_view> f = app::token_line_fields(line);
        if (f.empty() || f[0][0] == '#') continue;
        const std::string at = where + ", line " + std::to_string(n) + ": ";
        if (f.size() != 2) throw Error(at + "expected 'NAME sha256:HEX', got " + std::to_string(f.size()) + " fields");
        Entry e;
        e.name = std::string(f[0]);
        if (!app::valid_token_name(e.name)) throw Error(at + "name '" + printable(e.name, 80) + "' is not 1-64 of [A-Za-z0-9._-]");
        for (const Entry& other : keys.entries_)
            if (other.name == e.name) throw Error(at + "name '" + e.name + "' is used twice");
        if (!app::parse_token_hash(f[1], &e.digest)) throw Error(at + "hash is not 'sha256:' followed by 64 hex digits");
        keys.entries_.push_back(std::move(e));
    }
    if (keys.entries_.empty()) throw Error(where + " holds no key (lines 'NAME sha256:HEX'): every request would be refused");
    return keys;
}

ApiKeys ApiKeys::load(const std::string& path) { return parse(read_key_file(path), "API key file '" + printable(path) + "'"); }

std::string ApiKeys::find(std::string_view key) const {
    const app::TokenDigest d = app::token_digest(key);
    const Entry* found = nullptr;
    // No early exit: the loop's length does not depend on where (or whether) a match is.
    for (const Entry& e : entries_)
        if (app::same_digest(d, e.digest)) found = &e;
    return found ? found->name : std::string();
}

bool ApiKeys::has_name(std::string_view name) const {
    for (const Entry& e : entries_)
        if (e.name == name) return true;
    return false;
}

NewApiKey new_api_key(const std::string& name) {
    if (!app::valid_token_name(name)) throw Error("API key name '" + printable(name) + "' is not 1-64 of [A-Za-z0-9._-]");
    NewApiKey k;
    try {
        k.key = app::generate_token("mnemo_");
    } catch (const std::exception& e) {
        throw Error(std::string("making an API key: ") + e.what());
    }
    k.line = name + " " + app::token_hash_field(k.key) + "\n";
    return k;
}

void append_api_key(const std::string& path, const NewApiKey& key, const std::string& name) {
    const std::string where = "API key file '" + printable(path) + "'";
    std::error_code ec;
    std::string text;
    if (std::filesystem::exists(path, ec)) {
        text = read_key_file(path);
        // A file that does not parse is not added to.
        if (ApiKeys::parse(text, where).has_name(name)) throw Error(where + " already has a key named '" + name + "'");
        if (!text.empty() && text.back() != '\n') text += '\n';
    } else {
        text = "# mnemo serve API keys: NAME sha256:HEX (the keys themselves are never stored)\n";
    }
    text += key.line;
    try {
        write_file_atomically(path, text, 0600);  // temporary file, fsync, rename: never half written
    } catch (const std::exception& e) {
        throw Error(where + ": writing the new key failed: " + e.what());
    }
}

}  // namespace mnemo::serve
