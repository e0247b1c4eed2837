// A loaded model bound to one backend device, with its per-context state (KV caches) and the
// planned graphs. Buffers are planned once per batch shape and reused: decoding a token allocates
// nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mnemo/api.hpp"
#include "mnemo/abi/plugin_abi.h"
#include "mnemo/memory/explicit_memory.hpp"
#include "mnemo/modules/registry.hpp"

namespace mnemo {

struct SessionOptions {
    std::string model_dir;
    std::string backend = "cpu";
    int32_t device = 0;
    int32_t n_threads = 0;  // 0: backend default
    int32_t n_ctx = 0;      // 0: min(n_ctx_train, 4096) (or 4096 when unknown)
    int32_t n_seq = 1;      // independent sequences
    int32_t n_ubatch = 256; // max tokens per graph run (prompts are split into chunks)
    // dtype of the K/V caches (and of Memory3's explicit memories): MNEMO_DTYPE_F32, _F16 or
    // _Q8_0. f16 halves the cache for logits within ~1e-4 of f32, q8_0 takes about a quarter
    // (head dims must then be multiples of 32). The library keeps f32 unless asked, so a session
    // computes exactly what the model's reference does; the programs (mnemo's --cache-type,
    // mnemo-chat) ask for f16, their default.
    int32_t cache_dtype = MNEMO_DTYPE_F32;
    // Where the memory layers' value tables live (the tables EMBEDDING_BAG, PEER_GATE and HIVE
    // gather rows from, the largest tensors of such a model): Device, copied to the backend's own
    // memory like every weight; or Host, left in the (mmapped) checkpoint and read in place by the
    // device, only the rows each step selects, over the bus on a discrete GPU
    // (MNEMO_CAP_MAP_HOST). For a model whose tables do not fit the device. A device that cannot
    // read host memory refuses Host naming itself.
    enum class MemoryTables { Device, Host };
    MemoryTables memory_tables = MemoryTables::Device;
    bool profile = false;   // collect per-op timings
    // Registries to use (nullptr: the global ones).
    const BackendRegistry* backends = nullptr;
    const PluginRegistry* plugins = nullptr;
    // Where load-time warnings go (a context longer than the model was trained for, with what its
    // KV caches take); empty: stderr, as "mnemo: warning: ...".
    std::function<void(const std::string&)> warn;
};

struct ModelSummary {
    std::string model_dir;
    std::string model_type;
    std::string plugin;
    std::string architecture;
    int64_t vocab_size = 0;
    int64_t n_ctx_train = 0;
    int64_t hidden_size = 0;
    int64_t n_layers = 0;
    int64_t n_params = 0;           // elements of all declared weights
    uint64_t weight_bytes = 0;      // bytes of declared weights as stored
    // Weight bytes one single-token decode step reads: every weight a matmul/norm streams, but
    // only one row of a table that is just gathered from (an untied embedding). This is the
    // numerator of the memory-bandwidth roofline.
    uint64_t decode_weight_bytes = 0;
    int64_t activated_params = 0;   // weight elements one decode token reads (memory rows, experts: only those chosen)
    uint64_t state_bytes = 0;       // KV caches etc. for the chosen n_ctx, n_seq
    uint64_t work_bytes = 0;        // largest activation arena planned so far
    // Bytes allocated through the session's backend device now: weights (uploaded, or host
    // memory wrapped in place), constants, states and the activation arena. Memory a backend
    // keeps for itself (kernel scratch, staging) is not included. device_peak_bytes is the most
    // there ever was at once; device_host_bytes the part of device_bytes that is host memory used
    // in place (mmapped weights on the CPU): resident in the process, not a copy.
    uint64_t device_bytes = 0;
    uint64_t device_peak_bytes = 0;
    uint64_t device_host_bytes = 0;
    uint64_t memory_table_bytes = 0;  // of weight_bytes, the memory-layer value tables (gathered rows)
    bool memory_tables_in_host = false;  // SessionOptions::MemoryTables::Host took effect
    std::string weight_dtypes;      // "f16 (154), f32 (33)"
    std::string device_name;
    std::string backend;
};

// Per-op timing accumulated over runs (when SessionOptions::profile).
struct OpProfile {
    std::string op;
    uint64_t calls = 0;
    uint64_t total_ns = 0;
};

// One row of a batch: token `token` at position `pos` of sequence `seq`.
struct BatchToken {
    int32_t token;
    int32_t pos;
    int32_t seq;
    bool want_logits;
};

// A Session is used from one thread at a time (the backend may use worker threads inside a run).
class MNEMO_API Session {
public:
    static std::unique_ptr<Session> open(const SessionOptions& options);
    ~Session();

