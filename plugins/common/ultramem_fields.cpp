#include "ultramem_fields.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>

#include "config_checks.hpp"

namespace mnemo::ultramem {

using config::num;
using config::require;

namespace {

// floor(sqrt(n)) for n >= 0, exactly (the official int(E ** 0.5) for the small E used).
int64_t isqrt(int64_t n) {
    int64_t r = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
    while (r * r > n) --r;
    while ((r + 1) * (r + 1) <= n) ++r;
    return r;
}

bool parse_int(const std::string& s, int64_t& out) {
    if (s.empty() || s.size() > 9) return false;
    for (char ch : s)
        if (ch < '0' || ch > '9') return false;
    out = std::strtoll(s.c_str(), nullptr, 10);
    return true;
}

}  // namespace

std::vector<Placement> parse_insert_way(const std::string& text, int64_t layers) {
    std::vector<Placement> out;
    if (text == "full") {
        for (int64_t i = 0; i < layers; ++i) out.push_back({i, i});
        return out;
    }
    if (text == "no_mem") return out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find('/', start), text.size());
        const std::string part = text.substr(start, end - start);
        const size_t colon = part.find(':');
        Placement p;
        require(colon != std::string::npos && parse_int(part.substr(0, colon), p.read_block) &&
                    parse_int(part.substr(colon + 1), p.add_block),
                "mem_insert_way \"" + text + "\": \"" + part +
                    "\" is not a pair \"a:b\" (expected \"full\", \"no_mem\" or pairs a:b separated by '/')");
        require(p.read_block <= p.add_block && p.add_block < layers,
                "mem_insert_way pair " + part + " needs a <= b < num_hidden_layers (" + num(layers) +
                    "): memory reads block a's ff_norm output and adds after block b");
        out.push_back(p);
        start = end + 1;
    }
    // olmo/model.py keeps one pending memory output: a pair that starts inside another pair's
    // (a, b] replaces that pending output, which is then silently lost (and a repeated a is one
    // dict key). We refuse such configs instead of reproducing the loss.
    for (size_t i = 0; i < out.size(); ++i)
        for (size_t j = 0; j < out.size(); ++j) {
            if (i == j) continue;
            const Placement& a = out[i];
            const Placement& b = out[j];
            require(b.read_block != a.read_block && !(a.read_block < b.read_block && b.read_block <= a.add_block),
                    "mem_insert_way pairs " + num(a.read_block) + ":" + num(a.add_block) + " and " + num(b.read_block) +
                        ":" + num(b.add_block) +
                        " overlap: the official forward loop keeps one pending memory output, so the first "
                        "memory's output would be dropped");
        }
    return out;
}

