// Hugging Face checkpoints: safetensors files (single or sharded via model.safetensors.index.json),
// memory-mapped read-only. Every header field is validated before any tensor is touched: dtype
// names, shapes, data_offsets inside the file, non-overlapping, element counts matching bytes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mnemo/api.hpp"
#include "mnemo/ops/dtype.hpp"

namespace mnemo {

struct TensorView {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    const void* data = nullptr;  // inside a read-only mapping owned by the Checkpoint
    uint64_t nbytes = 0;
    std::string file;  // which shard holds it, for messages
};

// One parsed header entry before mapping (exposed for the fuzz target and tests).
struct SafetensorsEntry {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    uint64_t begin = 0;  // byte offsets relative to the data section
    uint64_t end = 0;
};

struct SafetensorsHeader {
    uint64_t header_len = 0;       // the 8-byte little-endian length prefix
    uint64_t data_start = 0;       // 8 + header_len
    std::vector<SafetensorsEntry> entries;
    std::map<std::string, std::string> metadata;  // "__metadata__"
};

// Validate a complete file image (header and bounds against file_size). `source` names the file
// in errors, e.g. "model.safetensors: tensor 'lm_head.weight': data_offsets [0, 10) hold 10 bytes
// but shape [2, 3] of F32 needs 24". Unknown dtypes (e.g. I8, F8_E4M3) are rejected with a message
// naming the dtype.
MNEMO_API SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, uint64_t file_size,
                                           const std::string& source);

// A read-only memory mapping of a file (RAII).
class MNEMO_API MappedFile {
public:
    explicit MappedFile(const std::string& path);  // throws mnemo::Error naming the path
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    const uint8_t* data() const { return data_; }
    uint64_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
};

class MNEMO_API Checkpoint {
public:
    // Opens `dir`/model.safetensors, or `dir`/model.safetensors.index.json and its shards.
    // Throws mnemo::Error naming the file and field on any problem (missing files, a shard that
    // lacks a tensor the index promises, a tensor present in two shards...).
    static Checkpoint open(const std::string& dir);

    // A checkpoint whose tensors live in memory someone else owns: a GGUF file's mapping, or
    // buffers converted at load time. `owners` keep that memory alive as long as the checkpoint;
    // `files` name where the tensors came from, for messages. Names must be unique.
    static Checkpoint from_views(std::vector<TensorView> tensors, std::vector<std::shared_ptr<const void>> owners,
                                 std::vector<std::string> files);

    const TensorView* find(const std::string& name) const;  // nullptr if absent
    const std::vector<TensorView>& tensors() const { return tensors_; }
    uint64_t total_bytes() const;
    const std::vector<std::string>& files() const { return files_; }

private:
    std::vector<std::shared_ptr<MappedFile>> maps_;
    std::vector<std::shared_ptr<const void>> owners_;
    std::vector<TensorView> tensors_;
    std::map<std::string, size_t> index_;
    std::vector<std::string> files_;
};

// Write a safetensors file atomically (temp file + rename): used by tools, tests and converters.
struct TensorToWrite {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    const void* data;
};
MNEMO_API void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace mnemo
