// Session: explicit memories (Memory3, shared/papers/004). The plugin builds the graphs and
// declares the states (see mnemo_memory_spec in plugin_abi.h); this file decides what goes into
// them: the reference BOS keys/values (computed once by the model), the memories each chunk
// retrieves (§3.1: every prompt chunk its own, generated tokens switch every chunk_length), and
// the writing of new memories (§3.3).
#include <chrono>
#include <cmath>
#include <numeric>

#include "mnemo/io/sha256.hpp"
#include "session/session_impl.hpp"

namespace mnemo {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t ns_since(Clock::time_point t0) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

MemorySpec spec_from(const mnemo_memory_spec& m, int64_t n_layers) {
    auto bad = [](const std::string& what) { return Error("the plugin's memory description is invalid: " + what); };
    MemorySpec s;
    if (m.n_memory_layers < 0 || m.n_memory_layers > MNEMO_MAX_MEMORY_LAYERS) throw bad("memory layer count");
    s.memory_layers.assign(m.memory_layers, m.memory_layers + m.n_memory_layers);
    for (size_t i = 0; i < s.memory_layers.size(); ++i)
        if (s.memory_layers[i] < 0 || s.memory_layers[i] >= n_layers || (i && s.memory_layers[i] <= s.memory_layers[i - 1]))
            throw bad("memory layers must be ascending layer indices");
    s.kv_heads = m.kv_heads;
    s.head_dim = m.head_dim;
    s.value_dim = m.value_dim;
    s.tokens_per_head = m.tokens_per_head;
    s.reference_length = m.reference_length;
    s.chunk_length = m.chunk_length;
    s.references_per_chunk = m.references_per_chunk;
    s.blocks = m.blocks;
    s.encode_sequences = m.encode_sequences;
    s.retrieval_layer = m.retrieval_layer;
    s.retrieval_dim = m.retrieval_dim;
    if (m.n_prefix < 0 || m.n_prefix > MNEMO_MAX_PREFIX_IDS) throw bad("prefix length");
    s.prefix_ids.assign(m.prefix_ids, m.prefix_ids + m.n_prefix);
    if (s.kv_heads < 1 || s.head_dim < 1 || s.value_dim < 1 || s.tokens_per_head < 1 || s.reference_length < s.tokens_per_head ||
        s.chunk_length < 1 || s.references_per_chunk < 0 || s.blocks < 1 || s.encode_sequences < 1 || s.retrieval_dim < 1)
        throw bad("sizes must be positive (tokens_per_head <= reference_length)");
    return s;
}

// Same memories in the same order: a block holding them can serve another chunk as it is.
bool same_memories(const MemorySet& a, const MemorySet& b) {
    if (a.memories.size() != b.memories.size()) return false;
    for (size_t i = 0; i < a.memories.size(); ++i)
        if (a.memories[i]->id != b.memories[i]->id) return false;
    return true;
}

void normalise(std::vector<float>& v) {
    double n = 0;
    for (float x : v) n += static_cast<double>(x) * x;
    if (n > 0) {
        const float inv = static_cast<float>(1.0 / std::sqrt(n));
        for (float& x : v) x *= inv;
    }
}

}  // namespace

// ---------------------------------------------------------------- set-up

