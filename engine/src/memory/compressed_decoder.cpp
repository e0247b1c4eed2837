#include "memory/compressed_decoder.hpp"

#include <algorithm>
#include <span>

#include "mnemo/error.hpp"

namespace mnemo::detail {

namespace {

mnemo_tensor tensor(void* buffer, uint64_t offset, mnemo_dtype dtype, std::initializer_list<int64_t> shape) {
    mnemo_tensor t{};
    t.buffer = buffer;
    t.offset = offset;
    t.dtype = dtype;
    t.ndim = static_cast<int32_t>(shape.size());
    int i = 0;
    for (int64_t d : shape) t.shape[i++] = d;
    return t;
}

}  // namespace

CompressedDecoder::CompressedDecoder(const MemoryLayout& layout, MemoryHost& host, const MemoryCodec& mc)
    : layout_(layout), host_(host) {
    try {
        const MemorySpec& sp = layout.spec;
        const int64_t b = layout.prefix(), M = layout.memory_slots();
        auto upload = [&](const std::vector<float>& v, const std::string& what) {
            void* buf = host_.alloc(v.size() * 4, what);
            buffers_.push_back(buf);
            host_.write(buf, 0, v.data(), v.size() * 4, what);
            return buf;
        };
        const size_t n_mem = sp.memory_layers.size();
        const bool direct = layout.dtype == DType::F32;  // else VQ_DECODE -> f32 scratch -> KV_STORE
        const int64_t H = sp.kv_heads;
        std::vector<mnemo_node> stores;
        void* store_pos = nullptr;
        if (!direct) {
            // Store row i of a layer's scratch [Hkv * M] goes to cache row (block * Hkv + i / M,
            // slot b + i % M) of the state viewed as [blocks * Hkv, 1, slots, dim].
            std::vector<int32_t> seq(static_cast<size_t>(sp.blocks * H * M)), pos(static_cast<size_t>(H * M));
            for (int64_t i = 0; i < static_cast<int64_t>(seq.size()); ++i)
                seq[static_cast<size_t>(i)] = static_cast<int32_t>(i / M);  // (block * H * M + h * M + m) / M
            for (int64_t i = 0; i < H * M; ++i) pos[static_cast<size_t>(i)] = static_cast<int32_t>(b + i % M);
            store_seq_ = host_.alloc(seq.size() * 4, "memory decoder rows");
            buffers_.push_back(store_seq_);
            host_.write(store_seq_, 0, seq.data(), seq.size() * 4, "memory decoder rows");
            store_pos = host_.alloc(pos.size() * 4, "memory decoder slots");
            buffers_.push_back(store_pos);
            host_.write(store_pos, 0, pos.data(), pos.size() * 4, "memory decoder slots");
        }
        for (int kv = 0; kv < 2; ++kv) {
            const VqCodebook& cb = kv == 0 ? mc.keys : mc.values;
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
            void* codes = host_.alloc(codes_bytes, std::string(what) + " codes of memory blocks");
            buffers_.push_back(codes);
            (kv == 0 ? key_codes_ : value_codes_) = codes;
            (kv == 0 ? key_words_ : value_words_) = words;
            void* scratch = nullptr;  // [L_mem][Hkv][M][dim] f32, decoded rows before rounding
            if (!direct) {
                scratch = host_.alloc(n_mem * static_cast<uint64_t>(H * M * dim) * 4, std::string(what) + " decode scratch");
                buffers_.push_back(scratch);
            }
            // Node templates for block 0; decode() shifts the codes and output offsets.
            for (size_t mi = 0; mi < n_mem; ++mi) {
                const MemoryLayout::Layer& L = layout.layers[static_cast<size_t>(sp.memory_layers[mi])];
                for (int32_t h = 0; h < sp.kv_heads; ++h) {
                    mnemo_node n{};
                    n.op = MNEMO_OP_VQ_DECODE;
                    n.n_inputs = rot ? 4 : 3;
                    n.inputs[0] = tensor(codes, ((mi * sp.kv_heads + static_cast<size_t>(h)) * M) * words * 4, MNEMO_DTYPE_I32,
                                         {M, words});
                    const int64_t cdim = cb.d_out / cb.coarse_m, pdim = cb.d_out / cb.pq_m;
                    n.inputs[1] = tensor(coarse, 0, MNEMO_DTYPE_F32, {cb.coarse_m, int64_t{1} << cb.coarse_nbits, cdim});
                    n.inputs[2] = tensor(pq, 0, MNEMO_DTYPE_F32, {cb.pq_m, int64_t{1} << cb.pq_nbits, pdim});
                    if (rot) n.inputs[3] = tensor(rot, 0, MNEMO_DTYPE_F32, {cb.d_out, cb.d_in});
                    n.output = direct ? tensor(host_.state_buffer(kv == 0 ? L.k : L.v), (static_cast<uint64_t>(h) * L.slots + b) * dim * 4,
                                               MNEMO_DTYPE_F32, {M, dim})
                                      : tensor(scratch, ((mi * H + static_cast<uint64_t>(h)) * M) * dim * 4, MNEMO_DTYPE_F32, {M, dim});
                    n.iparams[0] = cb.coarse_nbits;
                    n.iparams[1] = cb.pq_nbits;
                    // The engine's own shape rule first, so a bad codec is a clear error here.
                    std::vector<TensorShape> shapes;
                    for (int k = 0; k < n.n_inputs; ++k) shapes.push_back(shape_of(n.inputs[k]));
                    infer_output(n.op, shapes, std::span<const int64_t>(n.iparams, 2), {});
                    if (!host_.supports(n))
                        throw Error("backend '" + host_.device_name() + "' cannot decode these compressed memories (vq_decode)");
                    templates_.push_back(n);
                }
                if (direct) continue;
                mnemo_node s{};
                s.op = MNEMO_OP_KV_STORE;
                s.n_inputs = 4;
                const auto dt = static_cast<mnemo_dtype>(layout.dtype);
                s.inputs[0] = tensor(host_.state_buffer(kv == 0 ? L.k : L.v), 0, dt, {L.blocks * H, 1, L.slots, dim});
                s.inputs[1] = tensor(scratch, mi * static_cast<uint64_t>(H * M * dim) * 4, MNEMO_DTYPE_F32, {H * M, 1, dim});
                s.inputs[2] = tensor(store_seq_, 0, MNEMO_DTYPE_I32, {H * M});
                s.inputs[3] = tensor(store_pos, 0, MNEMO_DTYPE_I32, {H * M});
                s.output = s.inputs[0];
                if (!host_.supports(s))
                    throw Error("backend '" + host_.device_name() + "' cannot store decoded memories into a " +
                                std::string(dtype_name(layout.dtype)) + " memory state (kv_store): use cache type f32");
                stores.push_back(s);
            }
        }
        n_decode_ = templates_.size();
        templates_.insert(templates_.end(), stores.begin(), stores.end());
    } catch (...) {
        release();
        throw;
    }
    block_graphs_.assign(static_cast<size_t>(layout.spec.blocks), nullptr);
    key_sha_ = mc.keys.sha256;
    value_sha_ = mc.values.sha256;
}

CompressedDecoder::~CompressedDecoder() { release(); }

void CompressedDecoder::release() {
    for (void* g : block_graphs_)
        if (g) host_.release_nodes(g);
    block_graphs_.clear();
    for (void* b : buffers_) host_.release(b);
    buffers_.clear();
}

void CompressedDecoder::decode(int32_t block, const MemorySet& set, MemoryStats& stats) {
    const MemorySpec& sp = layout_.spec;
    const int64_t M = layout_.memory_slots();
    const size_t n_mem = sp.memory_layers.size();
    const size_t H = static_cast<size_t>(sp.kv_heads), keep = static_cast<size_t>(sp.tokens_per_head);
    // Unused slots decode to something attention never reads (memory.len stops before them).
    for (int kv = 0; kv < 2; ++kv) {
        const size_t words = kv == 0 ? key_words_ : value_words_;
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
        host_.write(kv == 0 ? key_codes_ : value_codes_, static_cast<uint64_t>(block) * codes.size() * 4, codes.data(),
                    codes.size() * 4, "memory codes");
    }
    void*& graph = block_graphs_[static_cast<size_t>(block)];
    if (!graph) {
        std::vector<mnemo_node> nodes = templates_;
        const size_t per_kv = n_mem * H;
        // KV_STORE nodes: this block's sequence ids; the scratch and the state view stay put.
        for (size_t i = n_decode_; i < nodes.size(); ++i)
            nodes[i].inputs[2].offset += static_cast<uint64_t>(block) * H * static_cast<uint64_t>(M) * 4;
        for (size_t i = 0; i < n_decode_; ++i) {
            const bool key = i < per_kv;
            const size_t words = key ? key_words_ : value_words_;
            const MemoryLayout::Layer& L = layout_.layers[static_cast<size_t>(sp.memory_layers[(i % per_kv) / H])];
            const int32_t dim = key ? sp.head_dim : sp.value_dim;
            nodes[i].inputs[0].offset += static_cast<uint64_t>(block) * per_kv * static_cast<uint64_t>(M) * words * 4;
            if (n_decode_ == nodes.size())  // f32 states: VQ_DECODE writes the block's slots in place
                nodes[i].output.offset += static_cast<uint64_t>(block) * H * static_cast<uint64_t>(L.slots) * dim * 4;
        }
        graph = host_.prepare_nodes(nodes, "the memory decoder");
    }
    host_.run_nodes(graph, "decoding compressed memories");
    stats.vectors_decoded += 2 * n_mem * H * static_cast<uint64_t>(set.slots);
}

}  // namespace mnemo::detail