    const ModelSummary& summary() const;
    int32_t n_ctx() const;
    int32_t n_seq() const;
    int32_t n_ubatch() const;  // rows one decode() takes at most
    int32_t vocab_size() const;

    // Run one batch of GENERATED tokens (any mix of sequences/positions, at most n_ubatch rows). Returns logits
    // [count(want_logits), vocab] in row order (empty when no row wants logits). Positions must be < n_ctx (else Error "context is
    // full ..."). Tokens must be < vocab.
    const std::vector<float>& decode(const std::vector<BatchToken>& batch);

    // Feed PROMPT `tokens` to sequence `seq` after its current length (split into n_ubatch chunks).
    // The difference to decode() matters for models that read explicit memories: a prompt is cut
    // into chunk_length chunks that each retrieve their own memories; generated tokens keep the
    // last prompt chunk's memories for chunk_length tokens, then retrieve with the text just
    // generated (Memory3 §3.1).
    // segment_starts: offsets in `tokens` where a new retrieval segment begins, e.g. each turn of
    // a conversation fed as one prompt; chunks restart there, so no chunk's retrieval text spans
    // two turns and a whole conversation reads what it read when its turns were fed one by one
    // (docs/memories.md, "Retrieval in a conversation"). Offsets must be increasing and < size.
    // Returns logits of the last token, or of every token when all_logits.
    const std::vector<float>& append(int32_t seq, const std::vector<int32_t>& tokens, bool all_logits = false,
                                     const std::vector<int32_t>& segment_starts = {});
    // Positions already filled in sequence `seq`.
    int32_t seq_length(int32_t seq) const;
    // Forget a sequence (its cache rows are overwritten by the next append).
    void reset(int32_t seq);
    void reset_all();

    // Cancellation: checked between graph runs and between chunks; decode/append throw
    // mnemo::Cancelled when set.
    void set_cancel_flag(const std::atomic<bool>* flag);

    // Explicit memories (models whose plugin reports a memory spec, e.g. memory3).
    bool reads_memories() const;
    const MemorySpec& memory_spec() const;  // throws unless reads_memories()
    // Where chunks get their memories; nullptr: none (the reference BOS alone is read).
    void set_memory_source(std::shared_ptr<MemorySource> source);
    // Encode references (token ids, at most reference_length each) into memories (§3.3), in
    // batches of encode_sequences, on this session's backend.
    std::vector<WrittenMemory> write_memories(const std::vector<std::vector<int32_t>>& references);
    // Retrieval vectors of texts encoded like references (what retrieval compares).
    std::vector<std::vector<float>> retrieval_vectors(const std::vector<std::vector<int32_t>>& texts);
    const MemoryStats& memory_stats() const;
    // SHA-256 (hex) over config.json, every tensor's name, dtype and shape, and the first and
    // last 4 KiB of its data: what a memory folder records to refuse another checkpoint.
    const std::string& model_fingerprint() const;

    std::vector<OpProfile> profile() const;
    void clear_profile();
    void set_threads(int32_t n);

    struct Impl;

private:
    explicit Session(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

class MNEMO_API Cancelled : public std::runtime_error {
public:
    Cancelled() : std::runtime_error("cancelled") {}
};


}  // namespace mnemo
