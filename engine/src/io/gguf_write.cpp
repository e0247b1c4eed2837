// GGUF writer (version 3, little-endian): the inverse of parse_gguf, for `mnemo quantize`, the
// converters and the tests that make GGUF files.
#include <cstring>
#include <limits>

#include "mnemo/error.hpp"
#include "mnemo/io/atomic_file.hpp"
#include "mnemo/io/gguf.hpp"

namespace mnemo {
namespace {

constexpr uint32_t kVersion = 3;

template <typename T>
void put(std::string& out, T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.append(b, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
    put<uint64_t>(out, s.size());
    out += s;
}

void put_scalar(std::string& out, GgufValueType t, int64_t i, double f) {
    switch (t) {
        case GgufValueType::U8: put<uint8_t>(out, static_cast<uint8_t>(i)); break;
        case GgufValueType::I8: put<int8_t>(out, static_cast<int8_t>(i)); break;
        case GgufValueType::U16: put<uint16_t>(out, static_cast<uint16_t>(i)); break;
        case GgufValueType::I16: put<int16_t>(out, static_cast<int16_t>(i)); break;
        case GgufValueType::U32: put<uint32_t>(out, static_cast<uint32_t>(i)); break;
        case GgufValueType::I32: put<int32_t>(out, static_cast<int32_t>(i)); break;
        case GgufValueType::U64: put<uint64_t>(out, static_cast<uint64_t>(i)); break;
        case GgufValueType::I64: put<int64_t>(out, i); break;
        case GgufValueType::Bool: put<uint8_t>(out, i != 0 ? 1 : 0); break;
        case GgufValueType::F32: put<float>(out, static_cast<float>(f)); break;
        case GgufValueType::F64: put<double>(out, f); break;
        case GgufValueType::String: case GgufValueType::Array: break;
    }
}

void put_value(std::string& out, const GgufValue& v) {
    if (v.type == GgufValueType::String) return put_string(out, v.s);
    if (v.type != GgufValueType::Array) {
        put_scalar(out, v.type, v.type == GgufValueType::Bool ? (v.b ? 1 : 0) : v.i, v.f);
        return;
    }
    put<uint32_t>(out, static_cast<uint32_t>(v.elem));
    switch (v.elem) {
        case GgufValueType::String:
            put<uint64_t>(out, v.strings.size());
            for (const std::string& s : v.strings) put_string(out, s);
            break;
        case GgufValueType::F32: case GgufValueType::F64:
            put<uint64_t>(out, v.floats.size());
            for (const double f : v.floats) put_scalar(out, v.elem, 0, f);
            break;
        case GgufValueType::Array:
            put<uint64_t>(out, v.items.size());
            for (const GgufValue& item : v.items) put_value(out, item);
            break;
        default:
            put<uint64_t>(out, v.ints.size());
            for (const int64_t i : v.ints) put_scalar(out, v.elem, i, 0.0);
            break;
    }
}

uint64_t align_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

// The header, the metadata and the tensor infos, padded to the alignment: everything before the
// first tensor's bytes. Checks each tensor's size against its type and shape.
std::string header_bytes(const GgufMetadata& metadata, const std::vector<GgufTensorToWrite>& tensors, uint64_t& alignment) {
    alignment = 32;
    for (const auto& [key, v] : metadata)
        if (key == "general.alignment" && v.type == GgufValueType::U32 && v.i > 0) alignment = static_cast<uint64_t>(v.i);
    std::string out;
    out += "GGUF";
    put<uint32_t>(out, kVersion);
    put<uint64_t>(out, tensors.size());
    put<uint64_t>(out, metadata.size());
    for (const auto& [key, v] : metadata) {
        put_string(out, key);
        put<uint32_t>(out, static_cast<uint32_t>(v.type));
        put_value(out, v);
    }
    uint64_t offset = 0;
    for (const GgufTensorToWrite& t : tensors) {
        const GgmlTypeInfo* ti = ggml_type_info(t.type);
        if (!ti) throw Error("writing GGUF: tensor '" + t.name + "': " + ggml_type_label(t.type));
        uint64_t elements = 1;
        for (const int64_t d : t.shape) elements *= static_cast<uint64_t>(d);
        if (t.shape.empty() || t.shape.back() % ti->block_elems != 0 || elements / ti->block_elems * ti->block_bytes != t.nbytes)
            throw Error("writing GGUF: tensor '" + t.name + "': " + std::to_string(t.nbytes) + " bytes do not hold its shape in " + ti->name);
        put_string(out, t.name);
        put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
        for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) put<uint64_t>(out, static_cast<uint64_t>(*d));
        put<uint32_t>(out, t.type);
        put<uint64_t>(out, offset);
        offset = align_up(offset + t.nbytes, alignment);
    }
    out.resize(align_up(out.size(), alignment), '\0');
    return out;
}

}  // namespace

std::string gguf_bytes(const GgufMetadata& metadata, const std::vector<GgufTensorToWrite>& tensors) {
    uint64_t alignment = 32;
    std::string out = header_bytes(metadata, tensors, alignment);
    for (const GgufTensorToWrite& t : tensors) {
        out.append(static_cast<const char*>(t.data), t.nbytes);
        out.resize(align_up(out.size(), alignment), '\0');
    }
    return out;
}

void write_gguf(const std::string& path, const GgufMetadata& metadata, const std::vector<GgufTensorToWrite>& tensors) {
    GgufWriter w(path, metadata, tensors);
    for (const GgufTensorToWrite& t : tensors) w.write_tensor(t.data, t.nbytes);
    w.commit();
}

GgufWriter::GgufWriter(const std::string& path, const GgufMetadata& metadata, const std::vector<GgufTensorToWrite>& tensors)
    : tensors_(tensors) {
    const std::string header = header_bytes(metadata, tensors, alignment_);
    file_ = std::make_unique<AtomicFileWriter>(path);
    file_->write(header);
}

GgufWriter::~GgufWriter() = default;

void GgufWriter::write_tensor(const void* data, uint64_t nbytes) {
    if (next_ >= tensors_.size()) throw Error("writing GGUF: more tensors written than announced (" + std::to_string(tensors_.size()) + ")");
    const GgufTensorToWrite& t = tensors_[next_];
    if (nbytes != t.nbytes)
        throw Error("writing GGUF: tensor '" + t.name + "': " + std::to_string(nbytes) + " bytes written, " + std::to_string(t.nbytes) + " announced");
    ++next_;
    file_->write(std::string_view(static_cast<const char*>(data), nbytes));
    const uint64_t pad = align_up(nbytes, alignment_) - nbytes;
    if (pad) file_->write(std::string(pad, '\0'));
}

void GgufWriter::commit() {
    if (next_ != tensors_.size())
        throw Error("writing GGUF: " + std::to_string(next_) + " of the " + std::to_string(tensors_.size()) + " announced tensors written");
    file_->commit();
}

GgufValue gguf_int(GgufValueType type, int64_t v) {
    GgufValue g;
    g.type = type;
    g.i = v;
    return g;
}

GgufValue gguf_f32(float v) {
    GgufValue g;
    g.type = GgufValueType::F32;
    g.f = v;
    return g;
}

GgufValue gguf_bool(bool v) {
    GgufValue g;
    g.type = GgufValueType::Bool;
    g.b = v;
    g.i = v ? 1 : 0;
    return g;
}

GgufValue gguf_string(std::string v) {
    GgufValue g;
    g.type = GgufValueType::String;
    g.s = std::move(v);
    return g;
}

GgufValue gguf_strings(std::vector<std::string> v) {
    GgufValue g;
    g.type = GgufValueType::Array;
    g.elem = GgufValueType::String;
    g.count = v.size();
    g.strings = std::move(v);
    return g;
}

GgufValue gguf_f32s(const std::vector<float>& v) {
    GgufValue g;
    g.type = GgufValueType::Array;
    g.elem = GgufValueType::F32;
    g.count = v.size();
    g.floats.assign(v.begin(), v.end());
    return g;
}

GgufValue gguf_ints(GgufValueType elem, std::vector<int64_t> v) {
    GgufValue g;
    g.type = GgufValueType::Array;
    g.elem = elem;
    g.count = v.size();
    g.ints = std::move(v);
    return g;
}

}  // namespace mnemo
