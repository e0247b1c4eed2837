// Explicit memories (Memory3, shared/papers/004: §3.1-3.3): what a memory is on the host, where
// the engine gets the memories of a chunk from, and the model facts a memory must match.
//
// A memory is the sparse attention key-values of one reference text: for every explicit-memory
// layer (a layer that reads explicit memories; not a memory layer such as UltraMem's) and
// key-value head, the tokens_per_head reference tokens that received the most attention when the
// reference was encoded (§3.3), keys already rotated by RoPE at their own positions 0..R-1.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mnemo/api.hpp"
#include "mnemo/memory/vq_codebook.hpp"

namespace mnemo {

// The model side of explicit memories. The schedule (tokens_per_head, reference_length,
// chunk_length, references_per_chunk, encode_sequences, retrieval_layer, prefix_ids) is what the
// plugin reports in mnemo_memory_spec; the sizes (memory_layers, kv_heads, head_dim, value_dim,
// blocks, retrieval_dim) the engine reads from the states and graph outputs it declared.
struct MemorySpec {
    std::vector<int32_t> memory_layers;  // the explicit-memory layers (name kept: memory folders and banks store it)
    int32_t kv_heads = 0;
    int32_t head_dim = 0;
    int32_t value_dim = 0;
    int32_t tokens_per_head = 0;
    int32_t reference_length = 0;
    int32_t chunk_length = 0;
    int32_t references_per_chunk = 0;
    int32_t blocks = 0;
    int32_t encode_sequences = 0;
    int32_t retrieval_layer = 0;
    int32_t retrieval_dim = 0;
    std::vector<int32_t> prefix_ids;  // the reference BOS ("<s>Reference:")

    int64_t key_floats() const {
        return static_cast<int64_t>(memory_layers.size()) * kv_heads * tokens_per_head * head_dim;
    }
    int64_t value_floats() const {
        return static_cast<int64_t>(memory_layers.size()) * kv_heads * tokens_per_head * value_dim;
    }
};

// One reference's memory, decoded to f32.
struct ExplicitMemory {
    uint32_t id = 0;                // record number in its memory folder
    int32_t n_valid = 0;            // slots used per head: min(reference tokens, tokens_per_head)
    std::vector<int32_t> indices;   // [L_mem, Hkv, keep] reference token of each slot, ascending; -1 unused
    std::vector<float> keys;        // [L_mem, Hkv, keep, head_dim], RoPE at the token's position
    std::vector<float> values;      // [L_mem, Hkv, keep, value_dim]
    // A compressed memory carries codes instead of keys/values: VQ_DECODE words per vector of
    // its source's codec, [L_mem, Hkv, keep, words]; the engine decodes them on the device.
    std::vector<int32_t> key_codes;
    std::vector<int32_t> value_codes;