void Session::Impl::memory_init() {
    auto m = std::make_unique<MemoryState>();
    m->spec = spec_from(info.memory, info.n_layers);
    const MemorySpec& sp = m->spec;
    const int64_t b = static_cast<int64_t>(sp.prefix_ids.size());
    const int64_t mem_slots = b + static_cast<int64_t>(sp.references_per_chunk) * sp.tokens_per_head;

    std::map<std::string, int32_t> by_name;
    const std::vector<ParamDecl>& params = host->params();
    for (size_t i = 0; i < params.size(); ++i)
        if (params[i].kind == ParamKind::State) by_name[params[i].name] = static_cast<int32_t>(i);
    auto state = [&](const std::string& name, DType dt, std::vector<int64_t> shape) {
        auto it = by_name.find(name);
        if (it == by_name.end()) throw Error("the " + plugin->name + " plugin reads explicit memories but declared no state '" + name + "'");
        const TensorShape& s = params[it->second].shape;
        bool ok = s.dtype == dt && s.ndim == static_cast<int32_t>(shape.size());
        for (size_t d = 0; ok && d < shape.size(); ++d) ok = s.shape[d] == shape[d];
        if (!ok) {
            TensorShape want;
            want.dtype = dt;
            want.ndim = static_cast<int32_t>(shape.size());
            for (size_t d = 0; d < shape.size(); ++d) want.shape[d] = shape[d];
            throw Error("state '" + name + "' is " + s.str() + ", the memory description needs " + want.str());
        }
        return it->second;
    };
    m->layers.resize(static_cast<size_t>(info.n_layers));
    for (size_t mi = 0; mi < sp.memory_layers.size(); ++mi) m->layers[static_cast<size_t>(sp.memory_layers[mi])].memory_index = static_cast<int32_t>(mi);
    for (int64_t l = 0; l < info.n_layers; ++l) {
        MemoryState::Layer& L = m->layers[static_cast<size_t>(l)];
        const bool mem = L.memory_index >= 0;
        L.blocks = mem ? sp.blocks : 1;
        L.slots = mem ? mem_slots : b;
        const std::string suffix = std::string(".") + std::to_string(l);
        L.k = state("memory.k" + suffix, DType::F32, {L.blocks, sp.kv_heads, L.slots, sp.head_dim});
        L.v = state("memory.v" + suffix, DType::F32, {L.blocks, sp.kv_heads, L.slots, sp.value_dim});
    }
    m->len_state = state("memory.len", DType::I32, {sp.blocks});
    m->block_set.assign(static_cast<size_t>(sp.blocks), m->empty);
    m->block_stamp.assign(static_cast<size_t>(sp.blocks), 0);
    m->seqs.resize(static_cast<size_t>(n_seq));
    memory = std::move(m);

    // The reference BOS: a plain causal pass over its ids at positions -b..-1 ("the new
    // constant for all attention heads", §3.2), run once; its keys/values go into slots
    // 0..b-1 of every block of every layer.
    memory->bos_k.assign(static_cast<size_t>(info.n_layers), {});
    memory->bos_v.assign(static_cast<size_t>(info.n_layers), {});
    if (b > 0) {
        std::vector<BatchToken> rows;
        for (int64_t i = 0; i < b; ++i) rows.push_back({sp.prefix_ids[static_cast<size_t>(i)], static_cast<int32_t>(i), 0, false});
        std::vector<std::string> wanted;
        for (int64_t l = 0; l < info.n_layers; ++l) {
            wanted.push_back(std::string("k.") + std::to_string(l));
            wanted.push_back(std::string("v.") + std::to_string(l));
        }
        auto out = run_encode(MNEMO_GRAPH_ENCODE, rows, wanted);
        for (int64_t l = 0; l < info.n_layers; ++l) {
            // [b, Hkv, D] rows -> [Hkv, b, D] block layout
            auto to_heads = [&](const std::vector<float>& x, int32_t d) {
                std::vector<float> y(x.size());
                for (int64_t t = 0; t < b; ++t)
                    for (int32_t h = 0; h < sp.kv_heads; ++h)
                        std::copy_n(&x[static_cast<size_t>((t * sp.kv_heads + h) * d)], d, &y[static_cast<size_t>((h * b + t) * d)]);
                return y;
            };
            memory->bos_k[static_cast<size_t>(l)] = to_heads(out[std::string("k.") + std::to_string(l)], sp.head_dim);
            memory->bos_v[static_cast<size_t>(l)] = to_heads(out[std::string("v.") + std::to_string(l)], sp.value_dim);
        }
    }
    std::vector<int32_t> lens(static_cast<size_t>(sp.blocks), static_cast<int32_t>(b));
    for (int64_t l = 0; l < info.n_layers; ++l) {
        const MemoryState::Layer& L = memory->layers[static_cast<size_t>(l)];
        for (int64_t blk = 0; blk < L.blocks; ++blk) {
            auto fill = [&](int32_t id, const std::vector<float>& bos, int32_t d) {
                std::vector<float> block(static_cast<size_t>(sp.kv_heads * L.slots * d), 0.0f);
                for (int32_t h = 0; h < sp.kv_heads; ++h)
                    std::copy_n(bos.data() + static_cast<size_t>(h * b * d), static_cast<size_t>(b * d),
                                block.data() + static_cast<size_t>(h * L.slots * d));
                device->write(param_buffers[id], static_cast<uint64_t>(blk) * block.size() * 4, block.data(), block.size() * 4,
                              "state '" + host->params()[id].name + "'");
            };
            fill(L.k, memory->bos_k[static_cast<size_t>(l)], sp.head_dim);
            fill(L.v, memory->bos_v[static_cast<size_t>(l)], sp.value_dim);
        }
    }
    device->write(param_buffers[memory->len_state], 0, lens.data(), lens.size() * 4, "state 'memory.len'");
}

// ---------------------------------------------------------------- graph runs

std::map<std::string, std::vector<float>> Session::Impl::run_encode(int32_t purpose, const std::vector<BatchToken>& rows,
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
        device->read(arena, p.memory.where[it->second].offset, v.data(), v.size() * 4, "memory graph output '" + name + "'");
    }
    return out;
}

// ---------------------------------------------------------------- blocks

