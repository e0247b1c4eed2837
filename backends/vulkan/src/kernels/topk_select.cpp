// The full sort of top-k rows in scratch (topk_select.hpp).
#include "topk_select.hpp"

namespace mnemo_vk::topk {

void add_sort(KernelBuilder& b, const char* local, const char* global, SortPush p, uint32_t n, uint32_t wg,
              bool from_source, const Range& keys, const Range* aux) {
    const uint32_t block = std::min(p.p, n);
    const std::vector<uint32_t> spec = {wg, n};
    auto pass = [&](const char* shader, uint64_t groups, bool reads_keys, bool writes_output) {
        const Grid g = fold(b.features(), groups);
        p.grid_x = g.x;
        Dispatch& d = b.dispatch(shader, p, g.x, g.y, 1, spec);
        if (reads_keys) d.reads.push_back(keys);
        if (writes_output && aux) d.reads.push_back(*aux);
        if (!writes_output) d.writes = {keys};
    };
    const uint64_t blocks = uint64_t{p.rows} * (p.p / block);
    p.flags = (from_source ? kLoadSource : 0) | (p.p == block ? kWriteOutput : 0);
    p.size_first = 2;
    p.size_last = block;
    pass(local, blocks, !from_source, p.p == block);
    for (uint32_t size = 2 * block; size != 0 && size <= p.p; size <<= 1) {
        for (uint32_t stride = size / 2; stride >= block; stride /= 2) {
            p.size_first = size;
            p.stride = stride;
            pass(global, uint64_t{p.rows} * (p.p / (2 * wg)), true, false);
        }
        p.flags = size == p.p ? kWriteOutput : 0;
        p.size_first = p.size_last = size;
        pass(local, blocks, true, size == p.p);
    }
}

}  // namespace mnemo_vk::topk
