// Header-only C++ layer over the plugin C ABI (mnemo/abi/plugin_abi.h). It compiles into the
// plugin, so the module boundary stays plain C: exceptions never cross it (the entry wrappers
// below turn them into mnemo_status + message), and no libmnemo symbol is needed.
//
// A plugin defines a model class whose constructor reads the config, declares the tensors and
// states it needs and reports the model (plugin::report):
//     struct MyModel {
//         MyModel(mnemo::plugin::Host&, const mnemo_context_params&, mnemo_model_info&);
//         void build(mnemo::plugin::Graph&) const;
//     };
// and exports it with MNEMO_PLUGIN(MyModel, "name", "description", "model_type_a", "model_type_b").
// A model may instead give `static std::unique_ptr<MyModel> create(Host&, const
// mnemo_context_params&, mnemo_model_info&)`; Entry calls it when it exists.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mnemo/abi/plugin_abi.h"

namespace mnemo::plugin {

class PluginError : public std::runtime_error {
public:
    explicit PluginError(const std::string& m) : std::runtime_error(m) {}
};

constexpr uint32_t dtype_bit(mnemo_dtype t) { return 1u << static_cast<uint32_t>(t); }
constexpr uint32_t kFloatDTypes = dtype_bit(MNEMO_DTYPE_F32) | dtype_bit(MNEMO_DTYPE_F16) | dtype_bit(MNEMO_DTYPE_BF16);
// The block-quantized types (GGUF's Q8_0, Q4_0, Q4_K, Q5_K, Q6_K). A weight declared with a mask
// that does not take them is still loaded from a quantized file: the engine decodes it to a float
// type of the mask at load (4 bytes a weight for f32).
constexpr uint32_t kQuantizedDTypes = dtype_bit(MNEMO_DTYPE_Q8_0) | dtype_bit(MNEMO_DTYPE_Q4_0) | dtype_bit(MNEMO_DTYPE_Q4_K) |
                                      dtype_bit(MNEMO_DTYPE_Q5_K) | dtype_bit(MNEMO_DTYPE_Q6_K);
// For a weight that only ever feeds MATMUL (as W), GET_ROWS (as the table) or MOE_FFN (the
// experts), ops that read quantized blocks: it stays packed in memory.
constexpr uint32_t kLinearDTypes = kFloatDTypes | kQuantizedDTypes;
// For a memory layer's table that only ever feeds EMBEDDING_BAG, PEER_GATE or HIVE (which read
// quantized rows too): the same set, named for what it declares. A memory model's value tables
// are its largest tensors, so this is where a quantized file saves the most.
constexpr uint32_t kTableDTypes = kFloatDTypes | kQuantizedDTypes;

// Model-creation services: config lookups and tensor declarations.
class Host {
public:
    explicit Host(const mnemo_host_api* api) : api_(api) {}

    bool has(const char* path) const { return api_->config_has(api_->host, path) != 0; }
    int64_t get_int(const char* path) const {
        int64_t v = 0;
        check(api_->config_int(api_->host, path, &v, &err_));
        return v;
    }
    int64_t get_int(const char* path, int64_t fallback) const { return has(path) ? get_int(path) : fallback; }
    double get_float(const char* path) const {
        double v = 0;
        check(api_->config_float(api_->host, path, &v, &err_));
        return v;
    }
    double get_float(const char* path, double fallback) const { return has(path) ? get_float(path) : fallback; }
    bool get_bool(const char* path, bool fallback) const {
        if (!has(path)) return fallback;
        int32_t v = 0;
        check(api_->config_bool(api_->host, path, &v, &err_));
        return v != 0;
    }
    std::string get_string(const char* path, const std::string& fallback) const {
        if (!has(path)) return fallback;
        char buf[512];
        check(api_->config_string(api_->host, path, buf, sizeof buf, &err_));
        return buf;
    }

