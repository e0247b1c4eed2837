// Retrieval through the session's MemorySource (Memory3 §3.1): the query vectors computed by the
// model when the source asks for them, prefetch announcements for a source that wants them, and
// the source's answers checked against the model's shapes and the source's codec.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "memory/memory_set.hpp"
#include "memory/memory_writer.hpp"

namespace mnemo::detail {

// One chunk's query as the schedule asks it: its sequence, its text, and its retrieval vector
// once computed (kept, so a query announced early is not computed again when it is asked).
struct ChunkText {
    ChunkText() = default;
    ChunkText(int32_t s, std::vector<int32_t> text) : seq(s), tokens(std::move(text)) {}

    int32_t seq = 0;
    std::vector<int32_t> tokens;
    std::vector<float> vector;  // empty until computed (and always, for a source without vectors)
    bool announced = false;     // prefetch() has seen it
};

class ChunkRetrieval {
public:
    ChunkRetrieval(const MemoryLayout& layout, MemoryWriter& writer, MemoryStats& stats)
        : layout_(layout), writer_(writer), stats_(stats) {}

    void set_source(std::shared_ptr<MemorySource> source) { source_ = std::move(source); }
    const MemorySource* source() const { return source_.get(); }
    bool prefetches() const { return source_ && source_->prefetches(); }

    // The memories of each chunk (`empty` without a source). A prefetching source first hears
    // of every chunk it was not told about yet.
    std::vector<std::shared_ptr<const MemorySet>> retrieve(std::vector<ChunkText>& chunks,
                                                           const std::shared_ptr<const MemorySet>& empty);
    // Tell a prefetching source about chunks it will be asked for later (nothing otherwise).
    void announce(std::vector<ChunkText>& chunks);

private:
    // Vectors for the chunks that have none yet, in one batch of model passes.
    void compute_vectors(std::vector<ChunkText>& chunks);
    ChunkQuery query(const ChunkText& c) const;
    std::shared_ptr<const MemorySet> checked(std::vector<std::shared_ptr<const ExplicitMemory>> got) const;

    const MemoryLayout& layout_;
    MemoryWriter& writer_;
    MemoryStats& stats_;
    std::shared_ptr<MemorySource> source_;
};

}  // namespace mnemo::detail
