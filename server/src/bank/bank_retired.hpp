// Retired records (server/README.md, "Correcting a bank"): when a document is replaced (`add` of
// a doc_id the bank holds) or deleted, its records stay in their immutable segments and the new
// version's manifest lists their ids as retired ranges; readers skip them, and `compact` writes a
// version whose segments no longer hold them. This is the one place that turns ids into ranges
// and answers "is this id retired".
#pragma once

#include <cstdint>
#include <vector>

#include "bank_format.hpp"

namespace mnemo::kb {

// The ranges `retired` plus the ids `more` (any order, repeats allowed), merged into the
// manifest's canonical form: sorted, disjoint, neighbours joined.
std::vector<IdRange> retire_ids(const std::vector<IdRange>& retired, std::vector<uint32_t> more);

// A version's retired ids, for lookups (binary search over the ranges: a handful of bytes per
// retired document, however many records each holds).
class RetiredSet {
public:
    RetiredSet() = default;
    explicit RetiredSet(std::vector<IdRange> ranges);
    bool contains(uint32_t id) const;
    uint64_t size() const { return size_; }  // retired ids
    const std::vector<IdRange>& ranges() const { return ranges_; }

private:
    std::vector<IdRange> ranges_;
    uint64_t size_ = 0;
};

}  // namespace mnemo::kb
