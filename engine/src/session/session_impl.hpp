// Session internals shared by the files that implement it (session.cpp: loading, planning and
// running graphs; session_memory.cpp: explicit memories).
#pragma once

#include <algorithm>
#include <map>
#include <tuple>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/memory/explicit_memory.hpp"
#include "mnemo/io/safetensors.hpp"
#include "mnemo/session/session.hpp"
#include "modules/model_host.hpp"

namespace mnemo {

using detail::GraphBuilder;
using detail::MemoryPlan;
using detail::ModelHost;
using detail::ParamDecl;
using detail::ParamKind;

namespace session_detail {

constexpr uint64_t kArenaAlignment = 256;  // enough for any backend's storage-buffer offset rule
constexpr int32_t kDefaultCtx = 4096;

// A backend device context and the buffers made on it, released in reverse order.
class Device {
public:
    Device(const BackendModule& module, int32_t device, int32_t threads) : api_(module.api), name_(module.name) {
        const int32_t count = api_->device_count();
        if (device < 0 || device >= count)
            throw Error("backend '" + name_ + "' has " + std::to_string(count) + " device(s); device " +
                        std::to_string(device) + " does not exist");
        if (api_->device_info(device, &info_) != MNEMO_OK) throw Error("backend '" + name_ + "': cannot query device " + std::to_string(device));
        mnemo_backend_config cfg{threads};
        mnemo_error err{};
        if (api_->open(device, &cfg, &ctx_, &err) != MNEMO_OK)
            throw Error("backend '" + name_ + "': cannot open device " + std::to_string(device) + ": " + err.message);
    }
    ~Device() {
        for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it) api_->buffer_free(ctx_, *it);
        if (ctx_) api_->close(ctx_);
    }
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    const mnemo_backend_api* api() const { return api_; }
    void* ctx() const { return ctx_; }
    const mnemo_device_info& info() const { return info_; }
    const std::string& name() const { return name_; }

    void* alloc(uint64_t bytes, const std::string& what) {
        void* b = nullptr;
        mnemo_error err{};
        const uint64_t size = std::max<uint64_t>(bytes, 1);
        if (api_->buffer_alloc(ctx_, size, &b, &err) != MNEMO_OK)
            throw Error(name_ + ": cannot allocate " + std::to_string(bytes) + " bytes for " + what + ": " + err.message);
        track(b, size, false);
        return b;
    }
    // Use host memory in place when the backend can (mmapped weights on the CPU, or imported by a
    // unified-memory GPU), else copy; a pointer the backend refuses is copied too.
    void* wrap_or_upload(const void* host, uint64_t bytes, const std::string& what) {
        if (api_->buffer_from_host && (info_.caps & (MNEMO_CAP_HOST_MEMORY | MNEMO_CAP_IMPORT_HOST))) {
            void* b = nullptr;
            mnemo_error err{};
            if (api_->buffer_from_host(ctx_, const_cast<void*>(host), bytes, &b, &err) == MNEMO_OK) {
                track(b, bytes, true);
                return b;
            }
        }
        void* b = alloc(bytes, what);
        write(b, 0, host, bytes, what);
        return b;
    }
    void release(void* buffer) {
        auto it = std::find(buffers_.begin(), buffers_.end(), buffer);
        if (it != buffers_.end()) {
            api_->buffer_free(ctx_, buffer);
            const size_t i = static_cast<size_t>(it - buffers_.begin());
            bytes_ -= sizes_[i].bytes;
            if (sizes_[i].host) host_bytes_ -= sizes_[i].bytes;
            buffers_.erase(it);
            sizes_.erase(sizes_.begin() + static_cast<long>(i));
        }
    }
    // Bytes of the buffers made here that are alive now, the most there ever were at once, and
    // how many of the live ones are host memory used in place (mmapped weights on the CPU: they
    // count as resident memory of the process rather than as copies the backend made).
    uint64_t bytes() const { return bytes_; }
    uint64_t peak_bytes() const { return peak_bytes_; }
    uint64_t host_bytes() const { return host_bytes_; }
    void write(void* buffer, uint64_t offset, const void* src, uint64_t bytes, const std::string& what) {
        mnemo_error err{};
        if (api_->buffer_write(ctx_, buffer, offset, src, bytes, &err) != MNEMO_OK)
            throw Error(name_ + ": writing " + what + ": " + err.message);
    }
    void read(void* buffer, uint64_t offset, void* dst, uint64_t bytes, const std::string& what) {
        mnemo_error err{};
        if (api_->buffer_read(ctx_, buffer, offset, dst, bytes, &err) != MNEMO_OK)
            throw Error(name_ + ": reading " + what + ": " + err.message);
    }

private:
    struct Size {
        uint64_t bytes;
        bool host;
    };
    void track(void* buffer, uint64_t bytes, bool host) {
        buffers_.push_back(buffer);
        sizes_.push_back({bytes, host});
        bytes_ += bytes;
        if (host) host_bytes_ += bytes;
        peak_bytes_ = std::max(peak_bytes_, bytes_);
    }

