// Session: a model loaded through its plugin, bound to one backend device, with its KV caches
// and one arena-planned graph per batch shape (tokens, output rows).
#include "mnemo/session/session.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "gguf/gguf_model.hpp"
#include "mnemo/io/gguf.hpp"
#include "session/context_budget.hpp"
#include "session/memory_tables.hpp"
#include "session/session_impl.hpp"
#include "session/session_memory_host.hpp"

namespace fs = std::filesystem;

namespace mnemo {

void Session::Impl::load() {
    // A model is a folder (config.json + safetensors) or one GGUF file.
    const std::string& dir = options.model_dir;
    const bool gguf = !fs::is_directory(dir) && looks_like_gguf(dir);
    if (!gguf && !fs::is_directory(dir))
        throw Error("model '" + dir + "' is neither a model folder nor a GGUF file" + (fs::exists(dir) ? "" : " (it does not exist)"));
    const std::string config_path = gguf ? dir : (fs::path(dir) / "config.json").string();
    if (gguf) {
        detail::GgufModel m = detail::open_gguf_model(dir);
        config = std::move(m.config);
        checkpoint = std::move(m.checkpoint);
    } else {
        if (!fs::exists(config_path)) throw Error("model folder '" + dir + "' has no config.json");
        config = json::parse_file(config_path);
    }
    if (!config.is_object()) throw Error(config_path + ": expected a JSON object at the top level");
    const json::Value* type = config.find("model_type");
    if (!type || !type->is_string())
        throw Error(config_path + ": field 'model_type' is " + (type ? "not a string" : "missing") +
                    " (it names the architecture, e.g. \"llama\")");
    summary.model_type = type->as_string();
    summary.model_dir = dir;

    const PluginRegistry& plugins = options.plugins ? *options.plugins : PluginRegistry::global();
    const BackendRegistry& backends = options.backends ? *options.backends : BackendRegistry::global();
    plugin = &plugins.for_model_type(summary.model_type);
    summary.plugin = plugin->name;
    const BackendModule& backend = backends.require(options.backend);

    if (!gguf) checkpoint = Checkpoint::open(dir);

    n_seq = options.n_seq;
    if (n_seq < 1) throw Error("the number of sequences must be >= 1, got " + std::to_string(n_seq));
    n_ctx = options.n_ctx;
    if (n_ctx <= 0) {
        const json::Value* mp = config.find("max_position_embeddings");
        n_ctx = (mp && mp->is_integer() && mp->as_int() > 0) ? static_cast<int32_t>(std::min<int64_t>(mp->as_int(), kDefaultCtx))
                                                             : kDefaultCtx;
    }
    if (options.n_ubatch < 1) throw Error("the batch size (n_ubatch) must be >= 1");
    if (options.cache_dtype != MNEMO_DTYPE_F32 && options.cache_dtype != MNEMO_DTYPE_F16 && options.cache_dtype != MNEMO_DTYPE_Q8_0)
        throw Error("the KV cache type (cache_dtype) must be f32, f16 or q8_0, got dtype " + std::to_string(options.cache_dtype));

    auto create = [&] {
        host = std::make_unique<ModelHost>(config, config_path, checkpoint, plugin->name, dir);
        mnemo_context_params cp{n_ctx, n_seq, options.cache_dtype};
        mnemo_error err{};
        model.api = plugin->api;
        if (plugin->api->create(host->api(), &cp, &info, &model.model, &err) != MNEMO_OK)
            throw Error("the " + plugin->name + " plugin cannot load this model: " + err.message);
    };
    create();
    // The default context is min(trained, 4096), and max_position_embeddings is only a first guess
    // at "trained": a model may train fewer positions for text (Memory3 keeps reference_length of
    // them for its memory prefix), which only its plugin knows. Made again at that length, so a
    // default context never runs past what the model was trained for.
    if (options.n_ctx <= 0 && info.n_ctx_train > 0 && info.n_ctx_train < n_ctx) {
        model.api->destroy(model.model);
        model.model = nullptr;
        n_ctx = static_cast<int32_t>(info.n_ctx_train);
        create();
    }

    device = std::make_unique<Device>(backend, options.device, options.n_threads);
    check_context();
    bind_params();
    note_device_memory();

    summary.architecture = info.architecture;
    summary.vocab_size = info.vocab_size;
    summary.n_ctx_train = info.n_ctx_train;
    summary.hidden_size = info.hidden_size;
    summary.n_layers = info.n_layers;
    summary.device_name = device->info().name;
    summary.backend = device->name();
    seq_len.assign(static_cast<size_t>(n_seq), 0);
    logits.reserve(static_cast<size_t>(info.vocab_size) * static_cast<size_t>(n_seq));
    // Plan the single-token decode graph now: it sizes the arena, reports plugin graph errors at
    // load time rather than at the first token, and tells how many weight bytes a step reads.
    const WeightTraffic decode = weight_traffic(plan_for(1, 1));
    summary.decode_weight_bytes = decode.bytes;
    summary.activated_params = decode.params;
    if (info.memory.enabled) {
        memory_host = make_memory_host(*this);
        memory = std::make_unique<detail::MemoryState>(info.memory, info.n_layers, n_seq, *memory_host);
    }
}

void Session::Impl::check_context() const {
    session_detail::ContextBudget b;
    b.n_ctx = n_ctx;
    b.n_ctx_train = info.n_ctx_train;
    b.n_seq = n_seq;
    for (const ParamDecl& p : host->params())
        if (p.kind == ParamKind::State) b.state_bytes += p.shape.nbytes();
    const mnemo_device_info& d = device->info();
    b.device = device->name() + " device '" + std::string(d.name, strnlen(d.name, sizeof d.name)) + "'";
    b.device_memory = d.memory_total;
    b.host_memory = (d.caps & MNEMO_CAP_HOST_MEMORY) != 0;
    session_detail::check_context_budget(b, options.warn ? options.warn : [](const std::string& m) {
        std::fprintf(stderr, "mnemo: warning: %s\n", m.c_str());
    });
}

Session::Impl::WeightTraffic Session::Impl::weight_traffic(const PlannedGraph& p) const {
    const std::vector<ParamDecl>& params = host->params();
    // Elements read from each weight: all of it when any op streams it, else the rows (or
    // experts) the gathering ops select, counted in the shape the op sees (a view may regroup).
    std::vector<int64_t> gathered(params.size(), 0);
    std::vector<int> streamed(params.size(), 0);
    for (const detail::GraphNode& g : p.nodes) {
        if (g.kind != detail::NodeKind::Op) continue;
        for (size_t k = 0; k < g.inputs.size(); ++k) {
            const detail::GraphNode& seen = p.nodes[g.inputs[k]];
            const detail::GraphNode* in = &detail::behind_views(p.nodes, g.inputs[k]);
            if (in->kind != detail::NodeKind::Param || params[in->param_id].kind != ParamKind::Weight) continue;
            const int idx = gathering_input(g.op, k);
            if (idx < 0) {
                streamed[in->param_id] = 1;
                continue;
            }
            const int64_t row_elements = seen.shape.numel() / std::max<int64_t>(seen.shape.shape[0], 1);
            gathered[in->param_id] += p.nodes[g.inputs[static_cast<size_t>(idx)]].shape.numel() * row_elements;
        }
    }
    WeightTraffic t;
    for (size_t i = 0; i < params.size(); ++i) {
        const TensorShape& s = params[i].shape;
        const int64_t elements = streamed[i] ? s.numel() : std::min(s.numel(), gathered[i]);
        t.params += elements;
        t.bytes += dtype_bytes(s.dtype, elements);  // whole rows, so whole blocks of a quantized weight
    }
    return t;
}

void Session::Impl::bind_params() {
    std::map<DType, uint64_t> dtype_counts;
    const std::vector<uint8_t> zeros(1 << 20, 0);
    const std::vector<ParamDecl>& params = host->params();
    // Memory tables left in host memory (SessionOptions::memory_tables): found in the decode graph.
    std::vector<bool> in_host(params.size(), false);
    if (options.memory_tables == SessionOptions::MemoryTables::Host) {
        in_host = detail::memory_table_params(build_graph(1, 1, MNEMO_GRAPH_LOGITS)->nodes, params.size());
        if (std::find(in_host.begin(), in_host.end(), true) == in_host.end()) {
            const auto warn = options.warn ? options.warn : [](const std::string& m) { std::fprintf(stderr, "mnemo: warning: %s\n", m.c_str()); };
            warn("memory tables in host memory: this " + summary.model_type + " model has no memory-layer tables; its weights stay on the device");
        }
    }
    for (size_t i = 0; i < params.size(); ++i) {
        const ParamDecl& p = params[i];
        void* buffer = nullptr;
        const uint64_t bytes = p.shape.nbytes();
        switch (p.kind) {
            case ParamKind::Weight:
                if (in_host[i]) {
                    buffer = device->map_host(p.host_data(), bytes, "memory table '" + p.name + "'");
                    summary.memory_table_bytes += bytes;
                    summary.memory_tables_in_host = true;
                } else {
                    buffer = device->wrap_or_upload(p.host_data(), bytes, "weight '" + p.name + "'");
                }
                summary.n_params += p.shape.numel();
                summary.weight_bytes += bytes;
                ++dtype_counts[p.shape.dtype];
                break;
            case ParamKind::Constant:
                buffer = device->alloc(bytes, "constant '" + p.name + "'");
                device->write(buffer, 0, p.owned.data(), bytes, "constant '" + p.name + "'");
                break;
            case ParamKind::State:
                buffer = device->alloc(bytes, "state '" + p.name + "'");
                for (uint64_t off = 0; off < bytes; off += zeros.size())
                    device->write(buffer, off, zeros.data(), std::min<uint64_t>(zeros.size(), bytes - off), "state '" + p.name + "'");
                summary.state_bytes += bytes;
                break;
        }
        param_buffers.push_back(buffer);
    }
    std::ostringstream s;
    bool first = true;
    for (const auto& [t, n] : dtype_counts) {
        s << (first ? "" : ", ") << dtype_name(t) << " (" << n << ")";
        first = false;
    }
    summary.weight_dtypes = s.str();
}

mnemo_tensor Session::Impl::bind(const PlannedGraph& p, int32_t node) const {
    const detail::Location& loc = p.placement.where[node];
    const TensorShape& s = p.nodes[node].shape;
    mnemo_tensor t{};
    t.buffer = loc.in_arena ? arena : param_buffers[loc.param_id];
    t.offset = loc.offset;
    t.dtype = static_cast<int32_t>(s.dtype);
    t.ndim = s.ndim;
    for (int32_t i = 0; i < s.ndim; ++i) t.shape[i] = s.shape[i];
    return t;
}

void Session::Impl::prepare(PlannedGraph& p) {
    std::vector<mnemo_node> nodes;
    p.op_of_node.clear();
    for (size_t i = 0; i < p.nodes.size(); ++i) {
        const detail::GraphNode& g = p.nodes[i];
        if (g.kind != detail::NodeKind::Op) continue;
        mnemo_node n{};
        n.op = g.op;
        n.n_inputs = static_cast<int32_t>(g.inputs.size());
        for (size_t k = 0; k < g.inputs.size(); ++k) n.inputs[k] = bind(p, g.inputs[k]);
        n.output = bind(p, static_cast<int32_t>(i));
        std::copy(std::begin(g.iparams), std::end(g.iparams), n.iparams);
        std::copy(std::begin(g.fparams), std::end(g.fparams), n.fparams);
        if (!device->api()->supports_node(device->ctx(), &n)) {
            // supports_node only answers yes or no; preparing the node alone says why not.
            std::string why;
            mnemo_error err{};
            void* g = nullptr;
            if (device->api()->graph_prepare(device->ctx(), &n, 1, &g, &err) != MNEMO_OK) why = std::string(": ") + err.message;
            else device->api()->graph_release(device->ctx(), g);
            throw Error("backend '" + device->name() + "' cannot run op '" + op_info(n.op).name + "' with output " +
                        p.nodes[i].shape.str() + why);
        }
        nodes.push_back(n);
        p.op_of_node.push_back(n.op);
    }
    mnemo_error err{};
    if (device->api()->graph_prepare(device->ctx(), nodes.data(), static_cast<int32_t>(nodes.size()), &p.backend_graph,
                                     &err) != MNEMO_OK)
        throw Error("backend '" + device->name() + "': preparing the graph failed: " + err.message);
}

std::unique_ptr<PlannedGraph> Session::Impl::build_graph(int64_t n_tokens, int64_t n_out, int32_t purpose) const {
    auto p = std::make_unique<PlannedGraph>();
    GraphBuilder builder(n_tokens, n_out, [this](int32_t id) { return host->param_shape(id); }, purpose);
    mnemo_error err{};
    const char* what = purpose == MNEMO_GRAPH_LOGITS ? "" : purpose == MNEMO_GRAPH_ENCODE ? "memory-writing " : "retrieval-query ";
    if (plugin->api->build(model.model, builder.api(), &err) != MNEMO_OK)
        throw Error("the " + plugin->name + " plugin failed to build the " + what + "graph for " + plural(n_tokens, "token") +
                    ": " + (builder.error().empty() ? err.message : builder.error()));
    if (purpose == MNEMO_GRAPH_LOGITS && builder.output() < 0)
        throw Error("the " + plugin->name + " plugin built a graph without logits output");
    if (purpose != MNEMO_GRAPH_LOGITS && builder.named_outputs().empty())
        throw Error("the " + plugin->name + " plugin built a " + what + "graph without named outputs");
    p->nodes = builder.nodes();
    p->output = builder.output();
    p->purpose = purpose;
    p->named = builder.named_outputs();
    return p;
}

PlannedGraph& Session::Impl::plan_for(int64_t n_tokens, int64_t n_out, int32_t purpose) {
    auto key = std::make_tuple(purpose, n_tokens, n_out);
    auto it = plans.find(key);
    if (it != plans.end() && it->second->backend_graph) return *it->second;
    if (it == plans.end()) {
        std::unique_ptr<PlannedGraph> p = build_graph(n_tokens, n_out, purpose);
        std::vector<int32_t> keep = {p->output};
        for (const auto& [name, node] : p->named) keep.push_back(node);
        p->placement = detail::plan_arena(p->nodes, keep, kArenaAlignment);
        for (size_t i = 0; i < p->nodes.size(); ++i)
            if (p->nodes[i].kind == detail::NodeKind::Input) {
                p->has_input[p->nodes[i].input_kind] = true;
                p->input_offset[p->nodes[i].input_kind] = p->placement.where[i].offset;
            }
        it = plans.emplace(key, std::move(p)).first;
    }
    PlannedGraph& p = *it->second;
    if (p.placement.arena_bytes > arena_bytes) {
        // Grow the arena once; graphs prepared on the old one are re-prepared lazily.
        for (auto& [k, other] : plans)
            if (other->backend_graph) {
                device->api()->graph_release(device->ctx(), other->backend_graph);
                other->backend_graph = nullptr;
            }
        if (arena) device->release(arena);
        arena = device->alloc(p.placement.arena_bytes, "the activation arena");
        arena_bytes = p.placement.arena_bytes;
        summary.work_bytes = arena_bytes;
        note_device_memory();
    }
    prepare(p);
    return p;
}

void Session::Impl::check_batch(const std::vector<BatchToken>& batch) const {
    const int64_t n = static_cast<int64_t>(batch.size());
    if (n == 0) throw Error("decode: the batch is empty");
    if (n > options.n_ubatch)
        throw Error("decode: the batch holds " + plural(n, "token") + ", more than n_ubatch " + std::to_string(options.n_ubatch));
    for (const BatchToken& b : batch) {
        if (b.token < 0 || b.token >= info.vocab_size)
            throw Error("token id " + std::to_string(b.token) + " is outside the vocabulary (0.." + std::to_string(info.vocab_size - 1) + ")");
        if (b.seq < 0 || b.seq >= n_seq)
            throw Error("sequence " + std::to_string(b.seq) + " does not exist (this session holds " + std::to_string(n_seq) + ")");
        if (b.pos < 0 || b.pos >= n_ctx)
            throw Error("context is full: sequence " + std::to_string(b.seq) + " needs position " + std::to_string(b.pos) +
                        " but the context holds " + std::to_string(n_ctx) + " positions (raise it with -c/--ctx-size)");
    }
}

void Session::Impl::run(const std::vector<BatchToken>& batch, std::vector<float>& out) {
    if (cancel && cancel->load()) throw Cancelled();
    check_batch(batch);
    const int64_t n = static_cast<int64_t>(batch.size());
    in_tokens.clear();
    in_pos.clear();
    in_seq.clear();
    in_rows.clear();
    for (int64_t i = 0; i < n; ++i) {
        const BatchToken& b = batch[static_cast<size_t>(i)];
        in_tokens.push_back(b.token);
        in_pos.push_back(b.pos);
        in_seq.push_back(b.seq);
        if (b.want_logits) in_rows.push_back(static_cast<int32_t>(i));
    }
    const bool no_logits_wanted = in_rows.empty();
    if (no_logits_wanted) in_rows.push_back(static_cast<int32_t>(n - 1));  // graphs always produce >= 1 row
    const int64_t n_out = static_cast<int64_t>(in_rows.size());
    PlannedGraph& p = plan_for(n, n_out);
    if (p.has_input[MNEMO_INPUT_MEMORY_BLOCK] && in_block.size() != static_cast<size_t>(n))
        throw Error("internal: the memory blocks of this batch were not bound");
    run_graph(p);
    if (no_logits_wanted) {
        out.clear();
        return;
    }
    const uint64_t bytes = static_cast<uint64_t>(n_out) * static_cast<uint64_t>(info.vocab_size) * sizeof(float);
    out.resize(static_cast<size_t>(bytes / sizeof(float)));
    device->read(arena, p.placement.where[p.output].offset, out.data(), bytes, "logits");
}

void Session::Impl::run_graph(PlannedGraph& p) {
    const std::vector<int32_t>* inputs[detail::kInputKinds] = {&in_tokens, &in_pos, &in_seq, &in_rows, &in_block};
    for (int k = 0; k < detail::kInputKinds; ++k)
        if (p.has_input[k]) device->write(arena, p.input_offset[k], inputs[k]->data(), inputs[k]->size() * 4, "graph inputs");

    uint64_t* timing = nullptr;
    if (options.profile) {
        timings.assign(p.op_of_node.size(), 0);
        timing = timings.data();
    }
    mnemo_error err{};
    if (device->api()->graph_run(device->ctx(), p.backend_graph, timing, &err) != MNEMO_OK)
        throw Error("backend '" + device->name() + "': running the graph failed: " + err.message);
    if (timing)
        for (size_t i = 0; i < p.op_of_node.size(); ++i) {
            OpProfile& op = profile[p.op_of_node[i]];
            op.op = op_info(p.op_of_node[i]).name;
            ++op.calls;
            op.total_ns += timings[i];
        }
}

std::map<std::string, std::vector<float>> Session::Impl::run_outputs(int32_t purpose, const std::vector<BatchToken>& rows,
                                                                     const std::vector<std::string>& wanted) {
    if (cancel && cancel->load()) throw Cancelled();
    const int64_t n = static_cast<int64_t>(rows.size());
    in_tokens.clear();
    in_pos.clear();
    in_seq.clear();
    for (const BatchToken& r : rows) {
        if (r.token < 0 || r.token >= info.vocab_size)
            throw Error("token id " + std::to_string(r.token) + " is outside the vocabulary (0.." + std::to_string(info.vocab_size - 1) + ")");
        in_tokens.push_back(r.token);
        in_pos.push_back(r.pos);
        in_seq.push_back(r.seq);
    }
    in_rows.assign(1, static_cast<int32_t>(n - 1));
    in_block.assign(static_cast<size_t>(n), -1);
    PlannedGraph& p = plan_for(n, 1, purpose);
    run_graph(p);
    std::map<std::string, std::vector<float>> out;
    for (const std::string& name : wanted) {
        auto it = std::find_if(p.named.begin(), p.named.end(), [&](const auto& e) { return e.first == name; });
        if (it == p.named.end()) throw Error("the " + plugin->name + " plugin's memory graph has no output '" + name + "'");
        const TensorShape& s = p.nodes[it->second].shape;
        if (s.dtype != DType::F32) throw Error("memory graph output '" + name + "' is " + s.str() + ", expected f32");
        std::vector<float>& v = out[name];
        v.resize(static_cast<size_t>(s.numel()));
        device->read(arena, p.placement.where[it->second].offset, v.data(), v.size() * 4, "memory graph output '" + name + "'");
    }
    return out;
}

// ---------------------------------------------------------------- public API

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

std::unique_ptr<Session> Session::open(const SessionOptions& options) {
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    try {
        impl->load();
    } catch (const Cancelled&) {
        throw;
    } catch (const std::exception& e) {
        throw Error("loading model '" + options.model_dir + "': " + e.what());
    }
    return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const ModelSummary& Session::summary() const { return impl_->summary; }
int32_t Session::n_ctx() const { return impl_->n_ctx; }
int32_t Session::n_seq() const { return impl_->n_seq; }
int32_t Session::n_ubatch() const { return impl_->options.n_ubatch; }
int32_t Session::vocab_size() const { return static_cast<int32_t>(impl_->info.vocab_size); }

const std::vector<float>& Session::decode(const std::vector<BatchToken>& batch) {
    if (impl_->memory) {
        impl_->check_batch(batch);  // the memory schedule indexes by sequence and position
        impl_->memory->bind_generated(batch, impl_->in_block);
    }
    impl_->run(batch, impl_->logits);
    // Sequences are as long as the furthest position written.
    for (const BatchToken& b : batch) impl_->seq_len[b.seq] = std::max(impl_->seq_len[b.seq], b.pos + 1);
    return impl_->logits;
}

const std::vector<float>& Session::append(int32_t seq, const std::vector<int32_t>& tokens, bool all_logits,
                                          const std::vector<int32_t>& segment_starts) {
    Impl& s = *impl_;
    if (seq < 0 || seq >= s.n_seq) throw Error("sequence " + std::to_string(seq) + " does not exist");
    if (tokens.empty()) throw Error("append: no tokens given");
    const int64_t start = s.seq_len[seq];
    if (start + static_cast<int64_t>(tokens.size()) > s.n_ctx)
        throw Error("context is full: sequence " + std::to_string(seq) + " holds " + std::to_string(start) + " of " +
                    std::to_string(s.n_ctx) + " positions and " + plural(tokens.size(), "more token") +
                    " do not fit (raise it with -c/--ctx-size)");
    for (size_t i = 0; i < segment_starts.size(); ++i)
        if (segment_starts[i] < 0 || static_cast<size_t>(segment_starts[i]) >= tokens.size() ||
            (i > 0 && segment_starts[i] <= segment_starts[i - 1]))
            throw Error("append: segment start " + std::to_string(segment_starts[i]) + " (at " + std::to_string(i) +
                        ") is not an increasing offset into the " + plural(tokens.size(), "token") + " given");
    detail::MemoryState::Prompt prompt;  // the memories of each prompt chunk
    if (s.memory) prompt = s.memory->begin_prompt(seq, start, tokens, segment_starts);
    s.logits.clear();
    const size_t vocab = static_cast<size_t>(s.info.vocab_size);
    for (size_t begin = 0, end = 0; begin < tokens.size(); begin = end) {
        end = std::min(tokens.size(), begin + static_cast<size_t>(s.options.n_ubatch));
        if (s.memory) end = s.memory->bind_prompt_run(prompt, begin, end, s.in_block);
        s.chunk.clear();
        for (size_t i = begin; i < end; ++i)
            s.chunk.push_back({tokens[i], static_cast<int32_t>(start + static_cast<int64_t>(i)), seq,
                               all_logits || i + 1 == tokens.size()});
        s.run(s.chunk, s.chunk_logits);
        s.seq_len[seq] = static_cast<int32_t>(start + static_cast<int64_t>(end));
        if (all_logits || end == tokens.size())
            s.logits.insert(s.logits.end(), s.chunk_logits.begin(),
                            s.chunk_logits.begin() + static_cast<long>((all_logits ? end - begin : 1) * vocab));
    }
    return s.logits;
}

int32_t Session::seq_length(int32_t seq) const {
    if (seq < 0 || seq >= impl_->n_seq) throw Error("sequence " + std::to_string(seq) + " does not exist");
    return impl_->seq_len[seq];
}

void Session::reset(int32_t seq) {
    if (seq < 0 || seq >= impl_->n_seq) throw Error("sequence " + std::to_string(seq) + " does not exist");
    impl_->seq_len[seq] = 0;  // attention never reads past a query's own position
    if (impl_->memory) impl_->memory->reset(seq);
}

void Session::reset_all() {
    std::fill(impl_->seq_len.begin(), impl_->seq_len.end(), 0);
    if (impl_->memory) impl_->memory->reset_all();
}
void Session::set_cancel_flag(const std::atomic<bool>* flag) { impl_->cancel = flag; }

std::vector<OpProfile> Session::profile() const {
    std::vector<OpProfile> out;
    for (const auto& [op, p] : impl_->profile) out.push_back(p);
    std::sort(out.begin(), out.end(), [](const OpProfile& a, const OpProfile& b) { return a.total_ns > b.total_ns; });
    return out;
}

void Session::clear_profile() { impl_->profile.clear(); }

void Session::set_threads(int32_t n) {
    if (impl_->device->api()->set_threads) impl_->device->api()->set_threads(impl_->device->ctx(), n);
}

}  // namespace mnemo