    bool has_weight(const std::string& name) const { return api_->has_weight(api_->host, name.c_str()) != 0; }
    mnemo_tid weight(const std::string& name, std::initializer_list<int64_t> shape, uint32_t dtypes = kFloatDTypes) const {
        std::vector<int64_t> s(shape);
        mnemo_tid id = -1;
        check(api_->declare_weight(api_->host, name.c_str(), dtypes, static_cast<int32_t>(s.size()), s.data(), &id, &err_));
        return id;
    }
    mnemo_tid constant_f32(const std::string& name, const std::vector<float>& data) const {
        const int64_t n = static_cast<int64_t>(data.size());
        mnemo_tid id = -1;
        check(api_->declare_constant(api_->host, name.c_str(), MNEMO_DTYPE_F32, 1, &n, data.data(), &id, &err_));
        return id;
    }
    mnemo_tid constant(const std::string& name, mnemo_dtype dtype, const std::vector<int64_t>& shape, const void* data) const {
        mnemo_tid id = -1;
        check(api_->declare_constant(api_->host, name.c_str(), dtype, static_cast<int32_t>(shape.size()), shape.data(), data,
                                     &id, &err_));
        return id;
    }
    // Several checkpoint tensors of one shape as one [count, shape...] tensor (MoE experts).
    mnemo_tid weight_stack(const std::vector<std::string>& names, std::initializer_list<int64_t> shape,
                           uint32_t dtypes = kFloatDTypes) const {
        std::vector<const char*> c;
        for (const std::string& n : names) c.push_back(n.c_str());
        std::vector<int64_t> s(shape);
        mnemo_tid id = -1;
        check(api_->declare_weight_stack(api_->host, c.data(), static_cast<int32_t>(c.size()), dtypes,
                                         static_cast<int32_t>(s.size()), s.data(), &id, &err_));
        return id;
    }
    // A declared weight's values at load time (checks such as "is a permutation", folding).
    std::vector<float> read_f32(mnemo_tid id, int64_t count) const {
        std::vector<float> v(static_cast<size_t>(count));
        check(api_->read_weight(api_->host, id, MNEMO_DTYPE_F32, v.data(), count, &err_));
        return v;
    }
    std::vector<int32_t> read_i32(mnemo_tid id, int64_t count) const {
        std::vector<int32_t> v(static_cast<size_t>(count));
        check(api_->read_weight(api_->host, id, MNEMO_DTYPE_I32, v.data(), count, &err_));
        return v;
    }
    // Member names of the config object at `path` (empty when there is no object there).
    std::vector<std::string> keys(const char* path) const {
        std::vector<char> buf(4096);
        int32_t n = api_->config_keys(api_->host, path, buf.data(), buf.size());
        if (n < 0) return {};
        const std::string all(buf.data());
        if (static_cast<int32_t>(std::count(all.begin(), all.end(), '\n')) < n) {  // truncated: ask with room
            buf.assign(all.size() * 4 + 65536, 0);
            n = api_->config_keys(api_->host, path, buf.data(), buf.size());
        }
        std::vector<std::string> out;
        std::string cur;
        for (const char* p = buf.data(); *p; ++p) {
            if (*p == '\n') {
                out.push_back(cur);
                cur.clear();
            } else {
                cur += *p;
            }
        }
        return out;
    }
    // Token ids of text with the checkpoint's tokenizer (special tokens parsed, nothing added).
    std::vector<int32_t> tokenize(const std::string& text) const {
        std::vector<int32_t> ids(256);
        int32_t n = 0;
        check(api_->tokenize(api_->host, text.c_str(), ids.data(), static_cast<int32_t>(ids.size()), &n, &err_));
        if (n > static_cast<int32_t>(ids.size())) {
            ids.resize(static_cast<size_t>(n));
            check(api_->tokenize(api_->host, text.c_str(), ids.data(), n, &n, &err_));
        }
        ids.resize(static_cast<size_t>(n));
        return ids;
    }
    mnemo_tid state(const std::string& name, mnemo_dtype dtype, std::initializer_list<int64_t> shape) const {
        std::vector<int64_t> s(shape);
        mnemo_tid id = -1;
        check(api_->declare_state(api_->host, name.c_str(), dtype, static_cast<int32_t>(s.size()), s.data(), &id, &err_));
        return id;
    }

private:
    void check(mnemo_status st) const {
        if (st != MNEMO_OK) throw PluginError(err_.message);
    }
    const mnemo_host_api* api_;
    mutable mnemo_error err_{};
};

// A tensor inside the graph being built.
struct T {
    mnemo_tid id = -1;
};

// Graph-building services with one method per op (names follow the op table in mnemo_abi.h).
class Graph {
public:
    explicit Graph(const mnemo_builder_api* api) : api_(api) {}

