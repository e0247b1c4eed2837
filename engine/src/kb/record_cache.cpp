#include "kb/record_cache.hpp"

#include <algorithm>

namespace mnemo::detail {

std::shared_ptr<const ExplicitMemory> RecordCache::get(uint64_t version, uint32_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    if (version != version_) return nullptr;
    auto it = where_.find(id);
    if (it == where_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
}

std::shared_ptr<const ExplicitMemory> RecordCache::get(uint32_t id) { return get(version(), id); }

void RecordCache::put(uint64_t version, uint32_t id, std::shared_ptr<const ExplicitMemory> memory) {
    std::lock_guard<std::mutex> lock(mu_);
    if (capacity_ == 0 || version != version_) return;
    if (auto it = where_.find(id); it != where_.end()) {
        it->second->second = std::move(memory);
        order_.splice(order_.begin(), order_, it->second);
        return;
    }
    order_.emplace_front(id, std::move(memory));
    where_[id] = order_.begin();
    while (order_.size() > capacity_) {
        where_.erase(order_.back().first);
        order_.pop_back();
    }
}

void RecordCache::put(uint32_t id, std::shared_ptr<const ExplicitMemory> memory) { put(version(), id, std::move(memory)); }

std::vector<RecordCache::Entry> RecordCache::recent(uint64_t version, size_t n) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Entry> out;
    if (version != version_) return out;
    out.reserve(std::min(n, order_.size()));
    for (auto it = order_.begin(); it != order_.end() && out.size() < n; ++it) out.push_back(*it);
    return out;
}

std::vector<RecordCache::Entry> RecordCache::recent(size_t n) const { return recent(version(), n); }

void RecordCache::reset(uint64_t version) {
    std::lock_guard<std::mutex> lock(mu_);
    version_ = version;
    order_.clear();
    where_.clear();
}

void RecordCache::clear() { reset(version()); }

uint64_t RecordCache::version() const {
    std::lock_guard<std::mutex> lock(mu_);
    return version_;
}

size_t RecordCache::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return order_.size();
}

}  // namespace mnemo::detail
