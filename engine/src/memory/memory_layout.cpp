#include "memory/memory_layout.hpp"

#include <algorithm>
#include <string>

#include "mnemo/error.hpp"

namespace mnemo::detail {

namespace {

TensorShape shape(DType dtype, std::initializer_list<int64_t> dims) {
    TensorShape s{dtype, static_cast<int32_t>(dims.size()), {}};
    std::copy(dims.begin(), dims.end(), s.shape);
    return s;
}

bool same(const TensorShape& a, const TensorShape& b) {
    if (a.dtype != b.dtype || a.ndim != b.ndim) return false;
    for (int32_t d = 0; d < a.ndim; ++d)
        if (a.shape[d] != b.shape[d]) return false;
    return true;
}

std::string num(int64_t v) { return std::to_string(v); }

}  // namespace

MemoryLayout derive_memory_layout(const mnemo_memory_spec& d, int64_t n_layers, MemoryHost& host) {
    const std::string who = "the " + host.plugin_name() + " plugin reads explicit memories, but ";
    auto bad = [&](const std::string& what) { return Error(who + what); };
    MemoryLayout m;
    MemorySpec& s = m.spec;

    // The schedule, as the plugin reports it.
    if (d.n_prefix < 0 || d.n_prefix > MNEMO_MAX_PREFIX_IDS)
        throw bad("its prefix has " + num(d.n_prefix) + " ids (0.." + num(MNEMO_MAX_PREFIX_IDS) + " are possible)");
    s.prefix_ids.assign(d.prefix_ids, d.prefix_ids + d.n_prefix);
    s.tokens_per_head = d.tokens_per_head;
    s.reference_length = d.reference_length;
    s.chunk_length = d.chunk_length;
    s.references_per_chunk = d.references_per_chunk;
    s.encode_sequences = d.encode_sequences;
    s.retrieval_layer = d.retrieval_layer;
    if (s.tokens_per_head < 1 || s.reference_length < s.tokens_per_head || s.chunk_length < 1 ||
        s.references_per_chunk < 1 || s.encode_sequences < 1)
        throw bad("its schedule is invalid: tokens_per_head " + num(s.tokens_per_head) + ", reference_length " +
                  num(s.reference_length) + ", chunk_length " + num(s.chunk_length) + ", references_per_chunk " +
                  num(s.references_per_chunk) + ", encode_sequences " + num(s.encode_sequences) +
                  " (each must be >= 1, and tokens_per_head <= reference_length)");
    if (s.retrieval_layer < 0 || s.retrieval_layer > n_layers)
        throw bad("its retrieval_layer " + num(s.retrieval_layer) + " is not in 0.." + num(n_layers));

    // The states: memory.len gives the blocks, the first layer's keys and values the heads and
    // dims, and each layer's slot count whether it is an explicit-memory layer.
    const DeclaredState len = host.state("memory.len");
    if (len.id < 0) throw bad("it declared no state 'memory.len'");
    if (len.shape.dtype != DType::I32 || len.shape.ndim != 1 || len.shape.shape[0] < 1)
        throw bad("its state 'memory.len' is " + len.shape.str() + "; the contract needs i32 [blocks], blocks >= 1");
    m.len_state = len.id;
    s.blocks = static_cast<int32_t>(len.shape.shape[0]);
    const int64_t b = m.prefix(), with_memories = b + m.memory_slots();
    auto declared = [&](const std::string& name) {
        const DeclaredState st = host.state(name);
        if (st.id < 0) throw bad("it declared no state '" + name + "' (every layer has memory.k.<l> and memory.v.<l>)");
        const bool cache_type = st.shape.dtype == DType::F32 || st.shape.dtype == DType::F16 || st.shape.dtype == DType::Q8_0;
        if (!cache_type || st.shape.ndim != 4 || st.shape.shape[1] < 1 || st.shape.shape[3] < 1)
            throw bad("its state '" + name + "' is " + st.shape.str() +
                      "; the contract needs f32/f16/q8_0 [blocks, kv_heads, slots, dim] with kv_heads, dim >= 1");
        return st;
    };
    m.layers.resize(static_cast<size_t>(n_layers));
    for (int64_t l = 0; l < n_layers; ++l) {
        const std::string suffix = std::string(".") + num(l);  // (GCC 12 warns falsely on "." + string)
        const DeclaredState k = declared("memory.k" + suffix), v = declared("memory.v" + suffix);
        if (l == 0) {
            m.dtype = k.shape.dtype;  // every other memory state must match it (checked below)
            s.kv_heads = static_cast<int32_t>(k.shape.shape[1]);
            s.head_dim = static_cast<int32_t>(k.shape.shape[3]);
            s.value_dim = static_cast<int32_t>(v.shape.shape[3]);
        }
        // Slots beyond the prefix make an explicit-memory layer: they hold the chunk's memories.
        const bool memory_layer = k.shape.shape[2] != b;
        MemoryLayout::Layer& L = m.layers[static_cast<size_t>(l)];
        L.k = k.id;
        L.v = v.id;
        L.blocks = memory_layer ? s.blocks : 1;
        L.slots = memory_layer ? with_memories : b;
        for (const auto* st : {&k, &v}) {
            const int64_t dim = st == &k ? s.head_dim : s.value_dim;
            const TensorShape want = shape(m.dtype, {L.blocks, s.kv_heads, L.slots, dim});
            if (!same(st->shape, want)) {
                const std::string name = (st == &k ? "memory.k" : "memory.v") + suffix;
                throw bad("its state '" + name + "' is " + st->shape.str() + "; the contract needs " +
                          shape(m.dtype, {s.blocks, s.kv_heads, with_memories, dim}).str() + " for an explicit-memory layer or " +
                          shape(m.dtype, {1, s.kv_heads, b, dim}).str() +
                          " for another (blocks from memory.len, heads and dims from layer 0, slots " + num(b) +
                          " prefix + " + num(s.references_per_chunk) + " references x " + num(s.tokens_per_head) +
                          " tokens)");
            }
        }
        if (memory_layer) {
            L.memory_index = static_cast<int32_t>(s.memory_layers.size());
            s.memory_layers.push_back(static_cast<int32_t>(l));
        }
    }
    if (s.memory_layers.empty())
        throw bad("none of its layers has slots for memories (an explicit-memory layer's memory.k.<l> holds " + num(b) +
                  " prefix + " + num(m.memory_slots()) + " memory slots per block)");

    // The retrieval vectors are "hidden" pooled: its width is retrieval_dim.
    const TensorShape h = host.output_shape(MNEMO_GRAPH_ENCODE_QUERY, 1, "hidden");
    if (h.dtype != DType::F32 || h.ndim != 2 || h.shape[0] != 1 || h.shape[1] < 1)
        throw bad("its retrieval-query graph's output 'hidden' is " + h.str() +
                  " for one token; the contract needs f32 [1, retrieval_dim]");
    s.retrieval_dim = static_cast<int32_t>(h.shape[1]);
    return m;
}

}  // namespace mnemo::detail
