// The host cache of a KbSource (the knowledge server's client): decoded records by id, least
// recently used evicted first, so a memory retrieved again (by the next chunk, or by another
// sequence) crosses the network once. Thread-safe: the prefetch worker and the session's thread
// both use it.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mnemo/memory/explicit_memory.hpp"

namespace mnemo::detail {

class RecordCache {
public:
    using Entry = std::pair<uint32_t, std::shared_ptr<const ExplicitMemory>>;

    explicit RecordCache(size_t capacity) : capacity_(capacity) {}

    // The record, now the most recently used; nullptr when absent.
    std::shared_ptr<const ExplicitMemory> get(uint32_t id);
    void put(uint32_t id, std::shared_ptr<const ExplicitMemory> memory);
    // Up to n records, most recently used first (a request's have_ids; the pointers keep them
    // alive for that request even if they are evicted meanwhile).
    std::vector<Entry> recent(size_t n) const;
    void clear();
    size_t size() const;

private:
    mutable std::mutex mu_;
    size_t capacity_;
    std::list<Entry> order_;  // front: most recent
    std::unordered_map<uint32_t, std::list<Entry>::iterator> where_;
};

}  // namespace mnemo::detail
