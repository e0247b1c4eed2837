// One explicit memory as bytes: the fixed-size record that memory folders (records.bin), the
// knowledge server's bank segments and its FetchMemories replies all carry, and the model facts
// a set of records was made for. One format everywhere means a record read from a socket is
// checked exactly like one read from disk (magic, id, CRC-32 of the payload, shapes).
//
// Record layout (every integer and float little-endian):
//   u32 magic "M3RC", u32 record id, u32 n_valid, u32 CRC-32 (IEEE) of the payload,
//   payload = i32 indices[L][H][keep], then
//     f32: f32 keys[L][H][keep][D], f32 values[L][H][keep][Dv]
//     vq:  key codes[L][H][keep][ck], value codes[L][H][keep][cv] (the FAISS code bytes of each
//          vector, ck/cv = the codecs' code sizes)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "mnemo/api.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/memory/explicit_memory.hpp"

namespace mnemo {

// What a set of memories was made for: it must match the model that reads it.
struct MemoryFolderModel {
    std::string model_type;
    std::string fingerprint;
    MemorySpec spec;
};

// Bytes of one record (header included) for this model and codec (nullptr: f32 keys/values).
MNEMO_API uint64_t memory_record_bytes(const MemorySpec& spec, const MemoryCodec* codec);

// The record of memory `id`. Throws mnemo::Error when the memory does not have the spec's shape.
MNEMO_API std::string encode_memory_record(const ExplicitMemory& memory, uint32_t id, const MemorySpec& spec, const MemoryCodec* codec);

// Parses and checks one record: `size` must be memory_record_bytes(spec, codec), the magic, the
// id (`expected_id`), the checksum, n_valid and (f32) the finiteness of every key and value.
// `where` ("bank 'B': segment 3: record 17") prefixes every error.
MNEMO_API std::shared_ptr<ExplicitMemory> decode_memory_record(const uint8_t* data, size_t size, uint32_t expected_id,
                                                               const MemorySpec& spec, const MemoryCodec* codec, const std::string& where);

// The checks of decode_memory_record without the decoding (no allocation): for a reader that only
// passes records on (the knowledge server checks every record it sends; the device decodes it).
MNEMO_API void check_memory_record(const uint8_t* data, size_t size, uint32_t expected_id, const MemorySpec& spec,
                                   const MemoryCodec* codec, const std::string& where);

// The record id a record says it holds (its header), or nothing when it is too short or its
// magic is wrong: for a reader that must learn the id before it can check the rest.
MNEMO_API bool memory_record_id(const uint8_t* data, size_t size, uint32_t* id);

// CRC-32 (IEEE 802.3, the zlib polynomial) of bytes.
MNEMO_API uint32_t memory_crc32(const void* data, size_t size);

// The model facts as the "model" object of a memory folder's or a bank's manifest, and back.
// from_json checks types and bounds (far above any model, low enough that record sizes never
// overflow); errors start with `where`.
MNEMO_API json::Value memory_model_to_json(const MemoryFolderModel& model);
MNEMO_API MemoryFolderModel memory_model_from_json(const json::Value& model, const std::string& where);

// Throws mnemo::Error, prefixed by `where`, naming the first field in which memories made for
// `got` cannot be read by a session of `want` (model type, fingerprint, shapes, prefix), and,
// with a codec, when its codebooks do not decode the model's head dimensions.
MNEMO_API void check_memory_model(const MemoryFolderModel& got, const MemoryFolderModel& want, const MemoryCodec* codec,
                                  const std::string& where);

}  // namespace mnemo
