// safetensors reading (header validation, memory mapping, sharded Hugging Face folders) and
// writing. A safetensors file is: u64 little-endian header length N, N bytes of JSON, then the
// data section that the header's data_offsets index into. Nothing in the header is trusted: every
// offset, size and name is checked before a TensorView pointing into the mapping is handed out.
#include "mnemo/io/safetensors.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <set>
#include <optional>
#include <string_view>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/json.hpp"

namespace mnemo {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;  // what the reference library allows
constexpr size_t kMaxDims = 4;

std::string tensor_ctx(const std::string& source, const std::string& name) {
    return source + ": tensor '" + name + "': ";
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

std::string range_text(uint64_t begin, uint64_t end) {
    return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// Only the upper-case safetensors spelling is valid inside a header.
std::optional<DType> safetensors_dtype(std::string_view name) {
    if (name == "F32") return DType::F32;
    if (name == "F16") return DType::F16;
    if (name == "BF16") return DType::BF16;
    if (name == "I32") return DType::I32;
    return std::nullopt;
}

const char* safetensors_dtype_name(DType t) {
    switch (t) {
        case DType::F32: return "F32";
        case DType::F16: return "F16";
        case DType::BF16: return "BF16";
        case DType::I32: return "I32";
        default: break;  // block-quantized types are GGUF's; safetensors has no name for them
    }
    return "?";
}

// Types the format defines that Mnemo does not load: named as "unsupported" rather than "unknown"
// so a user knows the file is fine but needs converting.
bool is_other_safetensors_dtype(std::string_view name) {
    static constexpr std::string_view kOthers[] = {
        "BOOL", "U8", "I8", "U16", "I16", "U32", "U64", "I64", "F64", "C64",
        "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4"};
    return std::find(std::begin(kOthers), std::end(kOthers), name) != std::end(kOthers);
}

// numel * dtype size, or an error when the product does not fit 64 bits.
uint64_t checked_nbytes(const std::vector<int64_t>& shape, DType dtype, const std::string& ctx) {
    uint64_t n = dtype_size(dtype);
    for (const int64_t d : shape) {
        if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n))
            throw Error(ctx + "shape " + shape_text(shape) + " of " + safetensors_dtype_name(dtype) +
                        " is too large (byte count overflows 64 bits)");
    }
    return n;
}

uint64_t read_u64_le(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

uint64_t non_negative_int(const json::Value& v, const std::string& ctx, const std::string& what) {
    if (!v.is_integer() || v.as_int() < 0) {
        const std::string found = v.is_number() ? "number " + v.dump() : json::type_name(v.type());
        throw Error(ctx + what + ": expected a non-negative integer, found " + found);
    }
    return static_cast<uint64_t>(v.as_int());
}

SafetensorsEntry parse_entry(const std::string& name, const json::Value& v, uint64_t data_size,
                             const std::string& source) {
    const std::string ctx = tensor_ctx(source, name);
    if (name.empty()) throw Error(source + ": header has a tensor with an empty name");
    if (!v.is_object())
        throw Error(ctx + "expected an object with dtype, shape, data_offsets, found " +
                    json::type_name(v.type()));
    SafetensorsEntry e;
    e.name = name;

    const json::Value* dtype = v.find("dtype");
    if (dtype == nullptr) throw Error(ctx + "missing field 'dtype'");
    if (!dtype->is_string())
        throw Error(ctx + "field 'dtype': expected string, found " + json::type_name(dtype->type()));
    const std::string& dname = dtype->as_string();
    const auto dt = safetensors_dtype(dname);
    if (!dt) {
        const char* kind = is_other_safetensors_dtype(dname) ? "unsupported" : "unknown";
        throw Error(ctx + kind + " dtype '" + dname + "' (supported: F32, F16, BF16, I32)");
    }
    e.dtype = *dt;

    const json::Value* shape = v.find("shape");
    if (shape == nullptr) throw Error(ctx + "missing field 'shape'");
    if (!shape->is_array())
        throw Error(ctx + "field 'shape': expected array, found " + json::type_name(shape->type()));
    if (shape->size() > kMaxDims)
        throw Error(ctx + "field 'shape' has " + std::to_string(shape->size()) + " dimensions, at most " +
                    std::to_string(kMaxDims) + " are supported");
    for (size_t i = 0; i < shape->size(); ++i)
        e.shape.push_back(static_cast<int64_t>(
            non_negative_int(shape->as_array()[i], ctx, "field 'shape'[" + std::to_string(i) + "]")));
    const uint64_t need = checked_nbytes(e.shape, e.dtype, ctx);

    const json::Value* offsets = v.find("data_offsets");
    if (offsets == nullptr) throw Error(ctx + "missing field 'data_offsets'");
    if (!offsets->is_array() || offsets->size() != 2)
        throw Error(ctx + "field 'data_offsets': expected an array [begin, end], found " +
                    (offsets->is_array() ? "an array of " + std::to_string(offsets->size()) + " elements"
                                         : std::string(json::type_name(offsets->type()))));
    e.begin = non_negative_int(offsets->as_array()[0], ctx, "field 'data_offsets'[0]");
    e.end = non_negative_int(offsets->as_array()[1], ctx, "field 'data_offsets'[1]");
    if (e.begin > e.end)
        throw Error(ctx + "data_offsets " + range_text(e.begin, e.end) + " begin after they end");
    if (e.end > data_size)
        throw Error(ctx + "data_offsets " + range_text(e.begin, e.end) + " run past the data section (" +
                    std::to_string(data_size) + " bytes)");
    if (e.end - e.begin != need)
        throw Error(ctx + "data_offsets " + range_text(e.begin, e.end) + " hold " +
                    std::to_string(e.end - e.begin) + " bytes but shape " + shape_text(e.shape) + " of " +
                    safetensors_dtype_name(e.dtype) + " needs " + std::to_string(need));
    return e;
}

void parse_metadata(const json::Value& v, const std::string& source,
                    std::map<std::string, std::string>& out) {
    if (!v.is_object())
        throw Error(source + ": field '__metadata__': expected object, found " + json::type_name(v.type()));
    for (const auto& [k, val] : v.as_object()) {
        if (!val.is_string())
            throw Error(source + ": field '__metadata__." + k + "': expected string, found " +
                        json::type_name(val.type()));
        out[k] = val.as_string();
    }
}

// Two tensors sharing bytes would alias each other's weights: always a broken writer.
void reject_overlaps(const std::vector<SafetensorsEntry>& entries, const std::string& source) {
    std::vector<size_t> order;
    for (size_t i = 0; i < entries.size(); ++i)
        if (entries[i].end > entries[i].begin) order.push_back(i);  // empty tensors occupy nothing
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return entries[a].begin != entries[b].begin ? entries[a].begin < entries[b].begin
                                                    : entries[a].end < entries[b].end;
    });
    for (size_t i = 1; i < order.size(); ++i) {
        const auto& prev = entries[order[i - 1]];
        const auto& cur = entries[order[i]];
        if (cur.begin < prev.end)
            throw Error(tensor_ctx(source, cur.name) + "data_offsets " + range_text(cur.begin, cur.end) +
                        " overlap tensor '" + prev.name + "' " + range_text(prev.begin, prev.end));
    }
}