    bool compressed() const { return !key_codes.empty(); }
};

// The vector-quantisation codec of a source's compressed memories (keys and values each).
struct MemoryCodec {
    VqCodebook keys;
    VqCodebook values;
};

// What writing a reference produces: its memory and its retrieval vector (the mean hidden state
// after spec.retrieval_layer layers over the reference's tokens, L2-normalised).
struct WrittenMemory {
    ExplicitMemory memory;
    std::vector<float> vector;
};

// The chunk a retrieval is for: its tokens (the query text, §3.1), when the source asked for
// one its retrieval vector computed by the model the same way as a reference's, and the session
// sequence it belongs to (what a source reports per sequence, e.g. the references retrieved).
struct ChunkQuery {
    const std::vector<int32_t>* tokens = nullptr;
    const std::vector<float>* vector = nullptr;
    int32_t seq = -1;
};

// One reference a chunk retrieved (retrieval: choosing the explicit memories of a chunk), as a
// knowledge server describes it (KbSource::last_references) or RetrievalRecorder notes it.
struct RetrievedReference {
    int32_t chunk = 0;    // the chunk that retrieved it: 1, 2, ... since the recorder's last take()
    uint32_t id = 0;      // record id: the bank's, or the line of the memory folder's references.jsonl
    float score = 0;      // the knowledge server's (has_score); a memory folder reports none
    bool has_score = false;
    std::string text;     // the reference's text; empty when a knowledge server was not asked for texts
    std::string title;    // its document's: a knowledge server's, or a memory folder's when it was
    std::string source;   // written with them (mnemo-chat's Add documents); empty when unknown
    std::string doc_id;   // the document it is a piece of: a knowledge server's, or a memory folder's
                          // when it was written with ids (`mnemo memorize`); empty when unknown
    uint64_t doc_version = 0;  // a knowledge server's: the bank version in which that document's
                               // text was added (docs/kb-protocol.md); 0 when unknown
};

// The memory source: where the engine gets a chunk's memories from, a memory folder made by
// `mnemo memorize` (in process) or a knowledge server. Called from the session's thread only.
//
// A source behind a network keeps the network off the critical path with prefetch(): when
// prefetches() is true, the session announces every query before it asks it — a prompt's chunks
// all at once before the first retrieve(); while decoding, the query of the next generated
// chunk in the decode step that completes its text, so a whole step (the model's run over that
// token) passes before retrieve() asks for it. retrieve() is then called with an equal query
// (same seq, tokens and vector). The announcement is only a hint: retrieve() must return what it
// would have without it, and an announced query may never be asked (the sequence ended, was
// reset, or was given another prompt). Memories may come compressed with codec() for the engine
// to decode on its device (ExplicitMemory::key_codes), so a knowledge server (KbSource) can send
// codes only.
class MNEMO_API MemorySource {
public:
    virtual ~MemorySource() = default;
    // True when retrieve() needs ChunkQuery::vector (a pass of the model over the chunk).
    virtual bool wants_vector() const = 0;
    // At most k memories for the chunk, most relevant first.
    virtual std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& query, int32_t k) = 0;
    // One line for logs: "folder DIR (N memories, vector search)".
    virtual std::string describe() const = 0;
    // The codec of compressed memories; nullptr when the source serves f32 keys/values. Read
    // when the source is attached to a session.
    virtual const MemoryCodec* codec() const { return nullptr; }
    // True when the session should announce queries ahead of retrieve() (see above).
    virtual bool prefetches() const { return false; }
    // A query that retrieve() will probably be asked with k; start fetching and return at once.
    virtual void prefetch(const ChunkQuery& query, int32_t k) {
        (void)query;
        (void)k;
    }
};

// A source that passes every call to another one: the base of wrappers that watch what a session
// is given and override retrieve() only (RetrievalRecorder, mnemo/memory/retrieval_recorder.hpp).
class MNEMO_API ForwardingMemorySource : public MemorySource {
public:
    explicit ForwardingMemorySource(std::shared_ptr<MemorySource> inner) : inner_(std::move(inner)) {}
    bool wants_vector() const override { return inner_->wants_vector(); }
    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& query, int32_t k) override {
        return inner_->retrieve(query, k);
    }
    std::string describe() const override { return inner_->describe(); }
    const MemoryCodec* codec() const override { return inner_->codec(); }
    bool prefetches() const override { return inner_->prefetches(); }
    void prefetch(const ChunkQuery& query, int32_t k) override { inner_->prefetch(query, k); }

protected:
    std::shared_ptr<MemorySource> inner_;
};

// Counters a session keeps while it reads memories (for `mnemo bench` and the GUI).
struct MemoryStats {
    uint64_t retrievals = 0;      // chunks that asked the source
    uint64_t memories_read = 0;   // memories placed in blocks (cache hits excluded)
    uint64_t block_uploads = 0;   // blocks (re)written on the device
    uint64_t query_passes = 0;    // ENCODE_QUERY graph runs (retrieval vectors)
    uint64_t retrieve_ns = 0;     // time in MemorySource::retrieve
    uint64_t query_ns = 0;        // time computing retrieval vectors
    uint64_t upload_ns = 0;       // time writing blocks (decoding compressed memories included)
    uint64_t vectors_decoded = 0; // key and value vectors decoded on the device (VQ_DECODE)
};

}  // namespace mnemo