    int64_t n_tokens() const { return api_->n_tokens; }
    int64_t n_outputs() const { return api_->n_outputs; }
    mnemo_graph_purpose purpose() const { return static_cast<mnemo_graph_purpose>(api_->purpose); }
    // Keep t readable after the run under `name` (ENCODE graphs' results).
    void mark_output(const std::string& name, T t) const {
        if (api_->mark_output(api_->builder, name.c_str(), t.id) != MNEMO_OK) throw PluginError(api_->last_error(api_->builder));
    }

    T input(mnemo_input_kind kind) const { return checked(api_->input(api_->builder, kind), "input"); }
    T tokens() const { return input(MNEMO_INPUT_TOKENS); }
    T positions() const { return input(MNEMO_INPUT_POSITIONS); }
    T seq_ids() const { return input(MNEMO_INPUT_SEQ_IDS); }
    T out_rows() const { return input(MNEMO_INPUT_OUT_ROWS); }
    T param(mnemo_tid id) const { return checked(api_->param(api_->builder, id), "param"); }

    T op(mnemo_op op, std::initializer_list<T> inputs, std::initializer_list<int64_t> ip = {},
         std::initializer_list<float> fp = {}) const {
        return op_list(op, std::vector<T>(inputs), ip, fp);
    }
    T reshape(T t, std::initializer_list<int64_t> shape) const {
        std::vector<int64_t> s(shape);
        return checked(api_->reshape(api_->builder, t.id, static_cast<int32_t>(s.size()), s.data()), "reshape");
    }
    void output(T logits) const {
        if (api_->set_output(api_->builder, logits.id) != MNEMO_OK) throw PluginError(api_->last_error(api_->builder));
    }

