// A folder of explicit memories made by `mnemo memorize`, and the in-process MemorySource that
// serves it (tests, offline use; a knowledge server is the other memory source, KbSource).
//
// Layout (format 1, every integer and float little-endian):
//   manifest.json     {"format": "mnemo-memories", "version": 1, "model": {model_type,
//                      fingerprint, memory_layers, kv_heads, head_dim, value_dim,
//                      tokens_per_head, prefix_ids, retrieval_layer, retrieval_dim},
//                      "count": N, "encoding": "f32" | "vq", "record_bytes": R,
//                      "codec": {"keys": {"file", "sha256"}, "values": {...}} (vq only)}
//   records.bin       "MNEMOMEM", u32 version 1, u32 R, then N records of R bytes each, record i
//                      holding memory i (format: mnemo/memory/memory_record.hpp)
//   keys.mvqc, values.mvqc  (vq) the codebooks, canonical format (mnemo/memory/vq_codebook.hpp),
//                      checked against the SHA-256 in the manifest
//   vectors.f32       N x retrieval_dim f32: each reference's retrieval vector (unit length)
//   references.jsonl  one {"id", "tokens", "text", "doc_id"?, "title"?, "source"?, "title_tokens"?}
//                      per line (BM25 and display; doc_id: the document the reference is a piece
//                      of, what `mnemo memorize --update` replaces; title and source: that
//                      document's, shown with the reference; title_tokens: the title tokenized,
//                      which BM25 counts with tokens (retrieval_terms.hpp); each absent when
//                      empty, and in folders written before it)
// Records have a fixed size so record i is read without an index; the per-record checksum
// means a damaged record is reported, never decoded into garbage keys.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mnemo/api.hpp"
#include "mnemo/memory/explicit_memory.hpp"
#include "mnemo/memory/memory_record.hpp"
#include "mnemo/session/session.hpp"

namespace mnemo {

struct MemoryReference {
    std::vector<int32_t> tokens;
    std::string text;
    std::string doc_id = {};  // empty: none (the initializer keeps {tokens, text} warning-free)
    std::string title = {};   // the document's title and source (a file path, a URL); empty: none
    std::string source = {};
    std::vector<int32_t> title_tokens = {};  // the title tokenized: BM25 counts them too (retrieval_terms.hpp); empty: none
};

// The facts of the model a session has loaded (throws unless it reads memories).
MNEMO_API MemoryFolderModel memory_folder_model(const Session& session);

// Writes a complete folder atomically: into DIR.partial, then renamed to DIR. An existing DIR
// is an error unless `replace` (then it is swapped out only once the new one is complete).
// Compressed memories (key_codes/value_codes set) need their codec.
MNEMO_API void write_memory_folder(const std::string& dir, const MemoryFolderModel& model, const std::vector<WrittenMemory>& memories,
                         const std::vector<MemoryReference>& references, bool replace, const MemoryCodec* codec = nullptr);

// A folder's manifest model facts and references (to re-encode it, e.g. compress it).
struct MemoryFolderContents {
    MemoryFolderModel model;
    std::vector<WrittenMemory> memories;  // f32 folders: keys/values; vq folders: codes
    std::vector<MemoryReference> references;
    std::unique_ptr<MemoryCodec> codec;   // vq folders
};
MNEMO_API MemoryFolderContents read_memory_folder(const std::string& dir);

enum class RetrievalMode { Vector, BM25 };
MNEMO_API RetrievalMode retrieval_mode_from_name(const std::string& name);  // "vector" | "bm25"

class MNEMO_API FolderMemorySource : public MemorySource {
public:
    // Opens DIR and checks it against the model (fingerprint, model type, every shape);
    // errors name the folder, the file and the field. References scoring below
    // min_relative_score times the chunk's best one are left out, but never the best
    // min_references (count_near_best in mnemo/memory/retrieval_settings.hpp).
    FolderMemorySource(const std::string& dir, const MemoryFolderModel& model, RetrievalMode mode, double min_relative_score = 0,
                       uint32_t min_references = 0);
    ~FolderMemorySource() override;

    bool wants_vector() const override;
    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& query, int32_t k) override;
    std::string describe() const override;

    size_t size() const;
    const MemoryReference& reference(uint32_t id) const;
    // Record `id`, read and checked (CRC) on first use, then kept (the RAM cache of §3.1).
    std::shared_ptr<const ExplicitMemory> load(uint32_t id);
    // The ids retrieve() would return, with their scores (for tests and `mnemo run --verbose`).
    std::vector<std::pair<uint32_t, double>> rank(const ChunkQuery& query, int32_t k) const;
    const MemoryCodec* codec() const override;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace mnemo
