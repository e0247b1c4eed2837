// Session internals shared by the files that implement it (session.cpp: loading, planning and
// running graphs; session_memory.cpp: the explicit-memory API, through detail::MemoryState).
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "graph/graph.hpp"
#include "memory/memory_state.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/io/safetensors.hpp"
#include "mnemo/session/session.hpp"
#include "modules/model_host.hpp"
#include "session/device.hpp"

namespace mnemo {

using detail::GraphBuilder;
using detail::ArenaPlan;
using detail::ModelHost;
using detail::ParamDecl;
using detail::ParamKind;

namespace session_detail {

constexpr uint64_t kArenaAlignment = 256;  // enough for any backend's storage-buffer offset rule
constexpr int32_t kDefaultCtx = 4096;

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
    ArenaPlan placement;  // where each node lives in the arena
    int32_t output = -1;
    int32_t purpose = MNEMO_GRAPH_LOGITS;
    std::vector<std::pair<std::string, int32_t>> named;  // ENCODE outputs: name -> node
    uint64_t input_offset[detail::kInputKinds] = {};
    bool has_input[detail::kInputKinds] = {};
    std::vector<int32_t> op_of_node;  // op id of each backend node, for profiles
    void* backend_graph = nullptr;    // prepared on the current arena
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
    // Set when the model reads explicit memories; the host (what they reach of this session)
    // outlives them.
    std::unique_ptr<detail::MemoryHost> memory_host;
    std::unique_ptr<detail::MemoryState> memory;
    std::string fingerprint;  // computed on first use
    std::vector<float> logits;
    std::vector<float> chunk_logits;
    std::vector<BatchToken> chunk;
    std::vector<uint64_t> timings;
    std::map<int32_t, OpProfile> profile;
    const std::atomic<bool>* cancel = nullptr;

    ~Impl() {
        memory.reset();  // its device buffers and prepared decoders go before the device
        for (auto& [key, p] : plans)
            if (p->backend_graph) device->api()->graph_release(device->ctx(), p->backend_graph);
        plans.clear();
        param_buffers.clear();
        device.reset();  // buffers before the mmapped checkpoint and the plugin module go
    }

    void load();
    // Before the states are allocated: warn about a context past the trained length, refuse one
    // whose states cannot fit (session/context_budget.hpp).
    void check_context() const;
    void bind_params();
    // The plugin's graph for a batch shape, checked, not yet planned into the arena.
    std::unique_ptr<PlannedGraph> build_graph(int64_t n_tokens, int64_t n_out, int32_t purpose) const;
    PlannedGraph& plan_for(int64_t n_tokens, int64_t n_out, int32_t purpose = MNEMO_GRAPH_LOGITS);
    void prepare(PlannedGraph& p);
    // Write the graph inputs (in_*) and run graph p (no logits read back).
    void run_graph(PlannedGraph& p);
    // Every row's token, sequence and position in range (run() checks too; decode() checks before
    // the memory schedule indexes by them).
    void check_batch(const std::vector<BatchToken>& batch) const;
    void run(const std::vector<BatchToken>& batch, std::vector<float>& out);

    // Run the graph of `purpose` over `rows` (no memory block read) and read the named outputs
    // `wanted` back as f32 host arrays (ENCODE / ENCODE_QUERY: what explicit memories need).
    std::map<std::string, std::vector<float>> run_outputs(int32_t purpose, const std::vector<BatchToken>& rows,
                                                          const std::vector<std::string>& wanted);
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
