// GGUF reader: every count, length and offset is checked against the bytes that are left before
// it is used, so a lying file is an error naming the file and the key or tensor, never a crash or
// an allocation larger than the file. Layout (ggml's docs/gguf.md): magic "GGUF", u32 version,
// u64 tensor count, u64 key/value count, the key/values, the tensor infos, padding to the
// alignment, the data section.
#include "mnemo/io/gguf.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

#include <unistd.h>

#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/io/safetensors.hpp"

namespace mnemo {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr size_t kMaxKeyBytes = 65535;     // the format's limit on keys
constexpr size_t kMaxTensorNameBytes = 64; // the format's limit on tensor names (GGML_MAX_NAME)
constexpr uint32_t kMaxDims = 4;           // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;          // arrays of arrays of ...: no writer nests deeper
constexpr uint64_t kMaxAlignment = 1u << 20;
// Array elements kept in memory over the whole file. A 256k-token vocabulary with its scores,
// types and merges is about 1M; the cap bounds what a file of tiny nested arrays can cost.
constexpr uint64_t kMaxArrayElements = 16u << 20;

class Reader {
public:
    Reader(const uint8_t* bytes, uint64_t size, const std::string& source) : p_(bytes), size_(size), source_(source) {}

    uint64_t pos() const { return pos_; }
    uint64_t left() const { return size_ - pos_; }

    [[noreturn]] void fail(const std::string& where, const std::string& what) const {
        throw Error(source_ + ": " + where + (where.empty() ? "" : ": ") + what);
    }

    void need(uint64_t n, const std::string& where, const char* what) const {
        if (n > left())
            fail(where, std::string("the file ends at byte ") + std::to_string(size_) + " inside " + what + " (" +
                            std::to_string(n) + " bytes needed at byte " + std::to_string(pos_) + ", " +
                            std::to_string(left()) + " left)");
    }

