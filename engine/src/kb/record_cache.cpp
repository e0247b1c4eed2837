#include "kb/record_cache.hpp"

#include <algorithm>

namespace mnemo::detail {

std::shared_ptr<const ExplicitMemory> RecordCache::get(uint32_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = where_.find(id);
    if (it == where_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
}

void RecordCache::put(uint32_t id, std::shared_ptr<const ExplicitMemory> memory) {
    std::lock_guard<std::mutex> lock(mu_);
    if (capacity_ == 0) return;
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

std::vector<RecordCache::Entry> RecordCache::recent(size_t n) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Entry> out;
    out.reserve(std::min(n, order_.size()));
    for (auto it = order_.begin(); it != order_.end() && out.size() < n; ++it) out.push_back(*it);
    return out;
}

void RecordCache::clear() {
    std::lock_guard<std::mutex> lock(mu_);
    order_.clear();
    where_.clear();
}

size_t RecordCache::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return order_.size();
}

}  // namespace mnemo::detail