void Session::Impl::bind_memory_blocks(const std::vector<std::shared_ptr<const MemorySet>>& sets,
                                       const std::vector<int32_t>& row_set) {
    MemoryState& m = *memory;
    const MemorySpec& sp = m.spec;
    const int64_t b = static_cast<int64_t>(sp.prefix_ids.size());
    const size_t B = m.block_set.size();
    if (sets.size() > B) throw Error("internal: a batch needs " + std::to_string(sets.size()) + " memory blocks, the model has " + std::to_string(B));
    ++m.clock;
    std::vector<int32_t>& block_of = m.block_of;
    std::vector<char>& taken = m.taken;
    block_of.assign(sets.size(), -1);
    taken.assign(B, 0);
    for (size_t i = 0; i < sets.size(); ++i)
        for (size_t blk = 0; blk < B; ++blk)
            if (!taken[blk] && same_memories(*m.block_set[blk], *sets[i])) {
                block_of[i] = static_cast<int32_t>(blk);
                taken[blk] = 1;
                break;
            }
    for (size_t i = 0; i < sets.size(); ++i) {
        if (block_of[i] >= 0) continue;
        size_t victim = B;
        for (size_t blk = 0; blk < B; ++blk)
            if (!taken[blk] && (victim == B || m.block_stamp[blk] < m.block_stamp[victim])) victim = blk;
        taken[victim] = 1;
        block_of[i] = static_cast<int32_t>(victim);
        // Upload: per layer, the block [Hkv, slots, D] = reference BOS then the memories' slots
        // packed in retrieval order (attention is a set operation: the order is only layout).
        const auto t0 = Clock::now();
        const MemorySet& set = *sets[i];
        const bool coded = !set.memories.empty() && set.memories.front()->compressed();
        if (coded) decode_block(block_of[i], set);
        for (size_t l = 0; l < m.layers.size() && !coded; ++l) {
            const MemoryState::Layer& L = m.layers[l];
            if (L.memory_index < 0) continue;
            auto fill = [&](int32_t id, const std::vector<float>& bos, int32_t d, bool keys) {
                std::vector<float> block(static_cast<size_t>(sp.kv_heads * L.slots * d), 0.0f);
                for (int32_t h = 0; h < sp.kv_heads; ++h) {
                    float* dst = block.data() + static_cast<size_t>(h * L.slots * d);
                    std::copy_n(bos.data() + static_cast<size_t>(h * b * d), static_cast<size_t>(b * d), dst);
                    int64_t slot = b;
                    for (const auto& mem : set.memories) {
                        const std::vector<float>& src = keys ? mem->keys : mem->values;
                        const size_t base = static_cast<size_t>(((L.memory_index * sp.kv_heads + h) * sp.tokens_per_head) * d);
                        std::copy_n(src.data() + base, static_cast<size_t>(mem->n_valid * d), dst + slot * d);
                        slot += mem->n_valid;
                    }
                }
                device->write(param_buffers[id], static_cast<uint64_t>(block_of[i]) * block.size() * 4, block.data(),
                              block.size() * 4, "memory block");
            };
            fill(L.k, m.bos_k[l], sp.head_dim, true);
            fill(L.v, m.bos_v[l], sp.value_dim, false);
        }
        const int32_t len = static_cast<int32_t>(b + set.slots);
        device->write(param_buffers[m.len_state], static_cast<uint64_t>(block_of[i]) * 4, &len, 4, "state 'memory.len'");
        m.block_set[static_cast<size_t>(block_of[i])] = sets[i];
        memory_stats.block_uploads++;
        memory_stats.memories_read += set.memories.size();
        memory_stats.upload_ns += ns_since(t0);
    }
    for (size_t i = 0; i < sets.size(); ++i) m.block_stamp[static_cast<size_t>(block_of[i])] = m.clock;
    in_block.resize(row_set.size());
    for (size_t r = 0; r < row_set.size(); ++r) in_block[r] = block_of[static_cast<size_t>(row_set[r])];
}

