#include "bank_format.hpp"

#include <cmath>
#include <cstring>
#include <ctime>

#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/io/printable.hpp"
#include "bank_storage.hpp"
#include "sha256_hex.hpp"

namespace mnemo::kb {
namespace {

using json::Value;

Value num(int64_t x) { return Value::make_number(static_cast<double>(x), true, x); }
Value str(const std::string& s) { return Value::make_string(s); }

Value blob_json(const BlobRef& b) {
    return Value::make_object({{"file", str(b.file)}, {"sha256", str(b.sha256)}, {"bytes", num(static_cast<int64_t>(b.bytes))}});
}

const Value& member(const Value& obj, const char* key, const std::string& where) {
    if (!obj.is_object()) throw Error(where + ": expected an object");
    const Value* v = obj.find(key);
    if (!v) throw Error(where + ": missing '" + key + "'");
    return *v;
}

uint64_t uint_member(const Value& obj, const char* key, const std::string& where, uint64_t max) {
    const Value& v = member(obj, key, where);
    if (!v.is_integer() || v.as_int() < 0 || static_cast<uint64_t>(v.as_int()) > max)
        throw Error(where + ": '" + key + "' must be an integer in [0, " + std::to_string(max) + "]");
    return static_cast<uint64_t>(v.as_int());
}

std::string string_member(const Value& obj, const char* key, const std::string& where) {
    const Value& v = member(obj, key, where);
    if (!v.is_string()) throw Error(where + ": '" + key + "' must be a string");
    return v.as_string();
}

// A relative error: a finite number >= 0.
double error_member(const Value& obj, const char* key, const std::string& where) {
    const Value& v = member(obj, key, where);
    if (!v.is_number() || !std::isfinite(v.as_double()) || v.as_double() < 0)
        throw Error(where + ": '" + key + "' must be a finite number >= 0 (a relative squared error)");
    return v.as_double();
}

CodecFitFigures codec_fit_from_json(const Value& v, const std::string& where) {
    CodecFitFigures f;
    f.keys = error_member(v, "keys", where);
    f.values = error_member(v, "values", where);
    f.records = uint_member(v, "records", where, 0xffffffffu);
    return f;
}

bool is_sha256(const std::string& s) {
    if (s.size() != 64) return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

// Flat blob names only: a manifest must not point outside the bank.
bool is_flat_name(const std::string& s) {
    return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos && s.find('\0') == std::string::npos;
}

BlobRef blob_from_json(const Value& obj, const char* key, const std::string& where) {
    const std::string w = where + ": " + key;
    const Value& v = member(obj, key, where);
    BlobRef b;
    b.file = string_member(v, "file", w);
    if (!is_flat_name(b.file)) throw Error(w + ": file '" + printable(b.file, 200) + "' is not a flat blob name");
    b.sha256 = string_member(v, "sha256", w);
    if (!is_sha256(b.sha256)) throw Error(w + ": sha256 must be 64 lowercase hex digits");
    b.bytes = uint_member(v, "bytes", w, uint64_t{1} << 60);
    return b;
}

// "retired": [[first_id, count], ...]: sorted, disjoint and not touching (the writer merges
// neighbours, so one form per set of ids), each inside [0, count) with a positive count.
std::vector<IdRange> retired_from_json(const Value& v, uint64_t count, const std::string& where) {
    if (!v.is_array()) throw Error(where + ": expected an array of [first_id, count] pairs");
    std::vector<IdRange> out;
    uint64_t end_of_last = 0;
    for (size_t i = 0; i < v.as_array().size(); ++i) {
        const Value& r = v.as_array()[i];
        const std::string w = where + "[" + std::to_string(i) + "]";
        if (!r.is_array() || r.as_array().size() != 2 || !r.as_array()[0].is_integer() || !r.as_array()[1].is_integer())
            throw Error(w + ": expected [first_id, count], two integers");
        const int64_t first = r.as_array()[0].as_int(), n = r.as_array()[1].as_int();
        if (first < 0 || n < 1 || static_cast<uint64_t>(first) + static_cast<uint64_t>(n) > count)
            throw Error(w + ": [" + std::to_string(first) + ", " + std::to_string(n) + "] is not a non-empty range of ids in [0, " +
                        std::to_string(count) + ")");
        if (i > 0 && static_cast<uint64_t>(first) <= end_of_last)
            throw Error(w + ": starts at " + std::to_string(first) + ", not after the previous range's end " + std::to_string(end_of_last) +
                        " (ranges are sorted, disjoint and merged)");
        out.push_back({static_cast<uint32_t>(first), static_cast<uint32_t>(n)});
        end_of_last = static_cast<uint64_t>(first) + static_cast<uint64_t>(n);
    }
    return out;
}

void put_u32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t get_u32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
           static_cast<uint32_t>(p[3]) << 24;
}

Value index_json(const BankIndexEntry& x) {
    std::vector<std::pair<std::string, Value>> vec = {{"kind", str(x.vectors_kind)}, {"count", num(static_cast<int64_t>(x.vectors_count))}};
    if (x.vectors_kind == kIndexIvfFlat) {
        vec.emplace_back("lists", num(x.lists));
        vec.emplace_back("file", str(x.vectors.file));
        vec.emplace_back("sha256", str(x.vectors.sha256));
        vec.emplace_back("bytes", num(static_cast<int64_t>(x.vectors.bytes)));
    }
    return Value::make_object({{"vectors", Value::make_object(std::move(vec))}, {"bm25", blob_json(x.bm25)}});
}

// "index" (BankIndexEntry) of a version of `count` records.
BankIndexEntry index_from_json(const Value& v, uint64_t count, const std::string& where) {
    BankIndexEntry x;
    const Value& vec = member(v, "vectors", where);
    const std::string w = where + ": vectors";
    x.vectors_kind = string_member(vec, "kind", w);
    // At most the records; Bank::open checks it is the live ones and the stored index holds them.
    x.vectors_count = uint_member(vec, "count", w, count);
    if (x.vectors_kind == kIndexIvfFlat) {
        x.lists = static_cast<uint32_t>(uint_member(vec, "lists", w, 1u << 24));
        if (x.lists == 0) throw Error(w + ": lists must be positive");
        x.vectors = blob_from_json(v, "vectors", where);
    } else if (x.vectors_kind != kIndexFlat) {
        throw Error(w + ": kind \"" + printable(x.vectors_kind, 80) + "\" is not one this build reads (\"" + kIndexFlat + "\", \"" + kIndexIvfFlat +
                    "\")");
    }
    x.bm25 = blob_from_json(v, "bm25", where);
    return x;
}

}  // namespace

std::string index_blob_name(const char* kind, uint64_t version, const char* ext) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s-%06llu.%s", kind, static_cast<unsigned long long>(version), ext);
    return buf;
}