    T get_rows(T table, T idx) const { return op(MNEMO_OP_GET_ROWS, {table, idx}); }
    T matmul(T x, T w) const { return op(MNEMO_OP_MATMUL, {x, w}); }
    T add(T a, T b) const { return op(MNEMO_OP_ADD, {a, b}); }
    T mul(T a, T b) const { return op(MNEMO_OP_MUL, {a, b}); }
    T scale(T x, float s) const { return op(MNEMO_OP_SCALE, {x}, {}, {s}); }
    T rms_norm(T x, T w, float eps) const { return op(MNEMO_OP_RMS_NORM, {x, w}, {}, {eps}); }
    T layer_norm(T x, T w, T b, float eps) const { return op(MNEMO_OP_LAYER_NORM, {x, w, b}, {}, {eps}); }
    // mode 0: rotate-half (HF), 1: interleaved; rot = rotary dims
    T rope(T x, T pos, T inv_freq, int64_t mode, int64_t rot) const {
        return op(MNEMO_OP_ROPE, {x, pos, inv_freq}, {mode, rot});
    }
    // Angles at pos + offset (Memory3: context after the memories' interval).
    T rope(T x, T pos, T inv_freq, int64_t mode, int64_t rot, int64_t offset) const {
        return offset == 0 ? rope(x, pos, inv_freq, mode, rot) : op(MNEMO_OP_ROPE, {x, pos, inv_freq}, {mode, rot, offset});
    }
    T silu(T x) const { return op(MNEMO_OP_SILU, {x}); }
    T clamp(T x, float lo, float hi) const { return op(MNEMO_OP_CLAMP, {x}, {}, {lo, hi}); }
    T swiglu(T gate, T up) const { return op(MNEMO_OP_SWIGLU, {gate, up}); }
    T softmax(T x, float scale = 1.0f) const { return op(MNEMO_OP_SOFTMAX, {x}, {}, {scale}); }
    T kv_store(T cache, T src, T seq, T pos) const { return op(MNEMO_OP_KV_STORE, {cache, src, seq, pos}); }
    T attention(T q, T k_cache, T v_cache, T seq, T pos, float scale) const {
        return op(MNEMO_OP_ATTENTION, {q, k_cache, v_cache, seq, pos}, {}, {scale});
    }
    // Attention after a prefix block: the same block for every query (shared prefix) ...
    T attention(T q, T k_cache, T v_cache, T seq, T pos, T prefix_k, T prefix_v, T prefix_len, float scale) const {
        return op(MNEMO_OP_ATTENTION, {q, k_cache, v_cache, seq, pos, prefix_k, prefix_v, prefix_len}, {}, {scale});
    }
    // ... or block pblock[n] for query n (explicit memories of the query's chunk).
    T attention(T q, T k_cache, T v_cache, T seq, T pos, T prefix_k, T prefix_v, T prefix_len, T pblock,
                float scale) const {
        return op(MNEMO_OP_ATTENTION, {q, k_cache, v_cache, seq, pos, prefix_k, prefix_v, prefix_len, pblock}, {}, {scale});
    }
    // mode 0: softmax weights, 1: exp of the scores; positions below first_pos are not counted.
    T attn_mass(T q, T k, T seq, T pos, int64_t mode, int64_t first_pos, float scale) const {
        return op(MNEMO_OP_ATTN_MASS, {q, k, seq, pos}, {mode, first_pos}, {scale});
    }
    T vq_decode(T codes, T coarse, T pq, int64_t coarse_bits, int64_t pq_bits) const {
        return op(MNEMO_OP_VQ_DECODE, {codes, coarse, pq}, {coarse_bits, pq_bits});
    }
    T vq_decode(T codes, T coarse, T pq, T rotation, int64_t coarse_bits, int64_t pq_bits) const {
        return op(MNEMO_OP_VQ_DECODE, {codes, coarse, pq, rotation}, {coarse_bits, pq_bits});
    }
    // Memory layers: rank scores (i32 indices, ties to the lower index), pick the chosen scores,
    // and the fused weighted bag sum over table rows.
    T argtopk(T x, int64_t k) const { return op(MNEMO_OP_ARGTOPK, {x}, {k}); }
    T take_along(T x, T idx) const { return op(MNEMO_OP_TAKE_ALONG, {x, idx}); }
    T embedding_bag(T table, T idx, T weights) const { return op(MNEMO_OP_EMBEDDING_BAG, {table, idx, weights}); }
    // Bag with G groups (idx = g*R + row; out [N, G*C]) and/or per-core weights [N, m, P].
    T embedding_bag(T table, T idx, T weights, int64_t groups) const {
        return op(MNEMO_OP_EMBEDDING_BAG, {table, idx, weights}, {groups});
    }
    // Product keys: sub-key scores [N, 2H, Nk, Rk] of queries [N, Q, 2, K] (head h reads query h/share).
    T pk_score(T q, T keys, int64_t heads, int64_t share) const {
        return op(MNEMO_OP_PK_SCORE, {q, keys}, {heads, share});
    }
    T pk_score(T q, T keys, T key_norm, float eps, int64_t heads, int64_t share) const {
        return op(MNEMO_OP_PK_SCORE, {q, keys, key_norm}, {heads, share}, {eps});
    }
    // Two-stage top-k: additive (scores alone) or Tucker (u, v and cores).
    T pk_topk(T scores, int64_t m, int64_t k) const { return op(MNEMO_OP_PK_TOPK, {scores}, {m, k}); }
    T pk_topk(T scores, T u, T v, const std::vector<T>& cores, int64_t m, int64_t k) const {
        return op_list(MNEMO_OP_PK_TOPK, with(std::vector<T>{scores, u, v}, cores), {m, k});
    }
    T pk_pair_scores(T scores, T idx, const std::vector<T>& cores = {}) const {
        return op_list(MNEMO_OP_PK_PAIR_SCORES, with(std::vector<T>{scores, idx}, cores), {});
    }
    T mem_index(T virt, int64_t value_num, int64_t offset, int64_t rows, int64_t groups, bool with_group) const {
        return op(MNEMO_OP_MEM_INDEX, {virt}, {value_num, offset, rows, groups, with_group ? 1 : 0});
    }
    T mem_index(T virt, T shuffle, int64_t value_num, int64_t offset, int64_t rows, int64_t groups, bool with_group) const {
        return op(MNEMO_OP_MEM_INDEX, {virt, shuffle}, {value_num, offset, rows, groups, with_group ? 1 : 0});
    }
    // act: 0 none, 1 GELU (erf), 2 GELU (tanh)
    T peer_gate(T table, T idx, T x, T scores, int64_t act) const {
        return op(MNEMO_OP_PEER_GATE, {table, idx, x, scores}, {act});
    }
    T hive(T bank, T idx, T weights, T proj) const { return op(MNEMO_OP_HIVE, {bank, idx, weights, proj}); }
    T moe_ffn(T x, T experts, T weights, T gate, T up, T down) const {
        return op(MNEMO_OP_MOE_FFN, {x, experts, weights, gate, up, down});
    }
    T gelu(T x) const { return op(MNEMO_OP_GELU, {x}); }
    // mode 0: tanh approximation (as gelu(x)), 1: exact 0.5 x (1 + erf(x / sqrt 2)) (XLM, BERT)
    T gelu(T x, int64_t mode) const { return op(MNEMO_OP_GELU, {x}, {mode}); }
    T layer_norm(T x, float eps) const { return op(MNEMO_OP_LAYER_NORM, {x}, {}, {eps}); }
    T rms_norm(T x, float eps) const { return op(MNEMO_OP_RMS_NORM, {x}, {}, {eps}); }

