// The bank's files on storage (server/README.md, "Bank format"): blob names, the manifest as a
// struct and as JSON, and the segment header. Both the writer and Bank::open go through here, so
// what one writes is exactly what the other checks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bank_storage.hpp"
#include "mnemo/memory/memory_record.hpp"

namespace mnemo::kb {

constexpr const char* kBankFormat = "mnemo-kb-bank";
// 1: every record is live. 2: the manifest retires records ("retired"). A version with retired
// records is written as format 2 so that a reader that does not know retirement refuses it
// instead of serving replaced or deleted documents; one without stays format 1 (a compacted bank
// is readable by every release).
constexpr int64_t kBankFormatVersion = 1;
constexpr int64_t kBankFormatRetired = 2;
constexpr const char* kCurrentPointer = "CURRENT";
// Largest manifest read (BankStorage::read_blob's cap; CURRENT's is kMaxPointerBytes,
// bank_storage.hpp): a manifest lists segments, a few hundred bytes each. Anything larger is not
// a bank's.
constexpr uint64_t kMaxManifestBytes = 64ull << 20;

// A blob the manifest names, with what it must be.
struct BlobRef {
    std::string file;
    std::string sha256;
    uint64_t bytes = 0;
};

struct SegmentEntry {
    BlobRef records;   // "seg-<version>-<n>.rec": header + count records of record_bytes
    uint32_t first_id = 0;
    uint32_t count = 0;
    BlobRef texts;     // JSONL, one reference per line, ids first_id.. in order
    BlobRef vectors;   // count x retrieval_dim f32, little-endian
};

// Consecutive record ids [first, first + count): a document's references are cut and written
// together, so retiring a document is one range, whatever its length.
struct IdRange {
    uint32_t first = 0;
    uint32_t count = 0;
    bool operator==(const IdRange& o) const { return first == o.first && count == o.count; }
};

struct TokenizerFile {
    std::string name;  // the model folder's file name ("tokenizer.json")
    BlobRef blob;
};

// The retrieval indexes a writer stored for its version (server/README.md, "Retrieval index").
// JSON: "index": {"vectors": {"kind": "flat", "count": N} or {"kind": "ivf-flat", "count": N,
// "lists": L, "file", "sha256", "bytes"}, "bm25": {"file", "sha256", "bytes"}}. Absent in
// versions written before stored indexes: Bank::open then builds them at open. Readers that
// predate the field ignore it (and build at open), so it needs no new format_version.
struct BankIndexEntry {
    std::string vectors_kind;   // kIndexFlat (not stored: the vectors blobs are the index) or kIndexIvfFlat
    uint64_t vectors_count = 0; // vectors indexed: the version's live records
    uint32_t lists = 0;         // ivf-flat: inverted lists
    BlobRef vectors;            // ivf-flat: the FAISS index (bank_vector_index.hpp)
    BlobRef bm25;               // the BM25 index (bm25_store.hpp)
};
constexpr const char* kIndexFlat = "flat";
constexpr const char* kIndexIvfFlat = "ivf-flat";

// How well the codec reconstructs the memories of the build that trained it: the relative squared
// error of their keys and of their values (valid slots; compress.hpp's CodecFit) over `records`
// memories. `add` compares the memories it encodes with it (bank_codec_fit.hpp). JSON: "codec":
// {..., "fit": {"keys": e, "values": e, "records": N}}; absent in banks built before it (older
// readers ignore it, so it needs no new format_version).
struct CodecFitFigures {
    double keys = 0, values = 0;
    uint64_t records = 0;
};

struct BankManifest {
    uint64_t version = 0;
    std::string created;  // UTC, ISO 8601
    MemoryFolderModel model;
    std::string key_factory, value_factory;  // what trained the codec (information only)
    std::optional<CodecFitFigures> codec_fit;
    BlobRef keys_codebook, values_codebook;
    uint64_t record_bytes = 0;
    uint64_t count = 0;
    std::vector<SegmentEntry> segments;
    std::vector<TokenizerFile> tokenizer;  // empty: the bank has no tokenizer
    // Records of this version that are retired (their document was replaced or deleted): still in
    // their segments, never retrieved or served. Sorted, disjoint, not touching, inside [0, count).
    // JSON: "retired": [[first_id, count], ...], present only in format 2.
    std::vector<IdRange> retired;
    std::optional<BankIndexEntry> index;  // see BankIndexEntry
};

// Every blob a manifest names (not the manifest itself), in manifest order, with what it is
// ("segment", "texts", "bm25 index", ...): what verify reads, copy copies and clean-up keeps.
struct NamedBlob {
    std::string kind;
    BlobRef blob;
    const SegmentEntry* segment = nullptr;  // the segment a "segment" blob holds the records of
};
std::vector<NamedBlob> manifest_blobs(const BankManifest& m);

std::string manifest_name(uint64_t version);  // "manifest-000007.json"
// A version's index blobs: "index-000007.ivf", "bm25-000007.bin".
std::string index_blob_name(const char* kind, uint64_t version, const char* ext);
// A version's n-th segment blob of a kind: "seg-000007-0002.rec", "texts-...jsonl", "vectors-...f32".
std::string segment_blob_name(const char* kind, uint64_t version, size_t n, const char* ext);
// The version such a name was written by, or 0 when `file` is not a name of that form.
uint64_t version_in_segment_name(const std::string& file, const char* kind);
// The version a CURRENT pointer's content names; Error (prefixed with `where`) when malformed.
uint64_t parse_current_pointer(std::string_view content, const std::string& where);
std::string current_pointer_content(uint64_t version);

std::string manifest_to_json(const BankManifest& m);
// Checks every field's presence, type and bounds, and that segments are contiguous from id 0
// and add up to count. `where` prefixes errors ("folder 'B': manifest-000002.json").
BankManifest manifest_from_json(std::string_view text, const std::string& where);

// Segment files: "MNEMOSEG", u32 format 1, u32 record_bytes, u32 first_id, u32 count, then count
// records of record_bytes each (record i of the file holds id first_id + i).
constexpr size_t kSegmentHeaderBytes = 24;
std::string segment_header(uint64_t record_bytes, uint32_t first_id, uint32_t count);
void check_segment_header(const uint8_t* header, const SegmentEntry& seg, uint64_t record_bytes, const std::string& where);

// A whole blob the manifest names, its size and SHA-256 checked: mnemo::Error naming the storage,
// `what` ("texts") and the blob when it is missing, of another size or of other bytes.
class BankStorage;
std::string read_checked_blob(const BankStorage& storage, const BlobRef& blob, const std::string& what);

// The current time as "2024-05-01T12:00:00Z".
std::string utc_now();

}  // namespace mnemo::kb