MemoryLayersConfig read_memory_layers_config(const plugin::Host& h, int64_t layers, Version version,
                                             const std::string& default_insert_way) {
    MemoryLayersConfig c;
    c.version = version;
    c.insert_way = h.get_string("mem_insert_way", default_insert_way);
    require(!c.insert_way.empty(), "mem_insert_way is missing (\"full\" or skip-layer pairs such as \"2:5/6:9\")");
    c.memories = parse_insert_way(c.insert_way, layers);
    const int64_t n_mem = static_cast<int64_t>(c.memories.size());

    c.knum = h.get_int("mem_knum");
    c.kdim = h.get_int("mem_kdim");
    c.vdim = h.get_int("mem_vdim");
    c.knn = h.get_int("mem_knn");
    c.heads = h.get_int("mem_head", 1);
    c.rank = h.get_int("mem_tucker_rank", 2);
    c.cores = h.get_int("mem_tucker_multihead", 2);
    c.value_expand = h.get_int("mem_value_expand_time", c.v2() ? 1 : 4);
    require(c.knum >= 1 && c.knum <= 46340, "mem_knum must be in 1..46340, got " + num(c.knum));
    require(c.kdim >= 1, "mem_kdim must be >= 1, got " + num(c.kdim));
    require(c.rank >= 1 && c.rank <= 64, "mem_tucker_rank must be in 1..64, got " + num(c.rank));
    require(c.cores >= 1 && c.cores <= 5,
            "mem_tucker_multihead must be in 1..5 (Tucker cores per head; the PK_TOPK op takes at most 5), got " +
                num(c.cores));
    require(c.vdim >= 1 && c.vdim % c.cores == 0,
            "mem_vdim (" + num(c.vdim) + ") must be a positive multiple of mem_tucker_multihead (" + num(c.cores) +
                "): core c weights its own contiguous vdim/C slice of each value (multi-core scoring)");
    require(c.heads >= 1, "mem_head must be >= 1, got " + num(c.heads));

    if (!c.v2()) {
        // UltraMemLayerV1: q_proj_out_dim = 2*kdim, i.e. ONE query per token, read by head h as
        // query[:, h // 2]: a third head indexes past it.
        require(c.heads <= 2, "mem_head = " + num(c.heads) +
                                  ": UltraMem V1 makes one query per token shared by two heads (head h reads "
                                  "query h // 2), so the official code cannot run more than 2 heads");
        require(c.value_expand >= 1, "mem_value_expand_time must be >= 1, got " + num(c.value_expand));
        c.key_expand = isqrt(c.value_expand);
        c.sub_keys = c.key_expand * c.knum;
        c.value_num = c.knum * c.knum;
        c.table_rows = c.value_num;
        c.groups = c.value_expand;
        c.virtual_values = c.value_expand * c.value_num;
        c.query_blocks = 1;
    } else {
        c.q_for_each_rank = h.get_bool("mem_q_for_each_tucker_rank", false);
        c.glu_act = h.get_bool("mem_use_glu_act", false);
        c.pre_vdim = h.get_int("mem_pre_vdim", 0);
        c.share_ratio = h.get_float("mem_share_ratio", 1.0);
        c.key_expand = h.get_int("mem_key_expand_time", 1);
        require(c.q_for_each_rank,
                "mem_q_for_each_tucker_rank is false: the official UltraMemV2 CUDA path then slices half = kdim/2 "
                "query values per side against kdim-wide keys and fails; only q_for_each_tucker_rank = true runs");
        require(c.rank == 2, "mem_tucker_rank = " + num(c.rank) +
                                 ": UltraMemV2 slices qtr*kdim/2 query values per side, which equals the key width "
                                 "kdim only for rank 2");
        c.query_blocks = c.rank;
        require(c.heads <= 2 * c.query_blocks,
                "mem_head = " + num(c.heads) + ": query_proj yields " + num(c.query_blocks) +
                    " query blocks, each shared by two heads (head h reads block h // 2), so at most " +
                    num(2 * c.query_blocks) + " heads can run");
        require(c.pre_vdim >= 0, "mem_pre_vdim must be >= 0 (0: no pre-value gate), got " + num(c.pre_vdim));
        require(c.share_ratio > 0.0 && c.share_ratio <= 1.0,
                "mem_share_ratio must be in (0, 1] (the official code asserts it), got " + std::to_string(c.share_ratio));
        require(c.key_expand >= 1 && c.key_expand <= 64, "mem_key_expand_time must be in 1..64, got " + num(c.key_expand));
        c.groups = c.key_expand * c.key_expand;
        require(c.value_expand == 1 || c.value_expand == c.groups,
                "mem_value_expand_time = " + num(c.value_expand) + " must be 1 (virtual blocks summed, one projector) "
                "or mem_key_expand_time^2 = " + num(c.groups) + " (the official code asserts it)");
        c.table_rows = c.knum * c.knum * n_mem;
        // knum_r = int(sqrt(A * share_ratio)): float square root, then truncation (official code).
        const int64_t knum_r = static_cast<int64_t>(std::sqrt(static_cast<double>(c.table_rows) * c.share_ratio));
        require(n_mem == 0 || knum_r >= 1,
                "mem_share_ratio " + std::to_string(c.share_ratio) + " of " + num(c.table_rows) +
                    " shared rows leaves no sub-keys (int(sqrt(A * share_ratio)) = 0)");
        c.value_num = knum_r * knum_r;
        c.sub_keys = c.key_expand * knum_r;
        c.virtual_values = c.groups * c.value_num;
        require(c.value_num <= c.table_rows, "a layer's window of " + num(c.value_num) +
                                                 " rows is larger than the shared table (" + num(c.table_rows) + ")");
        for (int64_t l = 0; l < n_mem; ++l)
            require(c.window_offset(l) < c.table_rows,
                    "memory layer " + num(l) + "'s window starts at row " + num(c.window_offset(l)) +
                        ", outside the shared table of " + num(c.table_rows) + " rows");
    }
    if (n_mem > 0) {
        require(c.knn >= 1 && c.knn <= c.sub_keys,
                "mem_knn = " + num(c.knn) + " must be in 1.." + num(c.sub_keys) + " (the " + num(c.sub_keys) +
                    " sub-keys per side: torch.topk of the official code fails beyond)");
        require(c.sub_keys * c.sub_keys <= INT32_MAX && c.groups * c.table_rows <= INT32_MAX,
                "the memory is too large for 32-bit indices (Nk^2 = " + num(c.sub_keys * c.sub_keys) + ")");
    }
    return c;
}

std::string describe(const MemoryLayersConfig& c) {
    std::ostringstream s;
    s << "memory " << c.insert_way << " (" << c.memories.size() << " layers): TDQKR H=" << c.heads << " R=" << c.rank
      << " C=" << c.cores << " Nk=" << c.sub_keys << " kdim=" << c.kdim << " knn=" << c.knn << ", ";
    if (c.v2())
        s << "shared table " << c.table_rows << "x" << c.vdim << " (windows of " << c.value_num << "), Ek=" << c.key_expand
          << (c.sum_groups() ? " summed" : " grouped") << ", pre-value gate "
          << (c.pre_vdim == 0 ? "off" : (c.glu_act ? "GELU" : "linear"));
    else
        s << "IVE E=" << c.value_expand << " over " << c.table_rows << "x" << c.vdim << " per layer";
    return s.str();
}

}  // namespace mnemo::ultramem
