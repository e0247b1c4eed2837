// The arena planner: places every intermediate tensor of a graph in one arena by greedy best
// fit over lifetimes; views and in-place state writes share their source's storage.
#include <algorithm>
#include <map>

#include "graph/graph.hpp"
#include "mnemo/error.hpp"

namespace mnemo::detail {

namespace {

// Free-list arena allocator: best fit, coalescing neighbours on free.
class ArenaAllocator {
public:
    explicit ArenaAllocator(uint64_t alignment) : align_(alignment) {}

    uint64_t allocate(uint64_t bytes) {
        bytes = round_up(std::max<uint64_t>(bytes, 1));
        auto best = free_.end();
        for (auto it = free_.begin(); it != free_.end(); ++it)
            if (it->second >= bytes && (best == free_.end() || it->second < best->second)) best = it;
        if (best != free_.end()) {
            const uint64_t off = best->first;
            const uint64_t left = best->second - bytes;
            free_.erase(best);
            if (left) free_[off + bytes] = left;
            return off;
        }
        // Grow: reuse a free block at the very top if there is one.
        uint64_t off = top_;
        auto last = free_.empty() ? free_.end() : std::prev(free_.end());
        if (last != free_.end() && last->first + last->second == top_) {
            off = last->first;
            free_.erase(last);
        }
        top_ = off + bytes;
        return off;
    }

    void release(uint64_t off, uint64_t bytes) {
        bytes = round_up(std::max<uint64_t>(bytes, 1));
        auto it = free_.emplace(off, bytes).first;
        auto next = std::next(it);
        if (next != free_.end() && it->first + it->second == next->first) {
            it->second += next->second;
            free_.erase(next);
        }
        if (it != free_.begin()) {
            auto prev = std::prev(it);
            if (prev->first + prev->second == it->first) {
                prev->second += it->second;
                free_.erase(it);
            }
        }
    }

    uint64_t peak() const { return top_; }

private:
    uint64_t round_up(uint64_t v) const { return (v + align_ - 1) / align_ * align_; }
    uint64_t align_;
    uint64_t top_ = 0;
    std::map<uint64_t, uint64_t> free_;  // offset -> size
};

}  // namespace

ArenaPlan plan_arena(const std::vector<GraphNode>& nodes, const std::vector<int32_t>& outputs, uint64_t alignment) {
    const size_t n = nodes.size();
    // Every node's storage root: itself, or what it views / writes in place.
    std::vector<int32_t> root(n);
    for (size_t i = 0; i < n; ++i) {
        const GraphNode& g = nodes[i];
        if (g.kind == NodeKind::View || (g.kind == NodeKind::Op && op_info(g.op).output_aliases_input0))
            root[i] = root[g.inputs[0]];
        else
            root[i] = static_cast<int32_t>(i);
    }
    // Last step at which each root is read.
    std::vector<int64_t> last_use(n, -1);
    for (size_t i = 0; i < n; ++i) {
        for (int32_t in : nodes[i].inputs) last_use[root[in]] = std::max<int64_t>(last_use[root[in]], static_cast<int64_t>(i));
        last_use[root[i]] = std::max<int64_t>(last_use[root[i]], static_cast<int64_t>(i));
    }
    for (int32_t output : outputs)
        if (output >= 0) last_use[root[output]] = static_cast<int64_t>(n);  // survives the run

    ArenaPlan plan;
    plan.where.resize(n);
    ArenaAllocator arena(alignment);
    std::vector<uint64_t> offset(n, 0);
    // Inputs first: they are written before the run starts, so they can't share memory with
    // anything computed during it.
    for (size_t i = 0; i < n; ++i)
        if (nodes[i].kind == NodeKind::Input) offset[i] = arena.allocate(nodes[i].shape.nbytes());
    std::vector<std::vector<int32_t>> dies_at(n + 1);
    for (size_t i = 0; i < n; ++i)
        if (root[i] == static_cast<int32_t>(i) && last_use[i] >= 0 && nodes[i].kind != NodeKind::Param)
            dies_at[static_cast<size_t>(last_use[i])].push_back(static_cast<int32_t>(i));

    for (size_t i = 0; i < n; ++i) {
        const GraphNode& g = nodes[i];
        if (g.kind == NodeKind::Op && root[i] == static_cast<int32_t>(i)) offset[i] = arena.allocate(g.shape.nbytes());
        // Free after allocating this node's output: kernels never run in place.
        for (int32_t dead : dies_at[i]) arena.release(offset[dead], nodes[dead].shape.nbytes());
    }
    for (size_t i = 0; i < n; ++i) {
        const GraphNode& r = nodes[root[i]];
        Location& loc = plan.where[i];
        if (r.kind == NodeKind::Param) {
            loc.in_arena = false;
            loc.param_id = r.param_id;
            loc.offset = 0;
        } else {
            loc.offset = offset[root[i]];
        }
    }
    plan.arena_bytes = arena.peak();
    return plan;
}

}  // namespace mnemo::detail
