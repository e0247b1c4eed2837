#include "bank_retired.hpp"

#include <algorithm>

namespace mnemo::kb {

std::vector<IdRange> retire_ids(const std::vector<IdRange>& retired, std::vector<uint32_t> more) {
    for (const IdRange& r : retired)
        for (uint32_t i = 0; i < r.count; ++i) more.push_back(r.first + i);
    std::sort(more.begin(), more.end());
    more.erase(std::unique(more.begin(), more.end()), more.end());
    std::vector<IdRange> out;
    for (uint32_t id : more) {
        if (!out.empty() && uint64_t{out.back().first} + out.back().count == id) ++out.back().count;
        else out.push_back({id, 1});
    }
    return out;
}

RetiredSet::RetiredSet(std::vector<IdRange> ranges) : ranges_(std::move(ranges)) {
    for (const IdRange& r : ranges_) size_ += r.count;
}

bool RetiredSet::contains(uint32_t id) const {
    // The last range starting at or before id (ranges are sorted and disjoint).
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), id, [](uint32_t v, const IdRange& r) { return v < r.first; });
    if (it == ranges_.begin()) return false;
    --it;
    return uint64_t{id} < uint64_t{it->first} + it->count;
}

}  // namespace mnemo::kb
