// The host cache of a KbSource (the knowledge server's client): decoded records by id, least
// recently used evicted first, so a memory retrieved again (by the next chunk, or by another
// sequence) crosses the network once. Thread-safe: the prefetch worker and the session's thread
// both use it.
//
// Record ids mean something only within one bank version (`compact` renumbers them), so the cache
// belongs to one version: reset(version) empties it for another, and the calls that name a version
// ignore (put) or miss (get, recent) a version that is no longer the cache's. A chunk asked while
// the client moved to a newer version therefore never leaves its older records behind for the
// newer version's ids. The calls without a version act on the cache's current one.
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

    explicit RecordCache(size_t capacity, uint64_t version = 0) : capacity_(capacity), version_(version) {}

    // The record, now the most recently used; nullptr when absent or of another version.
    std::shared_ptr<const ExplicitMemory> get(uint64_t version, uint32_t id);
    std::shared_ptr<const ExplicitMemory> get(uint32_t id);
    // Kept only when `version` is still the cache's.
    void put(uint64_t version, uint32_t id, std::shared_ptr<const ExplicitMemory> memory);
    void put(uint32_t id, std::shared_ptr<const ExplicitMemory> memory);
    // Up to n records of `version`, most recently used first (a request's have_ids; the pointers
    // keep them alive for that request even if they are evicted meanwhile). Empty for another
    // version.
    std::vector<Entry> recent(uint64_t version, size_t n) const;
    std::vector<Entry> recent(size_t n) const;
    // Empty, now for records of `version`.
    void reset(uint64_t version);
    void clear();
    uint64_t version() const;
    size_t size() const;

private:
    mutable std::mutex mu_;
    size_t capacity_;
    uint64_t version_;
    std::list<Entry> order_;  // front: most recent
    std::unordered_map<uint32_t, std::list<Entry>::iterator> where_;
};

}  // namespace mnemo::detail
