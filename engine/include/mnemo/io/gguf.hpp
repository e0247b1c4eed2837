// GGUF files (ggml's single-file model format, versions 2 and 3, little-endian): the metadata
// key/values and the tensor infos, validated before any tensor is touched, and the tensors' bytes
// used in place inside a read-only mapping. A hostile file can lie about every count, length,
// type, dimension, offset and the alignment: each lie is a mnemo::Error naming the file, the key or
// tensor and what was expected; nothing is allocated from a count before the bytes it implies are
// known to be in the file. The format: docs/gguf.md (ours) and ggml's docs/gguf.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mnemo/api.hpp"
#include "mnemo/io/ggml_type.hpp"

namespace mnemo {

class MappedFile;

// The value types of GGUF metadata (gguf_type).
enum class GgufValueType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8, Array = 9,
    U64 = 10, I64 = 11, F64 = 12
};
MNEMO_API const char* gguf_value_type_name(GgufValueType t);  // "u32", "string", "array"...

// One metadata value. Scalars: integers widen to `i` (u64 above INT64_MAX is refused as a lie no
// writer tells), floats to `f`, bools to `b`, strings to `s` (bytes as stored: not checked as
// UTF-8, a tokenizer's pieces need not be). Arrays keep their element type and values in the
// vector of their kind; arrays of arrays hold `items`.
struct GgufValue {
    GgufValueType type = GgufValueType::U8;
    int64_t i = 0;
    double f = 0.0;
    bool b = false;
    std::string s;
    GgufValueType elem = GgufValueType::U8;  // arrays
    uint64_t count = 0;                      // arrays: element count
    std::vector<int64_t> ints;               // integer and bool elements
    std::vector<double> floats;              // f32 / f64 elements
    std::vector<std::string> strings;        // string elements
    std::vector<GgufValue> items;            // array elements
    bool is_integer() const;
    bool is_float() const { return type == GgufValueType::F32 || type == GgufValueType::F64; }
};

struct GgufTensorInfo {
    std::string name;
    uint32_t type = 0;               // ggml type id (mnemo/io/ggml_type.hpp)
    std::vector<int64_t> ne;         // ggml order: ne[0] is the innermost (contiguous) dimension
    uint64_t offset = 0;             // from the start of the data section
    uint64_t nbytes = 0;
    // Row-major shape as Mnemo (and safetensors) write it: ne reversed.
    std::vector<int64_t> shape() const { return {ne.rbegin(), ne.rend()}; }
    int64_t elements() const;
};

struct GgufHeader {
    uint32_t version = 0;
    uint64_t alignment = 32;   // general.alignment, or 32
    uint64_t data_start = 0;   // file offset of the data section (aligned; in a file without tensors, at most its size)
    std::vector<std::pair<std::string, GgufValue>> metadata;  // in file order, keys unique
    std::vector<GgufTensorInfo> tensors;                       // in file order, names unique

    const GgufValue* find(const std::string& key) const;
    const GgufTensorInfo* tensor(const std::string& name) const;
};

// Validate a whole file image: magic, version, every key/value and tensor info, the alignment,
// each tensor's bytes inside the file and not overlapping another's. `source` names the file in
// errors: "model.gguf: tensor 'blk.0.attn_q.weight': offset 96 is not a multiple of the alignment 32".
MNEMO_API GgufHeader parse_gguf(const uint8_t* bytes, uint64_t size, const std::string& source);

// A GGUF file mapped read-only, with typed lookups whose errors name the file and the key.
class MNEMO_API GgufFile {
public:
    explicit GgufFile(const std::string& path);  // throws mnemo::Error naming the path
    ~GgufFile();
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    const std::string& path() const;
    const GgufHeader& header() const { return header_; }
    bool has(const std::string& key) const { return header_.find(key) != nullptr; }
    // Typed reads: the key must be present with a value of that kind (any integer type for
    // get_int, f32/f64 for get_float) or the error says which key and what it holds instead.
    int64_t get_int(const std::string& key) const;
    double get_float(const std::string& key) const;
    bool get_bool(const std::string& key) const;
    const std::string& get_string(const std::string& key) const;
    const std::vector<std::string>& get_strings(const std::string& key) const;
    const std::vector<double>& get_floats(const std::string& key) const;
    const std::vector<int64_t>& get_ints(const std::string& key) const;
    // The bytes of a tensor inside the mapping (aligned as the file says).
    const uint8_t* tensor_data(const GgufTensorInfo& t) const;

private:
    const GgufValue& require(const std::string& key, const char* expected) const;
    std::shared_ptr<MappedFile> map_;
    GgufHeader header_;
};

// Writing GGUF (version 3): the metadata in the given order, then the tensor infos, then each
// tensor's bytes at the next multiple of the alignment (general.alignment when the metadata sets
// it as a u32, else 32). `shape` is row-major as Mnemo writes it (stored reversed, as ne);
// `nbytes` must be what the type's blocks of that shape take. gguf_bytes() builds the image in
// memory (tests, small files); write_gguf() writes it atomically (mnemo/io/atomic_file.hpp).
struct GgufTensorToWrite {
    std::string name;
    uint32_t type = ggml_type::F32;
    std::vector<int64_t> shape;
    const void* data = nullptr;
    uint64_t nbytes = 0;
};
using GgufMetadata = std::vector<std::pair<std::string, GgufValue>>;
MNEMO_API std::string gguf_bytes(const GgufMetadata& metadata, const std::vector<GgufTensorToWrite>& tensors);
MNEMO_API void write_gguf(const std::string& path, const GgufMetadata& metadata, const std::vector<GgufTensorToWrite>& tensors);

// Writing a GGUF file tensor by tensor, so a converter holds one tensor at a time: the header and
// the tensor infos are written first (from `tensors`' names, types, shapes and sizes: their data
// pointers are not read), then each tensor's bytes, in order, through write_tensor(); commit()
// puts the file in place (mnemo/io/atomic_file.hpp's AtomicFileWriter: no partial file on error).
class AtomicFileWriter;
class MNEMO_API GgufWriter {
public:
    GgufWriter(const std::string& path, const GgufMetadata& metadata, const std::vector<GgufTensorToWrite>& tensors);
    ~GgufWriter();
    GgufWriter(const GgufWriter&) = delete;
    GgufWriter& operator=(const GgufWriter&) = delete;
    void write_tensor(const void* data, uint64_t nbytes);
    void commit();

private:
    std::unique_ptr<AtomicFileWriter> file_;
    std::vector<GgufTensorToWrite> tensors_;
    size_t next_ = 0;
    uint64_t alignment_ = 32;
};

// Metadata values for writers: gguf_u32(7), gguf_string("llama"), gguf_strings({...}).
MNEMO_API GgufValue gguf_int(GgufValueType type, int64_t v);
inline GgufValue gguf_u32(uint32_t v) { return gguf_int(GgufValueType::U32, v); }
inline GgufValue gguf_i32(int32_t v) { return gguf_int(GgufValueType::I32, v); }
MNEMO_API GgufValue gguf_f32(float v);
MNEMO_API GgufValue gguf_bool(bool v);
MNEMO_API GgufValue gguf_string(std::string v);
MNEMO_API GgufValue gguf_strings(std::vector<std::string> v);
MNEMO_API GgufValue gguf_f32s(const std::vector<float>& v);
MNEMO_API GgufValue gguf_ints(GgufValueType elem, std::vector<int64_t> v);

// True when the file starts with the GGUF magic (how model paths are told apart).
MNEMO_API bool looks_like_gguf(const std::string& path);

}  // namespace mnemo
