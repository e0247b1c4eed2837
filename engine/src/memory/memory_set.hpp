// The memories one chunk reads (Memory3 §3.1: up to references_per_chunk of them), as the chunk
// schedule hands them to the block cache. Shared: every row of the chunk, and the block that
// holds them, point to the same set.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mnemo/memory/explicit_memory.hpp"

namespace mnemo::detail {

struct MemorySet {
    std::vector<std::shared_ptr<const ExplicitMemory>> memories;
    int32_t slots = 0;  // sum of their n_valid: memory slots per head in a block

    // A source's memories are all compressed with its codec, or none is.
    bool compressed() const { return !memories.empty() && memories.front()->compressed(); }
};

// Same memories in the same order: a block holding them can serve another chunk as it is.
// Same objects, not only the same ids: a source that starts serving another version of its
// memories (a knowledge server whose bank was rebuilt) hands out new objects, and a block filled
// from the old ones must not pass for them. Sources keep one object per memory while it is
// cached (folder, remote record cache), so identity costs nothing in the common case; the block
// holds its set, so an address is never reused while a block can compare against it.
inline bool same_memories(const MemorySet& a, const MemorySet& b) {
    if (a.memories.size() != b.memories.size()) return false;
    for (size_t i = 0; i < a.memories.size(); ++i)
        if (a.memories[i] != b.memories[i]) return false;
    return true;
}

}  // namespace mnemo::detail