    T op_list(mnemo_op op, const std::vector<T>& inputs, std::initializer_list<int64_t> ip,
              std::initializer_list<float> fp = {}) const {
        if (inputs.size() > MNEMO_MAX_INPUTS) throw PluginError("too many op inputs");
        mnemo_tid in[MNEMO_MAX_INPUTS];
        int32_t n = 0;
        for (T t : inputs) in[n++] = t.id;
        std::vector<int64_t> ipv(ip);
        std::vector<float> fpv(fp);
        return checked(api_->op(api_->builder, op, n, in, static_cast<int32_t>(ipv.size()), ipv.data(),
                                static_cast<int32_t>(fpv.size()), fpv.data()),
                       "op");
    }

private:
    static std::vector<T> with(std::vector<T> a, const std::vector<T>& b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
    }
    T checked(mnemo_tid id, const char* what) const {
        if (id < 0) throw PluginError(api_->last_error(api_->builder));
        return T{id};
    }
    const mnemo_builder_api* api_;
};

// What every model reports after it is created (mnemo_model_info less the memory spec).
struct ModelFacts {
    int64_t vocab_size = 0;
    int64_t n_ctx_train = 0;  // positions the model was trained on; 0 when unknown
    int64_t hidden_size = 0;
    int64_t n_layers = 0;
    std::string architecture;  // human-readable; cut to the ABI's 255 bytes
};

inline void report(mnemo_model_info& info, const ModelFacts& f) {
    info.vocab_size = f.vocab_size;
    info.n_ctx_train = f.n_ctx_train;
    info.hidden_size = f.hidden_size;
    info.n_layers = f.n_layers;
    std::snprintf(info.architecture, sizeof info.architecture, "%s", f.architecture.c_str());
}

inline void write_error(mnemo_error* err, const char* msg) {
    if (err) std::snprintf(err->message, sizeof err->message, "%s", msg);
}

// C entry points generated for a model class.
template <class Model>
struct Entry {
    static mnemo_status create(const mnemo_host_api* host, const mnemo_context_params* params, mnemo_model_info* info,
                               void** out_model, mnemo_error* err) {
        try {
            Host h(host);
            std::unique_ptr<Model> m = make(h, *params, *info);
            *out_model = m.release();
            return MNEMO_OK;
        } catch (const std::exception& e) {
            write_error(err, e.what());
            return MNEMO_ERR_INVALID;
        }
    }
    static mnemo_status build(void* model, const mnemo_builder_api* b, mnemo_error* err) {
        try {
            Graph g(b);
            static_cast<const Model*>(model)->build(g);
            return MNEMO_OK;
        } catch (const std::exception& e) {
            write_error(err, e.what());
            return MNEMO_ERR_INVALID;
        }
    }
    static void destroy(void* model) { delete static_cast<Model*>(model); }

private:
    static std::unique_ptr<Model> make(Host& h, const mnemo_context_params& params, mnemo_model_info& info) {
        if constexpr (requires { Model::create(h, params, info); })
            return Model::create(h, params, info);
        else
            return std::make_unique<Model>(h, params, info);
    }
};

}  // namespace mnemo::plugin

#define MNEMO_PLUGIN(ModelClass, NAME, DESCRIPTION, ...)                                              \
    extern "C" MNEMO_EXPORT const mnemo_plugin_api* mnemo_plugin_entry(void) {                        \
        static const char* const types[] = {__VA_ARGS__, nullptr};                                     \
        static const mnemo_plugin_api api = {MNEMO_ABI_VERSION,                                        \
                                             sizeof(mnemo_plugin_api),                                 \
                                             NAME,                                                     \
                                             DESCRIPTION,                                              \
                                             types,                                                    \
                                             &mnemo::plugin::Entry<ModelClass>::create,                \
                                             &mnemo::plugin::Entry<ModelClass>::build,                 \
                                             &mnemo::plugin::Entry<ModelClass>::destroy};              \
        return &api;                                                                                   \
    }