[[noreturn]] void throw_errno(const std::string& path, const char* what, int err) {
    throw Error(path + ": " + what + ": " + std::strerror(err));
}

}  // namespace

SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, uint64_t file_size,
                                           const std::string& source) {
    if (file_size == 0) throw Error(source + ": file is empty");
    if (file_size < 8)
        throw Error(source + ": file is " + std::to_string(file_size) +
                    " bytes, too short for the 8-byte header length");
    SafetensorsHeader h;
    h.header_len = read_u64_le(bytes);
    if (h.header_len > kMaxHeaderBytes)
        throw Error(source + ": header length " + std::to_string(h.header_len) + " exceeds the limit of " +
                    std::to_string(kMaxHeaderBytes) + " bytes");
    if (h.header_len > file_size - 8)
        throw Error(source + ": header length " + std::to_string(h.header_len) +
                    " runs past the end of the file (" + std::to_string(file_size) + " bytes)");
    h.data_start = 8 + h.header_len;
    const uint64_t data_size = file_size - h.data_start;

    const std::string_view text(reinterpret_cast<const char*>(bytes + 8), h.header_len);
    const json::Value root = json::parse(text, source + ": header JSON");
    if (!root.is_object())
        throw Error(source + ": header: expected a JSON object, found " + json::type_name(root.type()));
    for (const auto& [name, v] : root.as_object()) {
        if (name == "__metadata__") parse_metadata(v, source, h.metadata);
        else h.entries.push_back(parse_entry(name, v, data_size, source));
    }
    reject_overlaps(h.entries, source);
    return h;
}

// ---------------------------------------------------------------------------------------------
// MappedFile