std::vector<NamedBlob> manifest_blobs(const BankManifest& m) {
    std::vector<NamedBlob> out = {{"keys codebook", m.keys_codebook}, {"values codebook", m.values_codebook}};
    for (const SegmentEntry& s : m.segments) {
        out.push_back({"segment", s.records, &s});
        out.push_back({"texts", s.texts});
        out.push_back({"vectors", s.vectors});
    }
    for (const TokenizerFile& t : m.tokenizer) out.push_back({"tokenizer file", t.blob});
    if (m.index) {
        // A flat vector index is the vectors blobs themselves; an IVF one is a blob of its own.
        if (m.index->vectors_kind == kIndexIvfFlat) out.push_back({"vector index", m.index->vectors});
        out.push_back({"bm25 index", m.index->bm25});
    }
    return out;
}

std::string manifest_name(uint64_t version) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "manifest-%06llu.json", static_cast<unsigned long long>(version));
    return buf;
}

std::string segment_blob_name(const char* kind, uint64_t version, size_t n, const char* ext) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s-%06llu-%04zu.%s", kind, static_cast<unsigned long long>(version), n, ext);
    return buf;
}

uint64_t version_in_segment_name(const std::string& file, const char* kind) {
    const std::string prefix = std::string(kind) + "-";
    if (file.compare(0, prefix.size(), prefix) != 0) return 0;
    const size_t dash = file.find('-', prefix.size());
    const std::string digits = file.substr(prefix.size(), dash == std::string::npos ? 0 : dash - prefix.size());
    if (digits.size() < 6 || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
    return std::stoull(digits);
}

std::string current_pointer_content(uint64_t version) { return manifest_name(version) + "\n"; }

uint64_t parse_current_pointer(std::string_view content, const std::string& where) {
    std::string s(content);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    const std::string prefix = "manifest-", suffix = ".json";
    if (s.size() <= prefix.size() + suffix.size() || s.compare(0, prefix.size(), prefix) != 0 ||
        s.compare(s.size() - suffix.size(), suffix.size(), suffix) != 0)
        throw Error(where + ": expected \"manifest-<version>.json\", found \"" + printable(s, 80) + "\"");
    const std::string digits = s.substr(prefix.size(), s.size() - prefix.size() - suffix.size());
    if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
        throw Error(where + ": the version in \"" + printable(s, 80) + "\" is not a number");
    const uint64_t v = std::stoull(digits);
    if (v == 0 || manifest_name(v) != s) throw Error(where + ": \"" + printable(s, 80) + "\" is not a manifest name this format writes");
    return v;
}

std::string manifest_to_json(const BankManifest& m) {
    std::vector<Value> segs;
    for (const SegmentEntry& s : m.segments)
        segs.push_back(Value::make_object({{"file", str(s.records.file)},
                                           {"sha256", str(s.records.sha256)},
                                           {"bytes", num(static_cast<int64_t>(s.records.bytes))},
                                           {"first_id", num(s.first_id)},
                                           {"count", num(s.count)},
                                           {"texts", blob_json(s.texts)},
                                           {"vectors", blob_json(s.vectors)}}));
    std::vector<Value> tok;
    for (const TokenizerFile& t : m.tokenizer)
        tok.push_back(Value::make_object({{"name", str(t.name)},
                                          {"file", str(t.blob.file)},
                                          {"sha256", str(t.blob.sha256)},
                                          {"bytes", num(static_cast<int64_t>(t.blob.bytes))}}));
    auto codec_side = [](const BlobRef& b, const std::string& factory) {
        return Value::make_object({{"file", str(b.file)},
                                   {"sha256", str(b.sha256)},
                                   {"bytes", num(static_cast<int64_t>(b.bytes))},
                                   {"factory", str(factory)}});
    };
    std::vector<std::pair<std::string, Value>> codec = {{"keys", codec_side(m.keys_codebook, m.key_factory)},
                                                        {"values", codec_side(m.values_codebook, m.value_factory)}};
    if (m.codec_fit)
        codec.emplace_back("fit", Value::make_object({{"keys", Value::make_number(m.codec_fit->keys, false, 0)},
                                                      {"values", Value::make_number(m.codec_fit->values, false, 0)},
                                                      {"records", num(static_cast<int64_t>(m.codec_fit->records))}}));
    std::vector<std::pair<std::string, Value>> fields = {{"format", str(kBankFormat)},
                                        {"format_version", num(m.retired.empty() ? kBankFormatVersion : kBankFormatRetired)},
                                        {"version", num(static_cast<int64_t>(m.version))},
                                        {"created", str(m.created)},
                                        {"model", memory_model_to_json(m.model)},
                                        {"codec", Value::make_object(std::move(codec))},
                                        {"record_bytes", num(static_cast<int64_t>(m.record_bytes))},
                                        {"count", num(static_cast<int64_t>(m.count))},
                                        {"segments", Value::make_array(std::move(segs))},
                                        {"tokenizer", Value::make_array(std::move(tok))}};
    if (!m.retired.empty()) {
        std::vector<Value> ranges;
        for (const IdRange& r : m.retired) ranges.push_back(Value::make_array({num(r.first), num(r.count)}));
        fields.emplace_back("retired", Value::make_array(std::move(ranges)));
    }
    if (m.index) fields.emplace_back("index", index_json(*m.index));
    return Value::make_object(std::move(fields)).dump() + "\n";
}

BankManifest manifest_from_json(std::string_view text, const std::string& where) {
    const Value v = json::parse(text, where);
    if (!v.is_object()) throw Error(where + ": expected a JSON object");
    const std::string format = string_member(v, "format", where);
    if (format != kBankFormat) throw Error(where + ": format is \"" + printable(format, 80) + "\", expected \"" + kBankFormat + "\"");
    const uint64_t fv = uint_member(v, "format_version", where, 1u << 30);
    if (fv != kBankFormatVersion && fv != kBankFormatRetired)
        throw Error(where + ": format_version " + std::to_string(fv) + " is not supported (this build reads " +
                    std::to_string(kBankFormatVersion) + " and " + std::to_string(kBankFormatRetired) + ")");
    BankManifest m;
    m.version = uint_member(v, "version", where, uint64_t{1} << 59);
    if (m.version == 0) throw Error(where + ": version must be >= 1");
    m.created = string_member(v, "created", where);
    m.model = memory_model_from_json(member(v, "model", where), where + ": model");
    const Value& codec = member(v, "codec", where);
    m.keys_codebook = blob_from_json(codec, "keys", where + ": codec");
    m.values_codebook = blob_from_json(codec, "values", where + ": codec");
    m.key_factory = string_member(member(codec, "keys", where + ": codec"), "factory", where + ": codec: keys");
    m.value_factory = string_member(member(codec, "values", where + ": codec"), "factory", where + ": codec: values");
    if (codec.find("fit")) m.codec_fit = codec_fit_from_json(member(codec, "fit", where + ": codec"), where + ": codec: fit");
    m.record_bytes = uint_member(v, "record_bytes", where, uint64_t{1} << 40);
    if (m.record_bytes == 0) throw Error(where + ": record_bytes must be positive");
    m.count = uint_member(v, "count", where, 0xffffffffu);
    const Value& segs = member(v, "segments", where);
    if (!segs.is_array()) throw Error(where + ": 'segments' must be an array");
    uint64_t next = 0;
    for (size_t i = 0; i < segs.as_array().size(); ++i) {
        const Value& s = segs.as_array()[i];
        const std::string w = where + ": segments[" + std::to_string(i) + "]";
        SegmentEntry e;
        e.records.file = string_member(s, "file", w);
        if (!is_flat_name(e.records.file)) throw Error(w + ": file '" + printable(e.records.file, 200) + "' is not a flat blob name");
        e.records.sha256 = string_member(s, "sha256", w);
        if (!is_sha256(e.records.sha256)) throw Error(w + ": sha256 must be 64 lowercase hex digits");
        e.records.bytes = uint_member(s, "bytes", w, uint64_t{1} << 60);
        e.first_id = static_cast<uint32_t>(uint_member(s, "first_id", w, 0xffffffffu));
        e.count = static_cast<uint32_t>(uint_member(s, "count", w, 0xffffffffu));
        if (e.first_id != next)
            throw Error(w + ": first_id " + std::to_string(e.first_id) + ", expected " + std::to_string(next) +
                        " (segments hold consecutive ids from 0)");
        if (e.count == 0) throw Error(w + ": count must be positive");
        if (e.records.bytes != kSegmentHeaderBytes + uint64_t{e.count} * m.record_bytes)
            throw Error(w + ": bytes " + std::to_string(e.records.bytes) + ", expected " +
                        std::to_string(kSegmentHeaderBytes + uint64_t{e.count} * m.record_bytes) + " (header + count x record_bytes)");
        e.texts = blob_from_json(s, "texts", w);
        e.vectors = blob_from_json(s, "vectors", w);
        const uint64_t vbytes = uint64_t{e.count} * static_cast<uint64_t>(m.model.spec.retrieval_dim) * 4;
        if (e.vectors.bytes != vbytes)
            throw Error(w + ": vectors: bytes " + std::to_string(e.vectors.bytes) + ", expected " + std::to_string(vbytes) +
                        " (count x retrieval_dim x 4)");
        next += e.count;
        m.segments.push_back(std::move(e));
    }
    if (next != m.count)
        throw Error(where + ": the segments hold " + std::to_string(next) + " records, but count is " + std::to_string(m.count));
    if (const Value* tok = v.find("tokenizer")) {
        if (!tok->is_array()) throw Error(where + ": 'tokenizer' must be an array");
        for (size_t i = 0; i < tok->as_array().size(); ++i) {
            const Value& t = tok->as_array()[i];
            const std::string w = where + ": tokenizer[" + std::to_string(i) + "]";
            TokenizerFile f;
            f.name = string_member(t, "name", w);
            if (!is_flat_name(f.name)) throw Error(w + ": name '" + printable(f.name, 200) + "' is not a plain file name");
            f.blob.file = string_member(t, "file", w);
            if (!is_flat_name(f.blob.file)) throw Error(w + ": file '" + printable(f.blob.file, 200) + "' is not a flat blob name");
            f.blob.sha256 = string_member(t, "sha256", w);
            if (!is_sha256(f.blob.sha256)) throw Error(w + ": sha256 must be 64 lowercase hex digits");
            f.blob.bytes = uint_member(t, "bytes", w, uint64_t{1} << 40);
            m.tokenizer.push_back(std::move(f));
        }
    }
    if (const Value* retired = v.find("retired")) {
        if (fv < kBankFormatRetired)
            throw Error(where + ": 'retired' needs format_version " + std::to_string(kBankFormatRetired) + ", the manifest says " +
                        std::to_string(fv));
        m.retired = retired_from_json(*retired, m.count, where + ": retired");
    }
    if (const Value* index = v.find("index")) m.index = index_from_json(*index, m.count, where + ": index");
    return m;
}

std::string read_checked_blob(const BankStorage& st, const BlobRef& b, const std::string& what) {
    const std::string where = st.describe() + ": " + what + " '" + printable(b.file) + "'";
    // Capped at the manifest's size: a larger file is refused before it is read into memory.
    std::optional<std::string> bytes = st.read_blob(b.file, b.bytes);
    if (!bytes) throw Error(where + ": missing");
    if (bytes->size() != b.bytes)
        throw Error(where + ": " + std::to_string(bytes->size()) + " bytes, the manifest says " + std::to_string(b.bytes));
    const std::string h = sha256_hex(*bytes);
    if (h != b.sha256) throw Error(where + ": SHA-256 " + h + " does not match the manifest's " + b.sha256);
    return std::move(*bytes);
}

std::string segment_header(uint64_t record_bytes, uint32_t first_id, uint32_t count) {
    std::string h = "MNEMOSEG";
    put_u32(h, 1);
    put_u32(h, static_cast<uint32_t>(record_bytes));
    put_u32(h, first_id);
    put_u32(h, count);
    return h;
}

void check_segment_header(const uint8_t* h, const SegmentEntry& seg, uint64_t record_bytes, const std::string& where) {
    if (std::memcmp(h, "MNEMOSEG", 8) != 0) throw Error(where + ": not a bank segment (bad magic)");
    if (get_u32(h + 8) != 1) throw Error(where + ": segment format " + std::to_string(get_u32(h + 8)) + ", expected 1");
    if (get_u32(h + 12) != record_bytes)
        throw Error(where + ": header record_bytes " + std::to_string(get_u32(h + 12)) + ", manifest " + std::to_string(record_bytes));
    if (get_u32(h + 16) != seg.first_id || get_u32(h + 20) != seg.count)
        throw Error(where + ": header says ids " + std::to_string(get_u32(h + 16)) + " + " + std::to_string(get_u32(h + 20)) +
                    ", manifest " + std::to_string(seg.first_id) + " + " + std::to_string(seg.count));
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace mnemo::kb