std::vector<std::shared_ptr<const MemorySet>> Session::Impl::retrieve_for_chunks(const std::vector<std::vector<int32_t>>& chunks) {
    MemoryState& m = *memory;
    std::vector<std::shared_ptr<const MemorySet>> out(chunks.size(), m.empty);
    if (!m.source || m.spec.references_per_chunk == 0) return out;
    std::vector<std::vector<float>> vectors;
    if (m.source->wants_vector()) {
        const auto t0 = Clock::now();
        vectors = retrieval_vectors_impl(chunks);
        memory_stats.query_ns += ns_since(t0);
    }
    const MemorySpec& sp = m.spec;
    for (size_t c = 0; c < chunks.size(); ++c) {
        ChunkQuery q;
        q.tokens = &chunks[c];
        if (!vectors.empty()) q.vector = &vectors[c];
        const auto t0 = Clock::now();
        auto got = m.source->retrieve(q, sp.references_per_chunk);
        memory_stats.retrieve_ns += ns_since(t0);
        memory_stats.retrievals++;
        if (static_cast<int32_t>(got.size()) > sp.references_per_chunk)
            throw Error(m.source->describe() + ": returned " + std::to_string(got.size()) + " memories for a chunk, at most " +
                        std::to_string(sp.references_per_chunk) + " were asked for");
        auto set = std::make_shared<MemorySet>();
        const MemoryCodec* codec = m.source->codec();  // the source's memories are all coded with it, or none
        for (auto& mem : got) {
            if (!mem) throw Error(m.source->describe() + ": returned an empty memory");
            const size_t slots = static_cast<size_t>(sp.memory_layers.size()) * sp.kv_heads * sp.tokens_per_head;
            const bool shape_ok =
                codec ? mem->compressed() && mem->key_codes.size() == slots * codec->keys.code_words() &&
                            mem->value_codes.size() == slots * codec->values.code_words()
                      : !mem->compressed() && mem->keys.size() == slots * sp.head_dim && mem->values.size() == slots * sp.value_dim;
            if (mem->n_valid < 0 || mem->n_valid > sp.tokens_per_head || !shape_ok)
                throw Error(m.source->describe() + ": memory " + std::to_string(mem->id) + " does not have this model's shape" +
                            (codec ? " (compressed with the source's codec)" : ""));
            set->slots += mem->n_valid;
            set->memories.push_back(std::move(mem));
        }
        out[c] = std::move(set);
    }
    return out;
}

std::vector<std::vector<float>> Session::Impl::retrieval_vectors_impl(const std::vector<std::vector<int32_t>>& texts) {
    const MemorySpec& sp = memory->spec;
    const int32_t b = static_cast<int32_t>(sp.prefix_ids.size());
    std::vector<std::vector<float>> out;
    for (size_t first = 0; first < texts.size(); first += static_cast<size_t>(sp.encode_sequences)) {
        const size_t last = std::min(texts.size(), first + static_cast<size_t>(sp.encode_sequences));
        std::vector<BatchToken> rows;
        for (size_t i = first; i < last; ++i) {
            const std::vector<int32_t>& t = texts[i];
            if (t.empty() || static_cast<int32_t>(t.size()) > sp.reference_length)
                throw Error("a retrieval text holds " + std::to_string(t.size()) + " tokens; 1.." + std::to_string(sp.reference_length) +
                            " are allowed");
            const int32_t seq = static_cast<int32_t>(i - first);
            for (int32_t j = 0; j < b; ++j) rows.push_back({sp.prefix_ids[static_cast<size_t>(j)], j, seq, false});
            for (size_t j = 0; j < t.size(); ++j) rows.push_back({t[j], b + static_cast<int32_t>(j), seq, false});
        }
        auto res = run_encode(MNEMO_GRAPH_ENCODE_QUERY, rows, {"hidden"});
        memory_stats.query_passes++;
        const std::vector<float>& h = res["hidden"];
        const size_t dim = static_cast<size_t>(sp.retrieval_dim);
        if (h.size() != rows.size() * dim) throw Error("memory graph output 'hidden' does not hold retrieval_dim values per token");
        size_t row = 0;
        for (size_t i = first; i < last; ++i) {
            row += static_cast<size_t>(b);
            std::vector<double> acc(dim, 0.0);
            for (size_t j = 0; j < texts[i].size(); ++j, ++row)
                for (size_t d = 0; d < dim; ++d) acc[d] += h[row * dim + d];
            std::vector<float> v(dim);
            for (size_t d = 0; d < dim; ++d) v[d] = static_cast<float>(acc[d] / static_cast<double>(texts[i].size()));
            normalise(v);
            out.push_back(std::move(v));
        }
    }
    return out;
}

// ---------------------------------------------------------------- writing (§3.3)