    const mnemo_backend_api* api_;
    std::string name_;
    mnemo_device_info info_{};
    void* ctx_ = nullptr;
    std::vector<void*> buffers_;
    std::vector<Size> sizes_;  // parallel to buffers_
    uint64_t bytes_ = 0;
    uint64_t peak_bytes_ = 0;
    uint64_t host_bytes_ = 0;
};

// A plugin's model instance (destroyed through the plugin).
struct PluginModel {
    const mnemo_plugin_api* api = nullptr;
    void* model = nullptr;
    ~PluginModel() {
        if (model) api->destroy(model);
    }
};

inline std::string plural(uint64_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

}  // namespace session_detail
using namespace session_detail;

struct PlannedGraph {
    std::vector<detail::GraphNode> nodes;
    MemoryPlan memory;
    int32_t output = -1;
    int32_t purpose = MNEMO_GRAPH_LOGITS;
    std::vector<std::pair<std::string, int32_t>> named;  // ENCODE outputs: name -> node
    uint64_t input_offset[detail::kInputKinds] = {};
    bool has_input[detail::kInputKinds] = {};
    std::vector<int32_t> op_of_node;  // op id of each backend node, for profiles
    void* backend_graph = nullptr;    // prepared on the current arena
};

// The memories one chunk reads (Memory3 §3.1: up to references_per_chunk of them).
struct MemorySet {
    std::vector<std::shared_ptr<const ExplicitMemory>> memories;
    int32_t slots = 0;  // sum of their n_valid: memory slots per head in a block
};

// Where a sequence is in the chunk schedule of §3.1.
struct SeqMemory {
    std::vector<int32_t> tokens;  // the token fed at each position (query text of decoded chunks)
    int32_t gen_start = 0;        // first position after the last prompt
    std::shared_ptr<const MemorySet> prompt_last;  // memories of the last prompt chunk
    int32_t gen_chunk = -1;       // decoded chunk gen_set belongs to
    std::shared_ptr<const MemorySet> gen_set;
};

// The engine's side of a model that reads explicit memories: the states it fills (see
// mnemo_memory_spec), the reference BOS keys/values, which set each block holds.
struct MemoryState {
    MemorySpec spec;
    std::shared_ptr<MemorySource> source;
    struct Layer {
        int32_t k = -1, v = -1;  // state ids of memory.k.<l>, memory.v.<l>
        int64_t blocks = 0, slots = 0;
        int32_t memory_index = -1;  // position in spec.memory_layers, -1 for other layers
    };
    std::vector<Layer> layers;
    int32_t len_state = -1;
    std::vector<std::vector<float>> bos_k, bos_v;  // per layer [Hkv, n_prefix, D] (positions -b..-1)
    std::vector<std::shared_ptr<const MemorySet>> block_set;  // resident set of each block
    std::vector<uint64_t> block_stamp;                        // last use, for eviction
    uint64_t clock = 0;
    std::vector<SeqMemory> seqs;
    std::shared_ptr<const MemorySet> empty = std::make_shared<MemorySet>();
    // Scratch of the binding of one run, kept so that a decode step allocates nothing.
    std::vector<std::shared_ptr<const MemorySet>> run_sets;  // distinct sets of the run
    std::vector<int32_t> row_set, row_chunk, block_of;        // per row / per set
    std::vector<char> taken;                                  // per block

    // Compressed memories: the source's codebooks on the device, a codes buffer per key/value
    // ([blocks][L_mem][Hkv][M][words] i32) and, per block, a prepared graph of VQ_DECODE nodes
    // that writes the block's memory slots of every memory layer and head in place.
    struct Codec {
        std::vector<void*> buffers;  // every device buffer below, for release
        void* key_codes = nullptr;
        void* value_codes = nullptr;
        uint32_t key_words = 0, value_words = 0;
        std::vector<mnemo_node> templates;  // per (K/V, layer, head) for block 0
        std::vector<void*> block_graphs;    // prepared lazily
        std::string key_sha, value_sha;     // the codebooks uploaded
    };
    std::unique_ptr<Codec> codec;
};

struct Session::Impl {
    SessionOptions options;
    json::Value config;
    Checkpoint checkpoint;
    const PluginModule* plugin = nullptr;
    std::unique_ptr<ModelHost> host;
    PluginModel model;
    mnemo_model_info info{};
    std::unique_ptr<Device> device;
    std::vector<void*> param_buffers;
    ModelSummary summary;
    int32_t n_ctx = 0;
    int32_t n_seq = 1;