MappedFile::MappedFile(const std::string& path) : path_(path) {
    // Regular files only, opened without blocking: a FIFO named model.safetensors would otherwise
    // hang the load in open() (there is no size cap: checkpoints are mapped, not read).
    const OpenedFile f = open_regular_file(path);
    const int fd = f.fd;
    size_ = f.size;
    if (size_ > 0) {  // mmap of length 0 is invalid; an empty file maps to (nullptr, 0)
        void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw_errno(path, "cannot map", err);
        }
        data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);  // the mapping keeps the file alive
}

MappedFile::~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

// ---------------------------------------------------------------------------------------------
// Checkpoint

namespace {

// A shard name from an index must stay inside the model folder.
void check_shard_name(const std::string& shard, const std::string& tensor, const std::string& index_path) {
    const bool bad = shard.empty() || shard == "." || shard == ".." ||
                     shard.find_first_of(std::string_view("/\\\0", 3)) != std::string::npos;
    if (bad)
        throw Error(index_path + ": weight_map: tensor '" + tensor + "' names shard '" + shard +
                    "', expected a plain file name inside the model folder");
}

}  // namespace

Checkpoint Checkpoint::open(const std::string& dir) {
    namespace fs = std::filesystem;
    Checkpoint cp;

    // Maps one file, validates it and appends its tensors; a name already seen is an error.
    auto load_file = [&cp](const std::string& path) {
        auto map = std::make_shared<MappedFile>(path);
        const SafetensorsHeader h = parse_safetensors_header(map->data(), map->size(), path);
        for (const auto& e : h.entries) {
            const auto seen = cp.index_.find(e.name);
            if (seen != cp.index_.end())
                throw Error(path + ": tensor '" + e.name + "' is also in " + cp.tensors_[seen->second].file);
            TensorView t;
            t.name = e.name;
            t.dtype = e.dtype;
            t.shape = e.shape;
            t.data = map->data() + h.data_start + e.begin;
            t.nbytes = e.end - e.begin;
            t.file = path;
            cp.index_.emplace(e.name, cp.tensors_.size());
            cp.tensors_.push_back(std::move(t));
        }
        cp.maps_.push_back(std::move(map));
        cp.files_.push_back(path);
    };

    std::error_code ec;
    const std::string single = (fs::path(dir) / "model.safetensors").string();
    if (fs::exists(single, ec)) {
        load_file(single);
        return cp;
    }
    const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
    if (!fs::exists(index_path, ec))
        throw Error("no model.safetensors or model.safetensors.index.json in " + dir);

    const json::Value index = json::parse_file(index_path);
    if (!index.is_object())
        throw Error(index_path + ": expected a JSON object, found " + json::type_name(index.type()));
    const json::Value* weight_map = index.find("weight_map");
    if (weight_map == nullptr) throw Error(index_path + ": missing field 'weight_map'");
    if (!weight_map->is_object())
        throw Error(index_path + ": field 'weight_map': expected object, found " +
                    json::type_name(weight_map->type()));
    if (weight_map->size() == 0) throw Error(index_path + ": field 'weight_map' is empty");

    // Each shard is opened once, in the order the index first mentions it.
    std::vector<std::string> shards;
    std::set<std::string> seen_shards;
    for (const auto& [tensor, shard] : weight_map->as_object()) {
        if (!shard.is_string())
            throw Error(index_path + ": field 'weight_map." + tensor + "': expected string, found " +
                        json::type_name(shard.type()));
        check_shard_name(shard.as_string(), tensor, index_path);
        if (seen_shards.insert(shard.as_string()).second) shards.push_back(shard.as_string());
    }
    for (const auto& shard : shards) {
        const std::string path = (fs::path(dir) / shard).string();
        try {
            load_file(path);
        } catch (const Error& e) {
            throw with_context(index_path + ": shard '" + shard + "'", e);
        }
    }
    for (const auto& [tensor, shard] : weight_map->as_object()) {
        const std::string path = (fs::path(dir) / shard.as_string()).string();
        const auto it = cp.index_.find(tensor);
        if (it == cp.index_.end())
            throw Error(index_path + ": tensor '" + tensor + "' is listed in shard '" + shard.as_string() +
                        "', but that shard does not contain it");
        if (cp.tensors_[it->second].file != path)
            throw Error(index_path + ": tensor '" + tensor + "' is listed in shard '" + shard.as_string() +
                        "', but it is in " + cp.tensors_[it->second].file);
    }
    return cp;
}