std::vector<WrittenMemory> Session::Impl::write_memories_impl(const std::vector<std::vector<int32_t>>& refs) {
    const MemorySpec& sp = memory->spec;
    const int32_t b = static_cast<int32_t>(sp.prefix_ids.size());
    const int32_t keep = sp.tokens_per_head, H = sp.kv_heads;
    const size_t n_mem = sp.memory_layers.size();
    std::vector<std::string> wanted = {"hidden"};
    for (int32_t l : sp.memory_layers)
        for (const char* what : {"k.", "v.", "mass."}) wanted.push_back(std::string(what) + std::to_string(l));
    std::vector<WrittenMemory> out;
    for (size_t first = 0; first < refs.size(); first += static_cast<size_t>(sp.encode_sequences)) {
        const size_t last = std::min(refs.size(), first + static_cast<size_t>(sp.encode_sequences));
        std::vector<BatchToken> rows;
        std::vector<size_t> row0;
        for (size_t i = first; i < last; ++i) {
            const std::vector<int32_t>& t = refs[i];
            if (t.empty() || static_cast<int32_t>(t.size()) > sp.reference_length)
                throw Error("reference " + std::to_string(i) + " holds " + std::to_string(t.size()) + " tokens; 1.." +
                            std::to_string(sp.reference_length) + " are allowed");
            const int32_t seq = static_cast<int32_t>(i - first);
            row0.push_back(rows.size());
            for (int32_t j = 0; j < b; ++j) rows.push_back({sp.prefix_ids[static_cast<size_t>(j)], j, seq, false});
            for (size_t j = 0; j < t.size(); ++j) rows.push_back({t[j], b + static_cast<int32_t>(j), seq, false});
        }
        auto res = run_encode(MNEMO_GRAPH_ENCODE, rows, wanted);
        const size_t dim = static_cast<size_t>(sp.retrieval_dim);
        for (size_t i = first; i < last; ++i) {
            const size_t r0 = row0[i - first] + static_cast<size_t>(b);
            const int32_t n = static_cast<int32_t>(refs[i].size());
            WrittenMemory w;
            ExplicitMemory& mem = w.memory;
            mem.n_valid = std::min(n, keep);
            mem.indices.assign(n_mem * static_cast<size_t>(H * keep), -1);
            mem.keys.assign(n_mem * static_cast<size_t>(H * keep * sp.head_dim), 0.0f);
            mem.values.assign(n_mem * static_cast<size_t>(H * keep * sp.value_dim), 0.0f);
            for (size_t mi = 0; mi < n_mem; ++mi) {
                const std::string l = std::to_string(sp.memory_layers[mi]);
                const std::vector<float>& mass = res["mass." + l];
                const std::vector<float>& k = res["k." + l];
                const std::vector<float>& v = res["v." + l];
                for (int32_t h = 0; h < H; ++h) {
                    // The kept tokens: most attention first, ties to the lower token; stored in
                    // ascending token order.
                    std::vector<int32_t> order(static_cast<size_t>(n));
                    std::iota(order.begin(), order.end(), 0);
                    auto w_of = [&](int32_t j) { return mass[(r0 + static_cast<size_t>(j)) * static_cast<size_t>(H) + static_cast<size_t>(h)]; };
                    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t c) { return w_of(a) > w_of(c); });
                    order.resize(static_cast<size_t>(mem.n_valid));
                    std::sort(order.begin(), order.end());
                    for (int32_t s = 0; s < mem.n_valid; ++s) {
                        const size_t slot = (mi * static_cast<size_t>(H) + static_cast<size_t>(h)) * static_cast<size_t>(keep) + static_cast<size_t>(s);
                        const size_t row = r0 + static_cast<size_t>(order[static_cast<size_t>(s)]);
                        mem.indices[slot] = order[static_cast<size_t>(s)];
                        std::copy_n(&k[(row * static_cast<size_t>(H) + static_cast<size_t>(h)) * static_cast<size_t>(sp.head_dim)], sp.head_dim,
                                    &mem.keys[slot * static_cast<size_t>(sp.head_dim)]);
                        std::copy_n(&v[(row * static_cast<size_t>(H) + static_cast<size_t>(h)) * static_cast<size_t>(sp.value_dim)], sp.value_dim,
                                    &mem.values[slot * static_cast<size_t>(sp.value_dim)]);
                    }
                }
            }
            const std::vector<float>& hid = res["hidden"];
            std::vector<double> acc(dim, 0.0);
            for (int32_t j = 0; j < n; ++j)
                for (size_t d = 0; d < dim; ++d) acc[d] += hid[(r0 + static_cast<size_t>(j)) * dim + d];
            w.vector.resize(dim);
            for (size_t d = 0; d < dim; ++d) w.vector[d] = static_cast<float>(acc[d] / n);
            normalise(w.vector);
            out.push_back(std::move(w));
        }
    }
    return out;
}

// ---------------------------------------------------------------- compressed memories

void Session::Impl::release_codec() {
    if (!memory || !memory->codec) return;
    for (void* g : memory->codec->block_graphs)
        if (g) device->api()->graph_release(device->ctx(), g);
    for (void* b : memory->codec->buffers) device->release(b);
    memory->codec.reset();
    note_device_memory();
}

