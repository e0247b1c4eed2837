// Memory records (mnemo/memory/memory_record.hpp): encoding, checked decoding, and the model
// facts a record set carries in its manifest.
#include "mnemo/memory/memory_record.hpp"

#include <array>
#include <cmath>
#include <cstring>

#include "mnemo/error.hpp"
#include "io/json_fields.hpp"

namespace mnemo {

using namespace json_fields;  // member, int_member, string_member, int_list

namespace {

constexpr uint32_t kRecordMagic = 0x4352334Du;  // "M3RC" little-endian
constexpr uint64_t kRecordHeader = 16;

uint64_t slots_of(const MemorySpec& s) {
    return static_cast<uint64_t>(s.memory_layers.size()) * static_cast<uint64_t>(s.kv_heads) * static_cast<uint64_t>(s.tokens_per_head);
}

void put_u32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
uint32_t get_u32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
           static_cast<uint32_t>(p[3]) << 24;
}
template <class T>
void put_array(std::string& out, const std::vector<T>& v) {
    static_assert(sizeof(T) == 4);
    for (const T& x : v) {
        uint32_t u;
        std::memcpy(&u, &x, 4);
        put_u32(out, u);
    }
}
// The code bytes of every vector (FAISS's layout) out of VQ_DECODE's words.
void put_codes(std::string& out, const std::vector<int32_t>& words, size_t n, size_t per_words, size_t code_size) {
    for (size_t i = 0; i < n; ++i)
        for (size_t byte = 0; byte < code_size; ++byte)
            out.push_back(static_cast<char>((static_cast<uint32_t>(words[i * per_words + byte / 4]) >> (8 * (byte % 4))) & 0xFF));
}
// memcpy that accepts empty ranges (an empty vector's data() may be null, which memcpy forbids).
void copy_bytes(void* dst, const void* src, size_t n) {
    if (n) std::memcpy(dst, src, n);
}

json::Value num(int64_t x) { return json::Value::make_number(static_cast<double>(x), true, x); }


}  // namespace