Checkpoint Checkpoint::from_views(std::vector<TensorView> tensors, std::vector<std::shared_ptr<const void>> owners,
                                  std::vector<std::string> files) {
    Checkpoint cp;
    for (TensorView& t : tensors) {
        if (!cp.index_.emplace(t.name, cp.tensors_.size()).second) throw Error(t.file + ": tensor '" + t.name + "' appears twice");
        cp.tensors_.push_back(std::move(t));
    }
    cp.owners_ = std::move(owners);
    cp.files_ = std::move(files);
    return cp;
}

const TensorView* Checkpoint::find(const std::string& name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

uint64_t Checkpoint::total_bytes() const {
    uint64_t n = 0;
    for (const auto& t : tensors_) n += t.nbytes;
    return n;
}

// ---------------------------------------------------------------------------------------------
// Writing

namespace {

void write_all(int fd, const void* data, uint64_t n, const std::string& tmp) {
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
        const size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, 1u << 30));
        const ssize_t w = ::write(fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR) continue;
            throw_errno(tmp, "cannot write", errno);
        }
        p += w;
        n -= static_cast<uint64_t>(w);
    }
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    // Validate and lay out everything before touching the disk.
    std::vector<std::pair<std::string, json::Value>> header;
    if (!metadata.empty()) {
        std::vector<std::pair<std::string, json::Value>> meta;
        for (const auto& [k, v] : metadata) meta.emplace_back(k, json::Value::make_string(v));
        header.emplace_back("__metadata__", json::Value::make_object(std::move(meta)));
    }
    std::set<std::string> names;
    std::vector<uint64_t> sizes;
    uint64_t offset = 0;
    for (const auto& t : tensors) {
        const std::string ctx = tensor_ctx(path, t.name);
        if (t.name.empty() || t.name == "__metadata__")
            throw Error(path + ": cannot write a tensor named '" + t.name + "'");
        if (!names.insert(t.name).second) throw Error(ctx + "name appears twice");
        if (t.shape.size() > kMaxDims)
            throw Error(ctx + "shape " + shape_text(t.shape) + " has more than " + std::to_string(kMaxDims) +
                        " dimensions");
        for (const int64_t d : t.shape)
            if (d < 0) throw Error(ctx + "shape " + shape_text(t.shape) + " has a negative dimension");
        if (dtype_is_quantized(t.dtype))
            throw Error(ctx + std::string(dtype_name(t.dtype)) + " is a block-quantized type, which safetensors cannot hold");
        const uint64_t n = checked_nbytes(t.shape, t.dtype, ctx);
        if (n > 0 && t.data == nullptr) throw Error(ctx + "data is null");
        if (offset + n < offset || offset + n > static_cast<uint64_t>(INT64_MAX))
            throw Error(ctx + "total data size overflows");
        std::vector<json::Value> shape;
        for (const int64_t d : t.shape) shape.push_back(json::Value::make_number(0, true, d));
        std::vector<std::pair<std::string, json::Value>> entry;
        entry.emplace_back("dtype", json::Value::make_string(safetensors_dtype_name(t.dtype)));
        entry.emplace_back("shape", json::Value::make_array(std::move(shape)));
        entry.emplace_back("data_offsets",
                           json::Value::make_array({json::Value::make_number(0, true, static_cast<int64_t>(offset)),
                                                    json::Value::make_number(0, true, static_cast<int64_t>(offset + n))}));
        header.emplace_back(t.name, json::Value::make_object(std::move(entry)));
        sizes.push_back(n);
        offset += n;
    }
    std::string text = json::Value::make_object(std::move(header)).dump();
    // Pad so the data section starts 8-byte aligned in the file (and therefore in the mapping).
    while (text.size() % 8 != 0) text += ' ';
    uint8_t len_le[8];
    for (int i = 0; i < 8; ++i) len_le[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));

    // Readers never see a half-written file: write a temp file beside it, then rename over.
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw_errno(tmp, "cannot create", errno);
    int open_fd = fd;  // -1 once closed, so the cleanup path never closes a reused descriptor
    try {
        write_all(fd, len_le, 8, tmp);
        write_all(fd, text.data(), text.size(), tmp);
        for (size_t i = 0; i < tensors.size(); ++i) write_all(fd, tensors[i].data, sizes[i], tmp);
        if (::fsync(fd) != 0) throw_errno(tmp, "cannot sync", errno);
        open_fd = -1;
        if (::close(fd) != 0) throw_errno(tmp, "cannot close", errno);
    } catch (...) {
        if (open_fd >= 0) ::close(open_fd);
        ::unlink(tmp.c_str());
        throw;
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw_errno(path, "cannot rename temp file into place", err);
    }
}

}  // namespace mnemo