void Session::Impl::set_codec(const MemoryCodec* mc) {
    // Detaching keeps the decoder, and the same codebooks again (same SHA-256) reuse it: the
    // upload and the per-block decode graphs are made once, not per attach.
    if (!mc || (memory->codec && memory->codec->key_sha == mc->keys.sha256 && memory->codec->value_sha == mc->values.sha256))
        return;
    release_codec();
    const MemorySpec& sp = memory->spec;
    const int64_t b = static_cast<int64_t>(sp.prefix_ids.size());
    const int64_t M = static_cast<int64_t>(sp.references_per_chunk) * sp.tokens_per_head;
    auto c = std::make_unique<MemoryState::Codec>();
    auto upload = [&](const std::vector<float>& v, const std::string& what) {
        void* buf = device->alloc(v.size() * 4, what);
        c->buffers.push_back(buf);
        device->write(buf, 0, v.data(), v.size() * 4, what);
        return buf;
    };
    auto tensor = [](void* buf, uint64_t offset, mnemo_dtype dt, std::initializer_list<int64_t> shape) {
        mnemo_tensor t{};
        t.buffer = buf;
        t.offset = offset;
        t.dtype = dt;
        t.ndim = static_cast<int32_t>(shape.size());
        int i = 0;
        for (int64_t d : shape) t.shape[i++] = d;
        return t;
    };
    const size_t n_mem = sp.memory_layers.size();
    for (int kv = 0; kv < 2; ++kv) {
        const VqCodebook& cb = kv == 0 ? mc->keys : mc->values;
        const int32_t dim = kv == 0 ? sp.head_dim : sp.value_dim;
        const char* what = kv == 0 ? "key" : "value";
        if (static_cast<int32_t>(cb.d_in) != dim)
            throw Error(std::string("the memories' ") + what + " codebook decodes " + std::to_string(cb.d_in) +
                        "-dimensional vectors, this model's heads have " + std::to_string(dim));
        void* coarse = upload(cb.coarse, std::string(what) + " codebook (coarse)");
        void* pq = upload(cb.pq, std::string(what) + " codebook (pq)");
        void* rot = cb.has_rotation() ? upload(cb.rotation, std::string(what) + " codebook (rotation)") : nullptr;
        const uint32_t words = cb.code_words();
        const uint64_t codes_bytes = static_cast<uint64_t>(sp.blocks) * n_mem * sp.kv_heads * M * words * 4;
        void* codes = device->alloc(codes_bytes, std::string(what) + " codes of memory blocks");
        c->buffers.push_back(codes);
        (kv == 0 ? c->key_codes : c->value_codes) = codes;
        (kv == 0 ? c->key_words : c->value_words) = words;
        // Node templates for block 0; decode_block shifts the codes and output offsets.
        for (size_t mi = 0; mi < n_mem; ++mi) {
            const MemoryState::Layer& L = memory->layers[static_cast<size_t>(sp.memory_layers[mi])];
            for (int32_t h = 0; h < sp.kv_heads; ++h) {
                mnemo_node n{};
                n.op = MNEMO_OP_VQ_DECODE;
                n.n_inputs = rot ? 4 : 3;
                n.inputs[0] = tensor(codes, ((mi * sp.kv_heads + static_cast<size_t>(h)) * M) * words * 4, MNEMO_DTYPE_I32, {M, words});
                const int64_t cdim = cb.d_out / cb.coarse_m, pdim = cb.d_out / cb.pq_m;
                n.inputs[1] = tensor(coarse, 0, MNEMO_DTYPE_F32, {cb.coarse_m, int64_t{1} << cb.coarse_nbits, cdim});
                n.inputs[2] = tensor(pq, 0, MNEMO_DTYPE_F32, {cb.pq_m, int64_t{1} << cb.pq_nbits, pdim});
                if (rot) n.inputs[3] = tensor(rot, 0, MNEMO_DTYPE_F32, {cb.d_out, cb.d_in});
                n.output = tensor(param_buffers[kv == 0 ? L.k : L.v], (static_cast<uint64_t>(h) * L.slots + b) * dim * 4,
                                  MNEMO_DTYPE_F32, {M, dim});
                n.iparams[0] = cb.coarse_nbits;
                n.iparams[1] = cb.pq_nbits;
                // The engine's own shape rule first, so a bad codec is a clear error here.
                std::vector<TensorShape> shapes;
                for (int k = 0; k < n.n_inputs; ++k) shapes.push_back(shape_of(n.inputs[k]));
                infer_output(n.op, shapes, std::span<const int64_t>(n.iparams, 2), {});
                if (!device->api()->supports_node(device->ctx(), &n))
                    throw Error("backend '" + device->name() + "' cannot decode these compressed memories (vq_decode)");
                c->templates.push_back(n);
            }
        }
    }
    c->block_graphs.assign(static_cast<size_t>(sp.blocks), nullptr);
    c->key_sha = mc->keys.sha256;
    c->value_sha = mc->values.sha256;
    memory->codec = std::move(c);
    note_device_memory();
}

