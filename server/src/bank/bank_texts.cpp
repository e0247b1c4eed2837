#include "bank_texts.hpp"

#include <string_view>

#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::kb {
namespace {

std::vector<int32_t> token_list(const json::Value& v, const char* key, const std::string& where) {
    if (!v.is_array()) throw Error(where + ": '" + key + "' must be an array of integers");
    std::vector<int32_t> out;
    out.reserve(v.as_array().size());
    for (const json::Value& t : v.as_array()) {
        if (!t.is_integer() || t.as_int() < 0 || t.as_int() > INT32_MAX) throw Error(where + ": '" + key + "' holds a non-token value");
        out.push_back(static_cast<int32_t>(t.as_int()));
    }
    return out;
}

std::string text_field(const json::Value& line, const char* key, const std::string& where) {
    const json::Value* v = line.find(key);
    if (!v) throw Error(where + ": missing '" + key + "'");
    if (!v->is_string()) throw Error(where + ": '" + key + "' must be a string");
    return v->as_string();
}

// A line's "doc_version": the version that added its document's text, 0 when unknown; never
// later than the version read.
uint64_t doc_version(const json::Value& line, uint64_t fallback, uint64_t manifest_version, const std::string& where) {
    const json::Value* v = line.find("doc_version");
    if (!v) return fallback <= manifest_version ? fallback : 0;
    if (!v->is_integer() || v->as_int() < 0 || static_cast<uint64_t>(v->as_int()) > manifest_version)
        throw Error(where + ": 'doc_version' must be an integer in [0, " + std::to_string(manifest_version) + "] (the manifest's version)");
    return static_cast<uint64_t>(v->as_int());
}

}  // namespace

void read_segment_references(const BankStorage& st, const SegmentEntry& s, uint64_t manifest_version, std::vector<BankReference>& out) {
    const std::string bytes = read_checked_blob(st, s.texts, "texts");
    const std::string where = st.describe() + ": texts '" + printable(s.texts.file) + "'";
    // Lines written before documents had versions carry none: the segment's own name says
    // which version wrote it (every build and add names its segments so).
    const uint64_t segment_version = version_in_segment_name(s.records.file, "seg");
    size_t pos = 0;
    uint32_t id = s.first_id;
    while (pos < bytes.size()) {
        size_t end = bytes.find('\n', pos);
        if (end == std::string::npos) end = bytes.size();
        const std::string_view line(bytes.data() + pos, end - pos);
        pos = end + 1;
        if (line.empty()) continue;
        const std::string lw = where + ": line " + std::to_string(id - s.first_id + 1);
        if (id >= s.first_id + s.count) throw Error(where + ": more than the segment's " + std::to_string(s.count) + " lines");
        const json::Value v = json::parse(line, lw);
        if (!v.is_object()) throw Error(lw + ": expected a JSON object");
        const json::Value* jid = v.find("id");
        if (!jid || !jid->is_integer() || jid->as_int() != id) throw Error(lw + ": 'id' must be " + std::to_string(id));
        BankReference r;
        r.text = text_field(v, "text", lw);
        r.title = text_field(v, "title", lw);
        r.source = text_field(v, "source", lw);
        r.doc_id = text_field(v, "doc_id", lw);
        r.doc_version = doc_version(v, segment_version, manifest_version, lw);
        const json::Value* tokens = v.find("tokens");
        if (!tokens) throw Error(lw + ": missing 'tokens'");
        r.tokens = token_list(*tokens, "tokens", lw);
        if (const json::Value* title = v.find("title_tokens")) r.title_tokens = token_list(*title, "title_tokens", lw);
        out.push_back(std::move(r));
        ++id;
    }
    if (id != s.first_id + s.count)
        throw Error(where + ": " + std::to_string(id - s.first_id) + " references, the segment holds " + std::to_string(s.count));
}

}  // namespace mnemo::kb
