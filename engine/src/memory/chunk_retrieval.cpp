#include "memory/chunk_retrieval.hpp"

#include <chrono>
#include <string>

#include "mnemo/error.hpp"

namespace mnemo::detail {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t ns_since(Clock::time_point t0) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

}  // namespace

void ChunkRetrieval::compute_vectors(std::vector<ChunkText>& chunks) {
    if (!source_->wants_vector()) return;
    std::vector<std::vector<int32_t>> texts;
    std::vector<size_t> of;
    for (size_t c = 0; c < chunks.size(); ++c)
        if (chunks[c].vector.empty()) {
            texts.push_back(chunks[c].tokens);
            of.push_back(c);
        }
    if (texts.empty()) return;
    const auto t0 = Clock::now();
    std::vector<std::vector<float>> vectors = writer_.retrieval_vectors(texts);
    stats_.query_ns += ns_since(t0);
    for (size_t i = 0; i < of.size(); ++i) chunks[of[i]].vector = std::move(vectors[i]);
}

ChunkQuery ChunkRetrieval::query(const ChunkText& c) const {
    ChunkQuery q;
    q.tokens = &c.tokens;
    if (!c.vector.empty()) q.vector = &c.vector;
    q.seq = c.seq;
    return q;
}

void ChunkRetrieval::announce(std::vector<ChunkText>& chunks) {
    if (!prefetches()) return;
    compute_vectors(chunks);
    for (ChunkText& c : chunks)
        if (!c.announced) {
            source_->prefetch(query(c), layout_.spec.references_per_chunk);
            c.announced = true;
        }
}

std::vector<std::shared_ptr<const MemorySet>> ChunkRetrieval::retrieve(std::vector<ChunkText>& chunks,
                                                                       const std::shared_ptr<const MemorySet>& empty) {
    std::vector<std::shared_ptr<const MemorySet>> out(chunks.size(), empty);
    if (!source_) return out;
    compute_vectors(chunks);
    announce(chunks);
    for (size_t c = 0; c < chunks.size(); ++c) {
        const auto t0 = Clock::now();
        auto got = source_->retrieve(query(chunks[c]), layout_.spec.references_per_chunk);
        stats_.retrieve_ns += ns_since(t0);
        stats_.retrievals++;
        out[c] = checked(std::move(got));
    }
    return out;
}

std::shared_ptr<const MemorySet> ChunkRetrieval::checked(std::vector<std::shared_ptr<const ExplicitMemory>> got) const {
    const MemorySpec& sp = layout_.spec;
    if (static_cast<int32_t>(got.size()) > sp.references_per_chunk)
        throw Error(source_->describe() + ": returned " + std::to_string(got.size()) + " memories for a chunk, at most " +
                    std::to_string(sp.references_per_chunk) + " were asked for");
    auto set = std::make_shared<MemorySet>();
    const MemoryCodec* codec = source_->codec();  // the source's memories are all coded with it, or none
    const size_t slots = static_cast<size_t>(sp.memory_layers.size()) * sp.kv_heads * sp.tokens_per_head;
    for (auto& mem : got) {
        if (!mem) throw Error(source_->describe() + ": returned an empty memory");
        const bool shape_ok =
            codec ? mem->compressed() && mem->key_codes.size() == slots * codec->keys.code_words() &&
                        mem->value_codes.size() == slots * codec->values.code_words()
                  : !mem->compressed() && mem->keys.size() == slots * sp.head_dim && mem->values.size() == slots * sp.value_dim;
        if (mem->n_valid < 0 || mem->n_valid > sp.tokens_per_head || !shape_ok)
            throw Error(source_->describe() + ": memory " + std::to_string(mem->id) + " does not have this model's shape" +
                        (codec ? " (compressed with the source's codec)" : ""));
        set->slots += mem->n_valid;
        set->memories.push_back(std::move(mem));
    }
    return set;
}

}  // namespace mnemo::detail