void Session::Impl::decode_block(int32_t block, const MemorySet& set) {
    MemoryState::Codec& c = *memory->codec;
    const MemorySpec& sp = memory->spec;
    const int64_t M = static_cast<int64_t>(sp.references_per_chunk) * sp.tokens_per_head;
    const size_t n_mem = sp.memory_layers.size();
    const size_t H = static_cast<size_t>(sp.kv_heads), keep = static_cast<size_t>(sp.tokens_per_head);
    // The block's codes, packed like the f32 path packs keys: per (layer, head), the valid slots
    // of each memory in retrieval order; unused slots decode to something attention never reads.
    for (int kv = 0; kv < 2; ++kv) {
        const size_t words = kv == 0 ? c.key_words : c.value_words;
        std::vector<int32_t> codes(n_mem * H * static_cast<size_t>(M) * words, 0);
        for (size_t mi = 0; mi < n_mem; ++mi)
            for (size_t h = 0; h < H; ++h) {
                int32_t* dst = codes.data() + (mi * H + h) * static_cast<size_t>(M) * words;
                for (const auto& mem : set.memories) {
                    const std::vector<int32_t>& src = kv == 0 ? mem->key_codes : mem->value_codes;
                    std::copy_n(src.data() + (mi * H + h) * keep * words, static_cast<size_t>(mem->n_valid) * words, dst);
                    dst += static_cast<size_t>(mem->n_valid) * words;
                }
            }
        device->write(kv == 0 ? c.key_codes : c.value_codes, static_cast<uint64_t>(block) * codes.size() * 4, codes.data(),
                      codes.size() * 4, "memory codes");
    }
    void*& graph = c.block_graphs[static_cast<size_t>(block)];
    if (!graph) {
        std::vector<mnemo_node> nodes = c.templates;
        const size_t per_kv = n_mem * H;
        for (size_t i = 0; i < nodes.size(); ++i) {
            const bool key = i < per_kv;
            const size_t words = key ? c.key_words : c.value_words;
            const MemoryState::Layer& L = memory->layers[static_cast<size_t>(sp.memory_layers[(i % per_kv) / H])];
            const int32_t dim = key ? sp.head_dim : sp.value_dim;
            nodes[i].inputs[0].offset += static_cast<uint64_t>(block) * per_kv * static_cast<uint64_t>(M) * words * 4;
            nodes[i].output.offset += static_cast<uint64_t>(block) * H * static_cast<uint64_t>(L.slots) * dim * 4;
        }
        mnemo_error err{};
        if (device->api()->graph_prepare(device->ctx(), nodes.data(), static_cast<int32_t>(nodes.size()), &graph, &err) != MNEMO_OK)
            throw Error("backend '" + device->name() + "': preparing the memory decoder failed: " + err.message);
    }
    mnemo_error err{};
    if (device->api()->graph_run(device->ctx(), graph, nullptr, &err) != MNEMO_OK)
        throw Error("backend '" + device->name() + "': decoding compressed memories failed: " + err.message);
    memory_stats.vectors_decoded += 2 * n_mem * H * static_cast<uint64_t>(set.slots);
}

// ---------------------------------------------------------------- chunk schedule (§3.1)

std::vector<std::shared_ptr<const MemorySet>> Session::Impl::begin_prompt(int32_t seq, int64_t start,
                                                                         const std::vector<int32_t>& tokens) {
    MemoryState& m = *memory;
    const size_t C = static_cast<size_t>(m.spec.chunk_length);
    SeqMemory& sm = m.seqs[static_cast<size_t>(seq)];
    // Each prompt chunk reads the memories its own text retrieves.
    std::vector<std::vector<int32_t>> chunks;
    for (size_t i = 0; i < tokens.size(); i += C)
        chunks.emplace_back(tokens.begin() + static_cast<long>(i), tokens.begin() + static_cast<long>(std::min(tokens.size(), i + C)));
    auto sets = retrieve_for_chunks(chunks);
    sm.tokens.resize(static_cast<size_t>(start));
    sm.tokens.insert(sm.tokens.end(), tokens.begin(), tokens.end());
    sm.gen_start = static_cast<int32_t>(start + static_cast<int64_t>(tokens.size()));
    sm.prompt_last = sets.back();
    sm.gen_chunk = -1;
    sm.gen_set.reset();
    return sets;
}

size_t Session::Impl::bind_prompt_run(const std::vector<std::shared_ptr<const MemorySet>>& chunk_sets, size_t begin, size_t end) {
    MemoryState& m = *memory;
    const size_t C = static_cast<size_t>(m.spec.chunk_length);
    // A run reads at most `blocks` distinct chunks: cut it before the first one that does not fit.
    m.run_sets.clear();
    m.row_set.clear();
    for (size_t i = begin; i < end; ++i) {
        const auto& set = chunk_sets[i / C];
        if (m.run_sets.empty() || m.run_sets.back() != set) {
            if (m.run_sets.size() == m.block_set.size()) {
                end = i;
                break;
            }
            m.run_sets.push_back(set);
        }
        m.row_set.push_back(static_cast<int32_t>(m.run_sets.size() - 1));
    }
    bind_memory_blocks(m.run_sets, m.row_set);
    return end;
}