    void* arena = nullptr;
    uint64_t arena_bytes = 0;
    std::map<std::tuple<int32_t, int64_t, int64_t>, std::unique_ptr<PlannedGraph>> plans;  // (purpose, N, n_out)

    std::vector<int32_t> seq_len;
    std::vector<int32_t> in_tokens, in_pos, in_seq, in_rows, in_block;
    std::unique_ptr<MemoryState> memory;  // set when the model reads explicit memories
    MemoryStats memory_stats;
    std::string fingerprint;  // computed on first use
    std::vector<float> logits;
    std::vector<float> chunk_logits;
    std::vector<BatchToken> chunk;
    std::vector<uint64_t> timings;
    std::map<int32_t, OpProfile> profile;
    const std::atomic<bool>* cancel = nullptr;

    ~Impl() {
        release_codec();
        for (auto& [key, p] : plans)
            if (p->backend_graph) device->api()->graph_release(device->ctx(), p->backend_graph);
        plans.clear();
        param_buffers.clear();
        device.reset();  // buffers before the mmapped checkpoint and the plugin module go
    }

    void load();
    void bind_params();
    PlannedGraph& plan_for(int64_t n_tokens, int64_t n_out, int32_t purpose = MNEMO_GRAPH_LOGITS);
    void prepare(PlannedGraph& p);
    // Write the graph inputs (in_*) and run graph p (no logits read back).
    void run_graph(PlannedGraph& p);
    // Every row's token, sequence and position in range (run() checks too; decode() checks before
    // the memory schedule indexes by them).
    void check_batch(const std::vector<BatchToken>& batch) const;
    void run(const std::vector<BatchToken>& batch, std::vector<float>& out);

    // Explicit memories (session_memory.cpp).
    void memory_init();  // after load(): the reference BOS pass, every block's prefix
    // Named outputs of an ENCODE / ENCODE_QUERY run over `rows`, as f32 host arrays.
    std::map<std::string, std::vector<float>> run_encode(int32_t purpose, const std::vector<BatchToken>& rows,
                                                         const std::vector<std::string>& wanted);
    // Memory blocks for the rows of one batch: fills in_block (one block per distinct memory
    // set, uploading sets not resident). row_set[i] indexes sets.
    void bind_memory_blocks(const std::vector<std::shared_ptr<const MemorySet>>& sets,
                            const std::vector<int32_t>& row_set);
    std::vector<std::shared_ptr<const MemorySet>> retrieve_for_chunks(const std::vector<std::vector<int32_t>>& chunks);
    std::vector<std::vector<float>> retrieval_vectors_impl(const std::vector<std::vector<int32_t>>& texts);
    std::vector<WrittenMemory> write_memories_impl(const std::vector<std::vector<int32_t>>& refs);
    // append() for a model that reads memories: every prompt chunk retrieves (returned per
    // chunk), then each run binds the blocks of its rows, cut short where the blocks run out.
    std::vector<std::shared_ptr<const MemorySet>> begin_prompt(int32_t seq, int64_t start, const std::vector<int32_t>& tokens);
    size_t bind_prompt_run(const std::vector<std::shared_ptr<const MemorySet>>& chunk_sets, size_t begin, size_t end);
    // decode(): the memory block every generated row reads.
    void bind_generated(const std::vector<BatchToken>& batch);
    // Compressed memories: upload the source's codec (or drop the old one), decode one block.
    void set_codec(const MemoryCodec* codec);
    void release_codec();
    void decode_block(int32_t block, const MemorySet& set);
    mnemo_tensor bind(const PlannedGraph& p, int32_t node) const;
    // Weights one graph run reads: whole tensors, or only the rows/experts gathering ops name.
    struct WeightTraffic {
        uint64_t bytes = 0;
        int64_t params = 0;
    };
    WeightTraffic weight_traffic(const PlannedGraph& p) const;
    // Copy the device's allocation counters into the summary (after every allocation).
    void note_device_memory() {
        summary.device_bytes = device->bytes();
        summary.device_peak_bytes = device->peak_bytes();
        summary.device_host_bytes = device->host_bytes();
    }
};

}  // namespace mnemo
