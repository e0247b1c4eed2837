#include "bank_staging.hpp"

#include <cstring>

#include "mnemo/error.hpp"
#include "mnemo/memory/memory_record.hpp"
#include "sha256_hex.hpp"

namespace mnemo::kb {
namespace {

constexpr size_t kHeader = 24;

void put_u32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t get_u32(const char* p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
    return v;
}

}  // namespace

std::string staging_key(const std::string& fingerprint, size_t batch, const std::vector<std::vector<int32_t>>& references) {
    std::string h = fingerprint + "\n" + std::to_string(batch) + "\n";
    for (const auto& r : references) {
        put_u32(h, static_cast<uint32_t>(r.size()));
        h.append(reinterpret_cast<const char*>(r.data()), r.size() * 4);
    }
    return sha256_hex(h).substr(0, 16);
}

std::string staging_prefix(const std::string& key) { return "staging-" + key + "-"; }

std::string staging_blob(const std::string& key, size_t batch_index) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "batch-%06zu", batch_index);
    return staging_prefix(key) + buf;
}

std::string encode_staged_batch(const std::vector<WrittenMemory>& memories, const MemorySpec& spec) {
    const uint64_t rb = memory_record_bytes(spec, nullptr);
    const auto dim = static_cast<size_t>(spec.retrieval_dim);
    std::string out = "MNEMOSTG";
    put_u32(out, 1);
    put_u32(out, static_cast<uint32_t>(memories.size()));
    put_u32(out, static_cast<uint32_t>(rb));
    put_u32(out, static_cast<uint32_t>(dim));
    for (size_t i = 0; i < memories.size(); ++i) {
        out += encode_memory_record(memories[i].memory, static_cast<uint32_t>(i), spec, nullptr);
        if (memories[i].vector.size() != dim) throw Error("staging: memory " + std::to_string(i) + " has no retrieval vector of " + std::to_string(dim));
        out.append(reinterpret_cast<const char*>(memories[i].vector.data()), dim * 4);
    }
    put_u32(out, memory_crc32(out.data(), out.size()));
    return out;
}

std::optional<std::vector<WrittenMemory>> decode_staged_batch(const std::string& b, const MemorySpec& spec, size_t expected_count) {
    const uint64_t rb = memory_record_bytes(spec, nullptr);
    const auto dim = static_cast<size_t>(spec.retrieval_dim);
    if (b.size() < kHeader + 4 || std::memcmp(b.data(), "MNEMOSTG", 8) != 0 || get_u32(b.data() + 8) != 1) return std::nullopt;
    if (get_u32(b.data() + 12) != expected_count || get_u32(b.data() + 16) != rb || get_u32(b.data() + 20) != dim) return std::nullopt;
    if (b.size() != kHeader + expected_count * (rb + dim * 4) + 4) return std::nullopt;
    if (memory_crc32(b.data(), b.size() - 4) != get_u32(b.data() + b.size() - 4)) return std::nullopt;
    std::vector<WrittenMemory> out(expected_count);
    const char* p = b.data() + kHeader;
    try {
        for (size_t i = 0; i < expected_count; ++i) {
            out[i].memory = *decode_memory_record(reinterpret_cast<const uint8_t*>(p), rb, static_cast<uint32_t>(i), spec, nullptr, "staging");
            p += rb;
            out[i].vector.resize(dim);
            std::memcpy(out[i].vector.data(), p, dim * 4);
            p += dim * 4;
        }
    } catch (const Error&) {
        return std::nullopt;
    }
    return out;
}

void remove_staging(BankStorage& storage) {
    for (const std::string& name : storage.list())
        if (name.rfind("staging-", 0) == 0) storage.remove_blob(name);
}

}  // namespace mnemo::kb