void Session::Impl::bind_generated(const std::vector<BatchToken>& batch) {
    MemoryState& m = *memory;
    const int64_t C = m.spec.chunk_length;
    // Which decoded chunk every row is in; chunk 0 keeps the last prompt chunk's memories, chunk
    // k >= 1 retrieves with the text of chunk k-1 (once, for every row of that chunk).
    m.row_chunk.clear();
    std::vector<std::vector<int32_t>> queries;          // allocated only on a chunk boundary
    std::vector<std::pair<int32_t, int32_t>> query_of;  // (seq, chunk)
    for (const BatchToken& r : batch) {
        SeqMemory& sm = m.seqs[static_cast<size_t>(r.seq)];
        if (sm.tokens.size() <= static_cast<size_t>(r.pos)) sm.tokens.resize(static_cast<size_t>(r.pos) + 1, 0);
        sm.tokens[static_cast<size_t>(r.pos)] = r.token;
        const int32_t k = r.pos >= sm.gen_start ? static_cast<int32_t>((r.pos - sm.gen_start) / C) : 0;
        m.row_chunk.push_back(k);
        if (k == 0 || k == sm.gen_chunk) continue;
        bool queued = false;
        for (const auto& q : query_of) queued |= q.first == r.seq && q.second == k;
        if (queued) continue;
        const int64_t q0 = sm.gen_start + static_cast<int64_t>(k - 1) * C;
        queries.emplace_back(sm.tokens.begin() + q0, sm.tokens.begin() + q0 + C);
        query_of.emplace_back(r.seq, k);
    }
    if (!queries.empty()) {
        const auto got = retrieve_for_chunks(queries);
        for (size_t i = 0; i < got.size(); ++i) {
            SeqMemory& sm = m.seqs[static_cast<size_t>(query_of[i].first)];
            sm.gen_chunk = query_of[i].second;
            sm.gen_set = got[i];
        }
    }
    m.run_sets.clear();
    m.row_set.clear();
    for (size_t i = 0; i < batch.size(); ++i) {
        const SeqMemory& sm = m.seqs[static_cast<size_t>(batch[i].seq)];
        const std::shared_ptr<const MemorySet>& s = m.row_chunk[i] == 0 ? sm.prompt_last : sm.gen_set;
        const std::shared_ptr<const MemorySet>& set = s ? s : m.empty;
        auto it = std::find(m.run_sets.begin(), m.run_sets.end(), set);
        if (it == m.run_sets.end()) it = m.run_sets.insert(m.run_sets.end(), set);
        m.row_set.push_back(static_cast<int32_t>(it - m.run_sets.begin()));
    }
    if (m.run_sets.size() > m.block_set.size())
        throw Error("this batch reads " + std::to_string(m.run_sets.size()) + " different memory sets, the model holds " +
                    std::to_string(m.block_set.size()) + " blocks: decode fewer sequences at once");
    bind_memory_blocks(m.run_sets, m.row_set);
}

// ---------------------------------------------------------------- public API

bool Session::reads_memories() const { return impl_->memory != nullptr; }

const MemorySpec& Session::memory_spec() const {
    if (!impl_->memory) throw Error("model '" + impl_->options.model_dir + "' (" + impl_->summary.model_type + ") does not read explicit memories");
    return impl_->memory->spec;
}

void Session::set_memory_source(std::shared_ptr<MemorySource> source) {
    (void)memory_spec();
    Impl& s = *impl_;
    s.set_codec(source ? source->codec() : nullptr);
    s.memory->source = std::move(source);
    // Blocks filled from the old source would be reused by id: forget them.
    std::fill(s.memory->block_set.begin(), s.memory->block_set.end(), s.memory->empty);
    for (SeqMemory& sm : s.memory->seqs) {
        sm.prompt_last.reset();
        sm.gen_set.reset();
        sm.gen_chunk = -1;
    }
}

std::vector<WrittenMemory> Session::write_memories(const std::vector<std::vector<int32_t>>& references) {
    (void)memory_spec();
    return impl_->write_memories_impl(references);
}

std::vector<std::vector<float>> Session::retrieval_vectors(const std::vector<std::vector<int32_t>>& texts) {
    (void)memory_spec();
    return impl_->retrieval_vectors_impl(texts);
}

const MemoryStats& Session::memory_stats() const { return impl_->memory_stats; }

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