uint32_t memory_crc32(const void* data, size_t size) {
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    uint32_t c = 0xFFFFFFFFu;
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint64_t memory_record_bytes(const MemorySpec& s, const MemoryCodec* codec) {
    const uint64_t slots = slots_of(s);
    if (codec) return kRecordHeader + slots * 4 + slots * codec->keys.code_size() + slots * codec->values.code_size();
    return kRecordHeader + slots * 4 + slots * static_cast<uint64_t>(s.head_dim) * 4 + slots * static_cast<uint64_t>(s.value_dim) * 4;
}

std::string encode_memory_record(const ExplicitMemory& m, uint32_t id, const MemorySpec& s, const MemoryCodec* codec) {
    const uint64_t slots = slots_of(s);
    const bool shape_ok = codec ? m.key_codes.size() == slots * codec->keys.code_words() &&
                                      m.value_codes.size() == slots * codec->values.code_words()
                                : m.keys.size() == slots * s.head_dim && m.values.size() == slots * s.value_dim;
    if (m.indices.size() != slots || !shape_ok) throw Error("memory " + std::to_string(id) + " does not have the model's shape");
    std::string body;
    put_array(body, m.indices);
    if (codec) {
        put_codes(body, m.key_codes, slots, codec->keys.code_words(), codec->keys.code_size());
        put_codes(body, m.value_codes, slots, codec->values.code_words(), codec->values.code_size());
    } else {
        put_array(body, m.keys);
        put_array(body, m.values);
    }
    std::string rec;
    rec.reserve(kRecordHeader + body.size());
    put_u32(rec, kRecordMagic);
    put_u32(rec, id);
    put_u32(rec, static_cast<uint32_t>(m.n_valid));
    put_u32(rec, memory_crc32(body.data(), body.size()));
    rec += body;
    return rec;
}

bool memory_record_id(const uint8_t* data, size_t size, uint32_t* id) {
    if (size < kRecordHeader || get_u32(data) != kRecordMagic) return false;
    *id = get_u32(data + 4);
    return true;
}

void check_memory_record(const uint8_t* data, size_t size, uint32_t id, const MemorySpec& s, const MemoryCodec* codec,
                         const std::string& where) {
    const uint64_t want = memory_record_bytes(s, codec);
    if (size != want) throw Error(where + ": holds " + std::to_string(size) + " bytes, a record has " + std::to_string(want));
    if (get_u32(data) != kRecordMagic) throw Error(where + ": bad record magic (damaged data)");
    if (get_u32(data + 4) != id) throw Error(where + ": holds record " + std::to_string(get_u32(data + 4)) + " (damaged data)");
    if (get_u32(data + 12) != memory_crc32(data + kRecordHeader, size - kRecordHeader))
        throw Error(where + ": checksum mismatch (the record is damaged; write the memories again)");
    const uint32_t n_valid = get_u32(data + 8);
    if (n_valid > static_cast<uint32_t>(s.tokens_per_head))
        throw Error(where + ": uses " + std::to_string(n_valid) + " slots per head, at most " + std::to_string(s.tokens_per_head));
}

std::shared_ptr<ExplicitMemory> decode_memory_record(const uint8_t* data, size_t size, uint32_t id, const MemorySpec& s,
                                                     const MemoryCodec* codec, const std::string& where) {
    check_memory_record(data, size, id, s, codec, where);
    const uint32_t n_valid = get_u32(data + 8);
    auto mem = std::make_shared<ExplicitMemory>();
    mem->id = id;
    mem->n_valid = static_cast<int32_t>(n_valid);
    const size_t slots = static_cast<size_t>(slots_of(s));
    mem->indices.resize(slots);
    const uint8_t* p = data + kRecordHeader;
    copy_bytes(mem->indices.data(), p, slots * 4);
    p += slots * 4;
    if (codec) {
        const VqCodebook& kc = codec->keys;
        const VqCodebook& vc = codec->values;
        mem->key_codes = vq_code_words(p, slots, kc.code_size(), kc.code_words());
        p += slots * kc.code_size();
        mem->value_codes = vq_code_words(p, slots, vc.code_size(), vc.code_words());
        return mem;
    }
    mem->keys.resize(slots * static_cast<size_t>(s.head_dim));
    mem->values.resize(slots * static_cast<size_t>(s.value_dim));
    copy_bytes(mem->keys.data(), p, mem->keys.size() * 4);
    p += mem->keys.size() * 4;
    copy_bytes(mem->values.data(), p, mem->values.size() * 4);
    for (float x : mem->keys)
        if (!std::isfinite(x)) throw Error(where + ": holds a key that is not finite");
    for (float x : mem->values)
        if (!std::isfinite(x)) throw Error(where + ": holds a value that is not finite");
    return mem;
}

json::Value memory_model_to_json(const MemoryFolderModel& m) {
    const MemorySpec& s = m.spec;
    return json::Value::make_object({{"model_type", json::Value::make_string(m.model_type)},
                                     {"fingerprint", json::Value::make_string(m.fingerprint)},
                                     {"memory_layers", json::Value::make_int_array(s.memory_layers)},
                                     {"kv_heads", num(s.kv_heads)},
                                     {"head_dim", num(s.head_dim)},
                                     {"value_dim", num(s.value_dim)},
                                     {"tokens_per_head", num(s.tokens_per_head)},
                                     {"prefix_ids", json::Value::make_int_array(s.prefix_ids)},
                                     {"retrieval_layer", num(s.retrieval_layer)},
                                     {"retrieval_dim", num(s.retrieval_dim)}});
}

MemoryFolderModel memory_model_from_json(const json::Value& mm, const std::string& mw) {
    if (!mm.is_object()) throw Error(mw + " must be an object");
    MemoryFolderModel m;
    m.model_type = string_member(mm, "model_type", mw);
    m.fingerprint = string_member(mm, "fingerprint", mw);
    MemorySpec& s = m.spec;
    s.memory_layers = int_list(mm, "memory_layers", mw);
    s.prefix_ids = int_list(mm, "prefix_ids", mw);
    auto bounded = [&](const char* key, int64_t max) {
        const int64_t v = int_member(mm, key, mw);
        if (v < 0 || v > max) throw Error(mw + ": field '" + key + "' is " + std::to_string(v) + ", expected 0.." + std::to_string(max));
        return static_cast<int32_t>(v);
    };
    s.kv_heads = bounded("kv_heads", 4096);
    s.head_dim = bounded("head_dim", 65536);
    s.value_dim = bounded("value_dim", 65536);
    s.tokens_per_head = bounded("tokens_per_head", 4096);
    s.retrieval_layer = bounded("retrieval_layer", 65536);
    s.retrieval_dim = bounded("retrieval_dim", 1 << 20);
    if (s.memory_layers.size() > 4096) throw Error(mw + ": field 'memory_layers' lists more than 4096 layers");
    return m;
}

void check_memory_model(const MemoryFolderModel& got, const MemoryFolderModel& model, const MemoryCodec* codec, const std::string& where) {
    const std::string mw = where + ": model";
    if (got.model_type != model.model_type)
        throw Error(mw + ".model_type is " + got.model_type + ", the loaded model is " + model.model_type);
    if (got.fingerprint != model.fingerprint)
        throw Error(mw + ".fingerprint differs from the loaded model's (" + model.fingerprint.substr(0, 12) +
                    "...): these memories were made with another checkpoint; write them again with `mnemo memorize`");
    const MemorySpec& a = got.spec;
    const MemorySpec& s = model.spec;
    auto expect = [&](const char* key, int64_t have, int64_t want) {
        if (have != want) throw Error(mw + "." + key + " is " + std::to_string(have) + ", the loaded model has " + std::to_string(want));
    };
    if (a.memory_layers != s.memory_layers) throw Error(mw + ".memory_layers differ from the loaded model's");
    expect("kv_heads", a.kv_heads, s.kv_heads);
    expect("head_dim", a.head_dim, s.head_dim);
    expect("value_dim", a.value_dim, s.value_dim);
    expect("tokens_per_head", a.tokens_per_head, s.tokens_per_head);
    expect("retrieval_layer", a.retrieval_layer, s.retrieval_layer);
    expect("retrieval_dim", a.retrieval_dim, s.retrieval_dim);
    if (a.prefix_ids != s.prefix_ids) throw Error(mw + ".prefix_ids differ from the loaded model's");
    if (codec && (static_cast<int32_t>(codec->keys.d_in) != s.head_dim || static_cast<int32_t>(codec->values.d_in) != s.value_dim))
        throw Error(where + ": the codebooks decode " + std::to_string(codec->keys.d_in) + "/" + std::to_string(codec->values.d_in) +
                    "-dimensional keys/values, the model's heads have " + std::to_string(s.head_dim) + "/" + std::to_string(s.value_dim));
}

}  // namespace mnemo