    template <typename T>
    T read(const std::string& where, const char* what) {
        need(sizeof(T), where, what);
        T v;
        std::memcpy(&v, p_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    std::string read_string(const std::string& where, const char* what, uint64_t max_len) {
        const uint64_t n = read<uint64_t>(where, what);
        if (n > max_len) fail(where, std::string(what) + " is " + std::to_string(n) + " bytes long, more than the " + std::to_string(max_len) + " allowed");
        need(n, where, what);
        std::string s(reinterpret_cast<const char*>(p_ + pos_), static_cast<size_t>(n));
        pos_ += n;
        return s;
    }

private:
    const uint8_t* p_;
    uint64_t size_;
    uint64_t pos_ = 0;
    const std::string& source_;
};

uint64_t scalar_bytes(GgufValueType t) {
    switch (t) {
        case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::Bool: return 1;
        case GgufValueType::U16: case GgufValueType::I16: return 2;
        case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
        case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
        case GgufValueType::String: return 8;   // at least its length
        case GgufValueType::Array: return 12;   // at least its type and count
    }
    return 0;
}

bool known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::F64); }

struct Budget {
    uint64_t array_elements = 0;
};

// One scalar of type t into v (type already checked).
void read_scalar(Reader& r, GgufValueType t, GgufValue& v, const std::string& where) {
    v.type = t;
    const char* what = "a value";
    switch (t) {
        case GgufValueType::U8: v.i = r.read<uint8_t>(where, what); break;
        case GgufValueType::I8: v.i = r.read<int8_t>(where, what); break;
        case GgufValueType::U16: v.i = r.read<uint16_t>(where, what); break;
        case GgufValueType::I16: v.i = r.read<int16_t>(where, what); break;
        case GgufValueType::U32: v.i = r.read<uint32_t>(where, what); break;
        case GgufValueType::I32: v.i = r.read<int32_t>(where, what); break;
        case GgufValueType::I64: v.i = r.read<int64_t>(where, what); break;
        case GgufValueType::U64: {
            const uint64_t u = r.read<uint64_t>(where, what);
            if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                r.fail(where, "u64 value " + std::to_string(u) + " is larger than any count or id a model has");
            v.i = static_cast<int64_t>(u);
            break;
        }
        case GgufValueType::F32: v.f = r.read<float>(where, what); break;
        case GgufValueType::F64: v.f = r.read<double>(where, what); break;
        case GgufValueType::Bool: {
            const uint8_t b = r.read<uint8_t>(where, what);
            if (b > 1) r.fail(where, "bool value is " + std::to_string(b) + " (expected 0 or 1)");
            v.b = b == 1;
            v.i = b;
            break;
        }
        case GgufValueType::String: v.s = r.read_string(where, "a string value", std::numeric_limits<uint64_t>::max()); break;
        case GgufValueType::Array: break;  // handled by read_value
    }
}

void read_value(Reader& r, GgufValueType t, GgufValue& v, const std::string& where, int depth, Budget& budget) {
    if (t != GgufValueType::Array) {
        read_scalar(r, t, v, where);
        return;
    }
    if (depth >= kMaxArrayDepth) r.fail(where, "arrays nested more than " + std::to_string(kMaxArrayDepth) + " deep");
    v.type = GgufValueType::Array;
    const uint32_t et = r.read<uint32_t>(where, "an array's element type");
    if (!known_value_type(et)) r.fail(where, "array element type " + std::to_string(et) + " is not a GGUF value type (0..12)");
    v.elem = static_cast<GgufValueType>(et);
    v.count = r.read<uint64_t>(where, "an array's length");
    // Every element takes at least scalar_bytes(elem) of the file: a count larger than what is
    // left is a lie told before anything is reserved.
    if (v.count > r.left() / scalar_bytes(v.elem))
        r.fail(where, "array of " + std::to_string(v.count) + " " + gguf_value_type_name(v.elem) + " values needs at least " +
                          std::to_string(v.count) + " x " + std::to_string(scalar_bytes(v.elem)) + " bytes, the file has " +
                          std::to_string(r.left()) + " left");
    budget.array_elements += v.count;
    if (budget.array_elements > kMaxArrayElements)
        r.fail(where, "the file's arrays hold more than " + std::to_string(kMaxArrayElements) + " values in all");
    const size_t n = static_cast<size_t>(v.count);
    GgufValue scratch;
    switch (v.elem) {
        case GgufValueType::String:
            v.strings.reserve(n);
            for (size_t k = 0; k < n; ++k) v.strings.push_back(r.read_string(where, "a string in an array", std::numeric_limits<uint64_t>::max()));
            break;
        case GgufValueType::F32: case GgufValueType::F64:
            v.floats.reserve(n);
            for (size_t k = 0; k < n; ++k) {
                read_scalar(r, v.elem, scratch, where);
                v.floats.push_back(scratch.f);
            }
            break;
        case GgufValueType::Array:
            v.items.resize(n);
            for (size_t k = 0; k < n; ++k) read_value(r, GgufValueType::Array, v.items[k], where + "[" + std::to_string(k) + "]", depth + 1, budget);
            break;
        default:
            v.ints.reserve(n);
            for (size_t k = 0; k < n; ++k) {
                read_scalar(r, v.elem, scratch, where);
                v.ints.push_back(scratch.i);
            }
            break;
    }
}

std::string key_where(const std::string& key) { return "key '" + printable(key, 200) + "'"; }
std::string tensor_where(const std::string& name) { return "tensor '" + printable(name, 200) + "'"; }

bool has_control_bytes(const std::string& s) {
    return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

void read_tensor_info(Reader& r, GgufTensorInfo& t, uint64_t index) {
    const std::string at = "tensor info " + std::to_string(index);
    t.name = r.read_string(at, "a tensor name", std::numeric_limits<uint64_t>::max());
    if (t.name.empty() || t.name.size() > kMaxTensorNameBytes || has_control_bytes(t.name))
        r.fail(at, "name '" + printable(t.name, 200) + "' is not 1.." + std::to_string(kMaxTensorNameBytes) + " printable bytes");
    const std::string where = tensor_where(t.name);
    const uint32_t n_dims = r.read<uint32_t>(where, "its dimension count");
    if (n_dims < 1 || n_dims > kMaxDims)
        r.fail(where, std::to_string(n_dims) + " dimensions (expected 1.." + std::to_string(kMaxDims) + ")");
    t.ne.resize(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
        const uint64_t ne = r.read<uint64_t>(where, "its dimensions");
        if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            r.fail(where, "dimension " + std::to_string(d) + " is " + std::to_string(ne) + " (expected at least 1)");
        t.ne[d] = static_cast<int64_t>(ne);
    }
    t.type = r.read<uint32_t>(where, "its type");
    t.offset = r.read<uint64_t>(where, "its offset");
    const GgmlTypeInfo* ti = ggml_type_info(t.type);
    if (!ti) r.fail(where, "type " + std::to_string(t.type) + " is not a GGUF tensor type");
    if (t.ne[0] % ti->block_elems != 0)
        r.fail(where, "innermost dimension " + std::to_string(t.ne[0]) + " is not a multiple of " + ti->name + "'s block of " +
                          std::to_string(ti->block_elems));
    // Element count and bytes without overflow: each step stays below 2^63.
    uint64_t elements = 1;
    for (const int64_t ne : t.ne) {
        if (static_cast<uint64_t>(ne) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / elements)
            r.fail(where, "its dimensions multiply past 2^63 elements");
        elements *= static_cast<uint64_t>(ne);
    }
    const uint64_t blocks = elements / ti->block_elems;
    if (blocks > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ti->block_bytes)
        r.fail(where, "its size passes 2^63 bytes");
    t.nbytes = blocks * ti->block_bytes;
}

}  // namespace

const char* gguf_value_type_name(GgufValueType t) {
    switch (t) {
        case GgufValueType::U8: return "u8";
        case GgufValueType::I8: return "i8";
        case GgufValueType::U16: return "u16";
        case GgufValueType::I16: return "i16";
        case GgufValueType::U32: return "u32";
        case GgufValueType::I32: return "i32";
        case GgufValueType::F32: return "f32";
        case GgufValueType::Bool: return "bool";
        case GgufValueType::String: return "string";
        case GgufValueType::Array: return "array";
        case GgufValueType::U64: return "u64";
        case GgufValueType::I64: return "i64";
        case GgufValueType::F64: return "f64";
    }
    return "?";
}

bool GgufValue::is_integer() const {
    switch (type) {
        case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::U16: case GgufValueType::I16:
        case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::U64: case GgufValueType::I64: return true;
        default: return false;
    }
}

int64_t GgufTensorInfo::elements() const {
    int64_t n = 1;
    for (const int64_t d : ne) n *= d;
    return n;
}

const GgufValue* GgufHeader::find(const std::string& key) const {
    for (const auto& [k, v] : metadata)
        if (k == key) return &v;
    return nullptr;
}

const GgufTensorInfo* GgufHeader::tensor(const std::string& name) const {
    for (const GgufTensorInfo& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

GgufHeader parse_gguf(const uint8_t* bytes, uint64_t size, const std::string& source) {
    Reader r(bytes, size, source);
    GgufHeader h;
    if (size < 4) r.fail("", "not a GGUF file: " + std::to_string(size) + " bytes, shorter than the magic");
    const uint32_t magic = r.read<uint32_t>("", "the magic");
    if (magic != kMagic) r.fail("", "not a GGUF file (the first 4 bytes are not 'GGUF')");
    h.version = r.read<uint32_t>("header", "the version");
    if (h.version == 1) r.fail("header", "GGUF version 1 (2023's first draft) is not supported: convert the file again (expected version 2 or 3)");
    if (h.version > 0xffff && (h.version >> 24) != 0)  // the version's bytes swapped: a big-endian file
        r.fail("header", "a big-endian GGUF file (version bytes " + std::to_string(h.version) + "): only little-endian files are read");
    if (h.version != 2 && h.version != 3) r.fail("header", "version " + std::to_string(h.version) + " (expected 2 or 3)");
    const uint64_t n_tensors = r.read<uint64_t>("header", "the tensor count");
    const uint64_t n_kv = r.read<uint64_t>("header", "the key/value count");
    // Each key/value takes at least 8 (key length) + 1 (a non-empty key) + 4 (type) + 1 bytes,
    // each tensor info 8 + 1 + 4 + 8 + 4 + 8: counts beyond that are refused before reserving.
    if (n_kv > r.left() / 14) r.fail("header", "it announces " + std::to_string(n_kv) + " key/values, more than its " + std::to_string(r.left()) + " remaining bytes can hold");
    if (n_tensors > r.left() / 33) r.fail("header", "it announces " + std::to_string(n_tensors) + " tensors, more than its " + std::to_string(r.left()) + " remaining bytes can hold");

    Budget budget;
    std::unordered_set<std::string> keys;
    h.metadata.reserve(static_cast<size_t>(n_kv));
    for (uint64_t k = 0; k < n_kv; ++k) {
        const std::string at = "key/value " + std::to_string(k);
        std::string key = r.read_string(at, "a key", kMaxKeyBytes);
        if (key.empty() || has_control_bytes(key)) r.fail(at, "key '" + printable(key, 200) + "' is empty or holds control characters");
        const std::string where = key_where(key);
        if (!keys.insert(key).second) r.fail(where, "appears twice");
        const uint32_t t = r.read<uint32_t>(where, "its value type");
        if (!known_value_type(t)) r.fail(where, "value type " + std::to_string(t) + " is not a GGUF value type (0..12)");
        GgufValue v;
        read_value(r, static_cast<GgufValueType>(t), v, where, 0, budget);
        h.metadata.emplace_back(std::move(key), std::move(v));
    }

    if (const GgufValue* a = h.find("general.alignment")) {
        if (a->type != GgufValueType::U32)
            r.fail(key_where("general.alignment"), std::string("is a ") + gguf_value_type_name(a->type) + " (expected u32)");
        const uint64_t al = static_cast<uint64_t>(a->i);
        if (al == 0 || (al & (al - 1)) != 0 || al > kMaxAlignment)
            r.fail(key_where("general.alignment"), std::to_string(al) + " is not a power of two up to " + std::to_string(kMaxAlignment));
        h.alignment = al;
    }

    std::unordered_set<std::string> names;
    h.tensors.resize(static_cast<size_t>(n_tensors));
    for (uint64_t k = 0; k < n_tensors; ++k) {
        read_tensor_info(r, h.tensors[k], k);
        if (!names.insert(h.tensors[k].name).second) r.fail(tensor_where(h.tensors[k].name), "appears twice");
    }

    // The data section starts at the next multiple of the alignment; a file without tensors may
    // end right after its infos (a vocabulary-only file).
    const uint64_t end_of_infos = r.pos();
    h.data_start = (end_of_infos + h.alignment - 1) / h.alignment * h.alignment;
    if (n_tensors == 0) {
        h.data_start = std::min(h.data_start, size);
        return h;
    }
    if (h.data_start > size) r.fail("data", "the file ends at byte " + std::to_string(size) + ", before its data section at byte " + std::to_string(h.data_start));
    const uint64_t data_bytes = size - h.data_start;
    std::vector<const GgufTensorInfo*> by_offset;
    by_offset.reserve(h.tensors.size());
    for (const GgufTensorInfo& t : h.tensors) {
        const std::string where = tensor_where(t.name);
        if (t.offset % h.alignment != 0)
            r.fail(where, "offset " + std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(h.alignment));
        if (t.offset > data_bytes || t.nbytes > data_bytes - t.offset)
            r.fail(where, ggml_type_label(t.type) + " data of " + std::to_string(t.nbytes) + " bytes at offset " + std::to_string(t.offset) +
                              " runs past the end of the data section (" + std::to_string(data_bytes) + " bytes)");
        by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) { return a->offset < b->offset; });
    for (size_t k = 1; k < by_offset.size(); ++k)
        if (by_offset[k - 1]->offset + by_offset[k - 1]->nbytes > by_offset[k]->offset)
            r.fail(tensor_where(by_offset[k]->name), "its data at offset " + std::to_string(by_offset[k]->offset) + " overlaps " +
                                                         tensor_where(by_offset[k - 1]->name) + "'s");
    return h;
}

GgufFile::GgufFile(const std::string& path) : map_(std::make_shared<MappedFile>(path)) {
    header_ = parse_gguf(map_->data(), map_->size(), path);
}

GgufFile::~GgufFile() = default;

const std::string& GgufFile::path() const { return map_->path(); }

const GgufValue& GgufFile::require(const std::string& key, const char* expected) const {
    const GgufValue* v = header_.find(key);
    if (!v) throw Error(path() + ": key '" + key + "' is missing (expected " + expected + ")");
    return *v;
}

namespace {
[[noreturn]] void wrong_kind(const std::string& path, const std::string& key, const GgufValue& v, const char* expected) {
    std::string held = gguf_value_type_name(v.type);
    if (v.type == GgufValueType::Array) held += std::string(" of ") + gguf_value_type_name(v.elem);
    throw Error(path + ": key '" + key + "' holds " + held + " (expected " + expected + ")");
}
}  // namespace

int64_t GgufFile::get_int(const std::string& key) const {
    const GgufValue& v = require(key, "an integer");
    if (!v.is_integer()) wrong_kind(path(), key, v, "an integer");
    return v.i;
}

double GgufFile::get_float(const std::string& key) const {
    const GgufValue& v = require(key, "a number");
    if (v.is_float()) return v.f;
    if (v.is_integer()) return static_cast<double>(v.i);
    wrong_kind(path(), key, v, "a number");
}

bool GgufFile::get_bool(const std::string& key) const {
    const GgufValue& v = require(key, "a bool");
    if (v.type != GgufValueType::Bool) wrong_kind(path(), key, v, "a bool");
    return v.b;
}

const std::string& GgufFile::get_string(const std::string& key) const {
    const GgufValue& v = require(key, "a string");
    if (v.type != GgufValueType::String) wrong_kind(path(), key, v, "a string");
    return v.s;
}

const std::vector<std::string>& GgufFile::get_strings(const std::string& key) const {
    const GgufValue& v = require(key, "an array of strings");
    if (v.type != GgufValueType::Array || v.elem != GgufValueType::String) wrong_kind(path(), key, v, "an array of strings");
    return v.strings;
}

const std::vector<double>& GgufFile::get_floats(const std::string& key) const {
    const GgufValue& v = require(key, "an array of numbers");
    if (v.type != GgufValueType::Array || (v.elem != GgufValueType::F32 && v.elem != GgufValueType::F64))
        wrong_kind(path(), key, v, "an array of f32 or f64");
    return v.floats;
}

const std::vector<int64_t>& GgufFile::get_ints(const std::string& key) const {
    const GgufValue& v = require(key, "an array of integers");
    const bool ints = v.type == GgufValueType::Array && v.elem != GgufValueType::String && v.elem != GgufValueType::Array &&
                      v.elem != GgufValueType::F32 && v.elem != GgufValueType::F64;
    if (!ints) wrong_kind(path(), key, v, "an array of integers");
    return v.ints;
}

const uint8_t* GgufFile::tensor_data(const GgufTensorInfo& t) const { return map_->data() + header_.data_start + t.offset; }

bool looks_like_gguf(const std::string& path) {
    try {
        const OpenedFile f = open_regular_file(path);
        uint8_t magic[4] = {};
        const bool ok = f.size >= 4 && ::pread(f.fd, magic, 4, 0) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
        ::close(f.fd);
        return ok;
    } catch (const Error&) {
        return false;
    }
}

}  // namespace mnemo
