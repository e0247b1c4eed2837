// Session: explicit memories (Memory3, shared/papers/004). detail::MemoryState does the work
// (engine/src/memory/memory_state.hpp); this file is the public API that reaches it and the
// MemoryHost it works through — the session's states, graphs and device.
#include <algorithm>

#include "io/sha256.hpp"
#include "session/session_impl.hpp"
#include "session/session_memory_host.hpp"

namespace mnemo {

namespace {

class SessionMemoryHost final : public detail::MemoryHost {
public:
    explicit SessionMemoryHost(Session::Impl& s) : s_(s) {}

    std::string plugin_name() const override { return s_.plugin->name; }

    detail::DeclaredState state(const std::string& name) const override {
        const std::vector<ParamDecl>& params = s_.host->params();
        for (size_t i = 0; i < params.size(); ++i)
            if (params[i].kind == ParamKind::State && params[i].name == name) return {static_cast<int32_t>(i), params[i].shape};
        return {};
    }
    void* state_buffer(int32_t id) const override { return s_.param_buffers[static_cast<size_t>(id)]; }
    TensorShape output_shape(int32_t purpose, int64_t rows, const std::string& name) override {
        const std::unique_ptr<PlannedGraph> g = s_.build_graph(rows, 1, purpose);
        for (const auto& [output, node] : g->named)
            if (output == name) return g->nodes[static_cast<size_t>(node)].shape;
        throw Error("the " + s_.plugin->name + " plugin's memory graph has no output '" + name + "'");
    }
    std::map<std::string, std::vector<float>> run_outputs(int32_t purpose, const std::vector<BatchToken>& rows,
                                                          const std::vector<std::string>& wanted) override {
        return s_.run_outputs(purpose, rows, wanted);
    }

    void* alloc(uint64_t bytes, const std::string& what) override {
        void* b = s_.device->alloc(bytes, what);
        s_.note_device_memory();
        return b;
    }
    void release(void* buffer) override {
        s_.device->release(buffer);
        s_.note_device_memory();
    }
    void write(void* buffer, uint64_t offset, const void* src, uint64_t bytes, const std::string& what) override {
        s_.device->write(buffer, offset, src, bytes, what);
    }
    bool supports(const mnemo_node& node) const override {
        return s_.device->api()->supports_node(s_.device->ctx(), &node);
    }
    void* prepare_nodes(const std::vector<mnemo_node>& nodes, const std::string& what) override {
        void* graph = nullptr;
        mnemo_error err{};
        if (s_.device->api()->graph_prepare(s_.device->ctx(), nodes.data(), static_cast<int32_t>(nodes.size()), &graph, &err) !=
            MNEMO_OK)
            throw Error("backend '" + s_.device->name() + "': preparing " + what + " failed: " + err.message);
        return graph;
    }
    void run_nodes(void* prepared, const std::string& what) override {
        mnemo_error err{};
        if (s_.device->api()->graph_run(s_.device->ctx(), prepared, nullptr, &err) != MNEMO_OK)
            throw Error("backend '" + s_.device->name() + "': " + what + " failed: " + err.message);
    }
    void release_nodes(void* prepared) override { s_.device->api()->graph_release(s_.device->ctx(), prepared); }
    std::string device_name() const override { return s_.device->name(); }

private:
    Session::Impl& s_;
};

}  // namespace

std::unique_ptr<detail::MemoryHost> make_memory_host(Session::Impl& session) {
    return std::make_unique<SessionMemoryHost>(session);
}

// ---------------------------------------------------------------- public API

bool Session::reads_memories() const { return impl_->memory != nullptr; }

const MemorySpec& Session::memory_spec() const {
    if (!impl_->memory) throw Error("model '" + impl_->options.model_dir + "' (" + impl_->summary.model_type + ") does not read explicit memories");
    return impl_->memory->spec();
}

void Session::set_memory_source(std::shared_ptr<MemorySource> source) {
    (void)memory_spec();
    impl_->memory->set_source(std::move(source));
}

std::vector<WrittenMemory> Session::write_memories(const std::vector<std::vector<int32_t>>& references) {
    (void)memory_spec();
    return impl_->memory->write(references);
}

std::vector<std::vector<float>> Session::retrieval_vectors(const std::vector<std::vector<int32_t>>& texts) {
    (void)memory_spec();
    return impl_->memory->retrieval_vectors(texts);
}

const MemoryStats& Session::memory_stats() const {
    static const MemoryStats none;  // a model without memories reads none
    return impl_->memory ? impl_->memory->stats() : none;
}

const std::string& Session::model_fingerprint() const {
    Impl& s = *impl_;
    if (s.fingerprint.empty()) {
        // Hashing every weight byte would cost seconds per GB at each run; the config, the
        // tensor table and a sample of each tensor's bytes tell checkpoints apart just as well
        // for the mistake this guards against (memories made with another model).
        Sha256 h;
        const std::string config = s.config.dump();
        h.update(config.data(), config.size());
        std::vector<const TensorView*> ts;
        for (const TensorView& t : s.checkpoint.tensors()) ts.push_back(&t);
        std::sort(ts.begin(), ts.end(), [](const TensorView* a, const TensorView* b) { return a->name < b->name; });
        for (const TensorView* t : ts) {
            std::string head = t->name + "|" + std::string(dtype_name(t->dtype)) + "|";
            for (int64_t d : t->shape) head += std::to_string(d) + ",";
            h.update(head.data(), head.size());
            const uint64_t sample = 4096;
            h.update(t->data, static_cast<size_t>(std::min(sample, t->nbytes)));
            if (t->nbytes > sample) h.update(static_cast<const uint8_t*>(t->data) + t->nbytes - std::min(sample, t->nbytes - sample), static_cast<size_t>(std::min(sample, t->nbytes - sample)));
        }
        s.fingerprint = to_hex(h.finish());
    }
    return s.fingerprint;
}

}  // namespace mnemo
