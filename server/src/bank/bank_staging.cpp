#include "bank_staging.hpp"

#include <algorithm>
#include <cstring>

#include "mnemo/error.hpp"
#include "mnemo/memory/memory_record.hpp"
#include "mnemo/memory/vq_codebook.hpp"
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

std::string staging_key(const std::string& fingerprint, size_t batch, size_t count,
                        const std::function<const std::vector<int32_t>&(size_t)>& reference) {
    // The hash of the batches' hashes: the same corpus, batch size and model give the same key,
    // and only one batch's tokens are ever copied at a time.
    std::string h = fingerprint + "\n" + std::to_string(batch) + "\n";
    std::string part;
    for (size_t first = 0; first < count; first += std::max<size_t>(batch, 1)) {
        part.clear();
        for (size_t i = first; i < std::min(count, first + std::max<size_t>(batch, 1)); ++i) {
            const std::vector<int32_t>& r = reference(i);
            put_u32(part, static_cast<uint32_t>(r.size()));
            part.append(reinterpret_cast<const char*>(r.data()), r.size() * 4);
        }
        h += sha256_hex(part);
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

std::string staging_codec_blob(const std::string& key, const std::string& key_factory, const std::string& value_factory,
                               int opq_iterations, int kmeans_iterations, size_t sample, uint64_t seed) {
    const std::string opts = key_factory + "\n" + value_factory + "\n" + std::to_string(opq_iterations) + "\n" +
                             std::to_string(kmeans_iterations) + "\n" + std::to_string(sample) + "\n" + std::to_string(seed);
    return staging_prefix(key) + "codec-" + sha256_hex(opts).substr(0, 16);
}

std::string encode_staged_codec(const MemoryCodec& codec) {
    std::string out = "MNEMOSTC";
    put_u32(out, 1);
    for (const VqCodebook* cb : {&codec.keys, &codec.values}) {
        const std::vector<uint8_t> b = cb->to_bytes();
        put_u32(out, static_cast<uint32_t>(b.size()));
        out.append(reinterpret_cast<const char*>(b.data()), b.size());
    }
    put_u32(out, memory_crc32(out.data(), out.size()));
    return out;
}

std::optional<MemoryCodec> decode_staged_codec(const std::string& b) {
    if (b.size() < 12 + 8 || std::memcmp(b.data(), "MNEMOSTC", 8) != 0 || get_u32(b.data() + 8) != 1) return std::nullopt;
    if (memory_crc32(b.data(), b.size() - 4) != get_u32(b.data() + b.size() - 4)) return std::nullopt;
    MemoryCodec codec;
    size_t at = 12;
    try {
        for (VqCodebook* cb : {&codec.keys, &codec.values}) {
            if (b.size() - 4 - at < 4) return std::nullopt;
            const uint32_t n = get_u32(b.data() + at);
            at += 4;
            if (b.size() - 4 - at < n) return std::nullopt;
            *cb = parse_vq_codebook(b.data() + at, n, "codec checkpoint", "");
            at += n;
        }
    } catch (const Error&) {
        return std::nullopt;
    }
    if (at != b.size() - 4) return std::nullopt;
    return codec;
}

void remove_staging(BankStorage& storage) {
    for (const std::string& name : storage.list())
        if (name.rfind("staging-", 0) == 0) storage.remove_blob(name);
}

}  // namespace mnemo::kb
