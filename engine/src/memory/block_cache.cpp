#include "memory/block_cache.hpp"

#include <algorithm>
#include <chrono>

#include "memory/memory_rows.hpp"
#include "mnemo/error.hpp"

namespace mnemo::detail {

namespace {

using Clock = std::chrono::steady_clock;

// One block of a layer's state, [kv_heads, slots, dim]: the prefix in slots 0..b-1, then the
// memories' valid slots packed in retrieval order (attention is a set operation: the order is
// only layout), zeros after. `keys` picks keys or values, `memory_index` the layer's place
// among the explicit-memory layers (-1: a layer without memories).
std::vector<float> block_of(const MemoryLayout& layout, const MemoryLayout::Layer& L, const std::vector<float>& prefix,
                            const MemorySet* set, bool keys) {
    const MemorySpec& sp = layout.spec;
    const int64_t b = layout.prefix(), d = keys ? sp.head_dim : sp.value_dim;
    std::vector<float> block(static_cast<size_t>(sp.kv_heads * L.slots * d), 0.0f);
    for (int32_t h = 0; h < sp.kv_heads; ++h) {
        float* dst = block.data() + static_cast<size_t>(h * L.slots * d);
        std::copy_n(prefix.data() + static_cast<size_t>(h * b * d), static_cast<size_t>(b * d), dst);
        if (!set) continue;
        int64_t slot = b;
        for (const auto& mem : set->memories) {
            const std::vector<float>& src = keys ? mem->keys : mem->values;
            const size_t base = static_cast<size_t>(((L.memory_index * sp.kv_heads + h) * sp.tokens_per_head) * d);
            std::copy_n(src.data() + base, static_cast<size_t>(mem->n_valid * d), dst + slot * d);
            slot += mem->n_valid;
        }
    }
    return block;
}

}  // namespace

BlockCache::BlockCache(const MemoryLayout& layout, MemoryHost& host, MemoryStats& stats, MemoryWriter::Prefix prefix)
    : layout_(layout), host_(host), stats_(stats), prefix_(std::move(prefix)) {
    const size_t B = static_cast<size_t>(layout.spec.blocks);
    block_set_.assign(B, empty_);
    block_stamp_.assign(B, 0);
    for (size_t l = 0; l < layout.layers.size(); ++l) {
        const MemoryLayout::Layer& L = layout.layers[l];
        for (int64_t blk = 0; blk < L.blocks; ++blk)
            for (bool keys : {true, false}) {
                const int32_t id = keys ? L.k : L.v;
                const std::vector<uint8_t> block = encode_rows(
                    layout.dtype, block_of(layout, L, keys ? prefix_.k[l] : prefix_.v[l], nullptr, keys),
                    keys ? layout.spec.head_dim : layout.spec.value_dim);
                host.write(host.state_buffer(id), static_cast<uint64_t>(blk) * block.size(), block.data(), block.size(),
                           std::string("state 'memory.") + (keys ? "k." : "v.") + std::to_string(l) + "'");
            }
    }
    const std::vector<int32_t> lens(B, static_cast<int32_t>(layout.prefix()));
    host.write(host.state_buffer(layout.len_state), 0, lens.data(), lens.size() * 4, "state 'memory.len'");
}

void BlockCache::forget() { std::fill(block_set_.begin(), block_set_.end(), empty_); }

void BlockCache::set_codec(const MemoryCodec* codec) {
    // Detaching keeps the decoder, and the same codebooks again reuse it: the upload and the
    // per-block decode graphs are made once, not per attach.
    if (!codec || (decoder_ && decoder_->decodes(*codec))) return;
    decoder_.reset();
    decoder_ = std::make_unique<CompressedDecoder>(layout_, host_, *codec);
}

void BlockCache::upload(int32_t block, const MemorySet& set) {
    if (set.compressed()) {
        if (!decoder_) throw Error("internal: compressed memories without a decoder");
        decoder_->decode(block, set, stats_);
    } else {
        for (size_t l = 0; l < layout_.layers.size(); ++l) {
            const MemoryLayout::Layer& L = layout_.layers[l];
            if (L.memory_index < 0) continue;
            for (bool keys : {true, false}) {
                const std::vector<uint8_t> data = encode_rows(layout_.dtype, block_of(layout_, L, keys ? prefix_.k[l] : prefix_.v[l], &set, keys),
                                                              keys ? layout_.spec.head_dim : layout_.spec.value_dim);
                host_.write(host_.state_buffer(keys ? L.k : L.v), static_cast<uint64_t>(block) * data.size(), data.data(),
                            data.size(), "memory block");
            }
        }
    }
    const int32_t len = static_cast<int32_t>(layout_.prefix() + set.slots);
    host_.write(host_.state_buffer(layout_.len_state), static_cast<uint64_t>(block) * 4, &len, 4, "state 'memory.len'");
}

void BlockCache::bind(const std::vector<std::shared_ptr<const MemorySet>>& sets, const std::vector<int32_t>& row_set,
                      std::vector<int32_t>& block_of_row) {
    const size_t B = block_set_.size();
    if (sets.size() > B)
        throw Error("internal: a batch needs " + std::to_string(sets.size()) + " memory blocks, the model has " + std::to_string(B));
    ++clock_;
    block_of_.assign(sets.size(), -1);
    taken_.assign(B, 0);
    for (size_t i = 0; i < sets.size(); ++i)
        for (size_t blk = 0; blk < B; ++blk)
            if (!taken_[blk] && same_memories(*block_set_[blk], *sets[i])) {
                block_of_[i] = static_cast<int32_t>(blk);
                taken_[blk] = 1;
                break;
            }
    for (size_t i = 0; i < sets.size(); ++i) {
        if (block_of_[i] >= 0) continue;
        size_t victim = B;
        for (size_t blk = 0; blk < B; ++blk)
            if (!taken_[blk] && (victim == B || block_stamp_[blk] < block_stamp_[victim])) victim = blk;
        taken_[victim] = 1;
        block_of_[i] = static_cast<int32_t>(victim);
        const auto t0 = Clock::now();
        upload(block_of_[i], *sets[i]);
        block_set_[victim] = sets[i];
        stats_.block_uploads++;
        stats_.memories_read += sets[i]->memories.size();
        stats_.upload_ns += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
    }
    for (size_t i = 0; i < sets.size(); ++i) block_stamp_[static_cast<size_t>(block_of_[i])] = clock_;
    block_of_row.resize(row_set.size());
    for (size_t r = 0; r < row_set.size(); ++r) block_of_row[r] = block_of_[static_cast<size_t>(row_set[r])];
}

}  // namespace mnemo::detail
