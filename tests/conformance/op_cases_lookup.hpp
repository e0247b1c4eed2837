// Conformance cases of the lookup family: EMBEDDING_BAG (plain, grouped, per-core), MEM_INDEX,
// PEER_GATE and HIVE.
//
// Shapes follow the memory layers that use these ops (UltraMem V1: 4 groups, 2 cores, vdim 384,
// m = 2 heads x 80 = 160 entries; UltraMemV2: a shared table read through offset windows that
// wrap around; PEER gates; MIDUS HIVE heads), plus odd sizes that leave every vector tail and
// every core or column-block boundary non-trivial.
#pragma once

#include "conformance/op_case.hpp"

namespace mnemo::conformance::detail {

// The memory-layer value read: N bags (tokens x heads) of m rows from a large table. The table
// size is capped at 4M elements (R = 65536 for narrow rows) to keep the suite quick. Every bag
// repeats a row (its first two entries), and the first bag touches the first and last rows.
inline void embedding_bag(std::vector<OpCase>& out) {
    const int64_t ns[] = {1, 3, 32}, ms[] = {1, 16, 32}, cs[] = {1, 17, 256, 1024};
    for (size_t in = 0; in < 3; ++in)
        for (size_t im = 0; im < 3; ++im)
            for (size_t ic = 0; ic < 4; ++ic) {
                const int64_t n = ns[in], m = ms[im], cols = cs[ic];
                const int64_t rows = std::min<int64_t>(65536, (int64_t{1} << 22) / cols);
                const DType dt = kWeightTypes[(in + im + ic) % 3];  // every (N, C) and (m, C) sees every dtype
                OpCase c;
                c.op = MNEMO_OP_EMBEDDING_BAG;
                c.name = "embedding_bag_R" + std::to_string(rows) + "_C" + std::to_string(cols) + "_N" +
                         std::to_string(n) + "_m" + std::to_string(m) + "_" + dt_name(dt);
                CaseRng rng(name_seed(c.name) ^ 5);
                std::vector<int32_t> idx;
                for (int64_t b = 0; b < n; ++b)
                    for (int64_t j = 0; j < m; ++j) {
                        int32_t r = rng.below(static_cast<int32_t>(rows));
                        if (j == 1) r = idx.back();
                        if (b == 0 && j == 2) r = static_cast<int32_t>(rows - 1);
                        if (b == 0 && j == 3) r = 0;
                        idx.push_back(r);
                    }
                c.inputs = {weight(dt, {rows, cols}), i32_shaped({n, m}, idx), f32({n, m}, 0.5f)};
                out.push_back(c);
            }
}

// Random indices in 0..limit-1 for `count` entries, with the first entries pinned to the edges
// (0, limit-1 and, when given, the first and last index of every group of `group_rows`) so that
// off-by-one addressing of rows and groups shows up in every case.
inline std::vector<int32_t> edge_indices(CaseRng& rng, int64_t count, int64_t limit, int64_t group_rows = 0) {
    std::vector<int32_t> pinned = {0, static_cast<int32_t>(limit - 1)};
    if (group_rows > 0)
        for (int64_t g = 1; g * group_rows < limit; ++g) {
            pinned.push_back(static_cast<int32_t>(g * group_rows - 1));
            pinned.push_back(static_cast<int32_t>(g * group_rows));
        }
    std::vector<int32_t> v;
    for (int64_t i = 0; i < count; ++i)
        v.push_back(i < static_cast<int64_t>(pinned.size()) ? pinned[static_cast<size_t>(i)]
                                                           : rng.below(static_cast<int32_t>(limit)));
    return v;
}

inline void embedding_bag_groups(std::vector<OpCase>& out) {
    struct Cfg { int64_t n, m, cols, rows, groups, cores; DType dt; };
    const Cfg cfgs[] = {
        {1, 160, 384, 4096, 4, 2, DType::BF16},  // UltraMem V1 decode: E = 4 groups, 2 cores
        {1, 160, 384, 4096, 1, 2, DType::F16},   // cores without groups
        {1, 160, 384, 4096, 4, 1, DType::F32},   // groups without cores
        {32, 32, 96, 1000, 4, 2, DType::BF16},   // a batch: more segments than threads
        {3, 17, 33, 100, 4, 3, DType::F32},      // odd widths: 11 columns per core
        {5, 16, 6, 50, 1, 2, DType::F16},        // 3 columns per core: scalar tails only
        {1, 20, 200, 300, 1, 2, DType::F16},     // a column block straddles the core boundary (100)
        {1, 20, 200, 300, 2, 2, DType::BF16},
        {2, 8, 1024, 512, 2, 4, DType::F16},     // several blocks per core
        {7, 1, 64, 10, 16, 1, DType::BF16},      // many groups, one entry: most segments are zeros
        {4, 0, 8, 10, 3, 2, DType::F32},         // empty bags give zeros in every group
        {2, 300, 40, 50, 2, 20, DType::F16},     // 2 columns per core: 20 cores' weights per entry, long bag
        {2, 600, 130, 64, 1, 1, DType::F32},     // a bag longer than one staged chunk; a 2-column last block
        {3, 70, 131, 40, 3, 1, DType::BF16},     // odd width: 16-bit rows that start on a half word
    };
    for (const Cfg& k : cfgs) {
        OpCase c;
        c.op = MNEMO_OP_EMBEDDING_BAG;
        c.name = "embedding_bag_groups_R" + std::to_string(k.rows) + "_C" + std::to_string(k.cols) + "_N" +
                 std::to_string(k.n) + "_m" + std::to_string(k.m) + "_G" + std::to_string(k.groups) + "_P" +
                 std::to_string(k.cores) + "_" + dt_name(k.dt);
        CaseRng rng(name_seed(c.name) ^ 11);
        std::vector<int32_t> idx = edge_indices(rng, k.n * k.m, k.groups * k.rows, k.rows);
        // Repeated entries add up: the second entry of every bag repeats its first.
        for (int64_t b = 1; b < k.n && k.m >= 2; ++b)
            idx[static_cast<size_t>(b * k.m + 1)] = idx[static_cast<size_t>(b * k.m)];
        InputSpec w = k.cores > 1 ? f32({k.n, k.m, k.cores}, 0.5f) : f32({k.n, k.m}, 0.5f);
        c.inputs = {weight(k.dt, {k.rows, k.cols}), i32_shaped({k.n, k.m}, idx), w};
        c.iparams[0] = k.groups;
        out.push_back(c);
    }
}

inline void mem_index(std::vector<OpCase>& out) {
    struct Cfg { std::vector<int64_t> shape; int64_t value_num, offset, rows, groups; bool shuffle, with_group; };
    const Cfg cfgs[] = {
        {{1, 64}, 100, 0, 100, 4, true, true},          // UltraMem V1: E = 4 groups of knum^2 rows, shuffled
        {{3, 2, 32}, 100, 200, 250, 4, true, false},    // V2: a window of the shared table that wraps at A
        {{3, 2, 32}, 100, 200, 250, 4, true, true},
        {{5}, 7, 3, 9, 1, false, false},                 // no shuffle, one group, wrapping
        {{2, 1, 2, 8}, 16, 15, 16, 2, false, true},      // 4-D, offset = A - 1: every row but one wraps
        {{4, 33}, 16384, 250000, 262144, 4, true, true}, // UltraMemV2 sizes, last layer's window wraps
        {{3, 200}, 64, 50, 100, 4, true, false},         // 600 indices: several workgroups on a GPU
        {{600}, 7, 6, 10, 9, false, true},               // 1-D, no shuffle, nine groups
    };
    for (const Cfg& k : cfgs) {
        OpCase c;
        c.op = MNEMO_OP_MEM_INDEX;
        c.name = "mem_index_" + dims_name(k.shape) + "_vn" + std::to_string(k.value_num) + "_off" +
                 std::to_string(k.offset) + "_A" + std::to_string(k.rows) + "_G" + std::to_string(k.groups) +
                 (k.shuffle ? "_shuffle" : "") + (k.with_group ? "_grouped" : "");
        CaseRng rng(name_seed(c.name) ^ 12);
        const int64_t virt = k.groups * k.value_num;
        int64_t count = 1;
        for (int64_t d : k.shape) count *= d;
        c.inputs = {i32_shaped(k.shape, edge_indices(rng, count, virt, k.value_num))};
        if (k.shuffle) {
            // A random permutation (Fisher-Yates), like UltraMem's randperm shuffle_index buffer.
            std::vector<int32_t> perm(static_cast<size_t>(virt));
            for (int64_t i = 0; i < virt; ++i) perm[static_cast<size_t>(i)] = static_cast<int32_t>(i);
            for (int64_t i = virt - 1; i > 0; --i)
                std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(rng.below(static_cast<int32_t>(i + 1)))]);
            c.inputs.push_back(i32(perm));
        }
        c.iparams = {k.value_num, k.offset, k.rows, k.groups, k.with_group ? 1 : 0};
        out.push_back(c);
    }
}

inline void peer_gate(std::vector<OpCase>& out) {
    struct Cfg { int64_t n, m, width, rows, per_entry; int64_t act; DType dt; };
    const Cfg cfgs[] = {
        {1, 32, 256, 4096, 2, 0, DType::BF16},  // UltraMemV2 decode: linear gate on both cores' scores
        {1, 32, 256, 4096, 2, 1, DType::BF16},  // with mem_use_glu_act (torch's default GELU, erf)
        {7, 16, 64, 500, 1, 2, DType::F16},     // GELU tanh, [N, m] scores
        {32, 33, 17, 100, 3, 1, DType::F32},    // odd width: scalar tail of every dot product
        {3, 1, 100, 7, 1, 0, DType::F16},
        {5, 8, 40, 64, 2, 2, DType::F32},
        {4, 5, 131, 50, 2, 1, DType::BF16},     // odd width: 16-bit rows that start on a half word
        // From the CPU module's former self-test, each in every dtype: width 37 (a tail), 4 scores
        // per entry, width 3 (below one vector), width 100 with 2 scores per entry.
        {3, 5, 37, 50, 1, 0, DType::F32}, {3, 5, 37, 50, 1, 0, DType::F16}, {3, 5, 37, 50, 1, 0, DType::BF16},
        {1, 16, 256, 300, 4, 2, DType::F32}, {1, 16, 256, 300, 4, 2, DType::F16}, {1, 16, 256, 300, 4, 2, DType::BF16},
        {2, 7, 3, 20, 1, 1, DType::F32}, {2, 7, 3, 20, 1, 1, DType::F16}, {2, 7, 3, 20, 1, 1, DType::BF16},
        {4, 9, 100, 64, 2, 0, DType::F32}, {4, 9, 100, 64, 2, 0, DType::F16}, {4, 9, 100, 64, 2, 0, DType::BF16},
    };
    for (const Cfg& k : cfgs) {
        OpCase c;
        c.op = MNEMO_OP_PEER_GATE;
        c.name = "peer_gate_R" + std::to_string(k.rows) + "_P" + std::to_string(k.width) + "_N" + std::to_string(k.n) +
                 "_m" + std::to_string(k.m) + (k.per_entry > 1 ? "_C" + std::to_string(k.per_entry) : std::string()) +
                 "_act" + std::to_string(k.act) + "_" + dt_name(k.dt);
        CaseRng rng(name_seed(c.name) ^ 13);
        // Indices may carry a group (EMBEDDING_BAG's idx in 0..G*R-1): the gate reads idx % R.
        const std::vector<int32_t> idx = edge_indices(rng, k.n * k.m, 4 * k.rows, k.rows);
        // Rows and query scaled so the dot products are of order 1: both sides of the GELU matter.
        const float row_sd = 1.0f / std::sqrt(static_cast<float>(k.width)) * 1.5f;
        InputSpec sc = k.per_entry > 1 ? f32({k.n, k.m, k.per_entry}) : f32({k.n, k.m});
        c.inputs = {weight(k.dt, {k.rows, k.width}, row_sd), i32_shaped({k.n, k.m}, idx), f32({k.n, k.width}), sc};
        c.iparams[0] = k.act;
        out.push_back(c);
    }
}

inline void hive(std::vector<OpCase>& out) {
    struct Cfg { int64_t n, heads, m, rows, rank, dh; DType bank_dt, proj_dt; };
    const Cfg cfgs[] = {
        {1, 8, 32, 4096, 64, 64, DType::BF16, DType::BF16},  // decode: one bag per head
        {3, 4, 16, 100, 33, 17, DType::F32, DType::F16},     // odd rank and head size
        {32, 2, 8, 1000, 128, 64, DType::F16, DType::F32},   // a batch: tasks run head by head
        {5, 1, 1, 9, 8, 3, DType::BF16, DType::F32},
        {2, 3, 0, 10, 16, 8, DType::F32, DType::BF16},       // empty bags give zeros
        {2, 2, 300, 500, 201, 150, DType::BF16, DType::F16},  // long bags, rank and Dh over several column blocks
        // From the CPU module's former self-test, bank and projection in each dtype: rank 37 and
        // Dh 19 (tails), rank 64 over 4 heads, and the smallest shapes (rank 5, Dh 3).
        {2, 3, 5, 40, 37, 19, DType::F32, DType::F32}, {2, 3, 5, 40, 37, 19, DType::F16, DType::F16},
        {2, 3, 5, 40, 37, 19, DType::BF16, DType::BF16}, {1, 4, 16, 200, 64, 64, DType::F32, DType::F32},
        {1, 4, 16, 200, 64, 64, DType::F16, DType::F16}, {1, 4, 16, 200, 64, 64, DType::BF16, DType::BF16},
        {3, 1, 2, 9, 5, 3, DType::F32, DType::F32}, {3, 1, 2, 9, 5, 3, DType::F16, DType::F16},
        {3, 1, 2, 9, 5, 3, DType::BF16, DType::BF16},
    };
    for (const Cfg& k : cfgs) {
        OpCase c;
        c.op = MNEMO_OP_HIVE;
        c.name = "hive_R" + std::to_string(k.rows) + "_r" + std::to_string(k.rank) + "_N" + std::to_string(k.n) + "_H" +
                 std::to_string(k.heads) + "_m" + std::to_string(k.m) + "_Dh" + std::to_string(k.dh) + "_" +
                 dt_name(k.bank_dt) + "_" + dt_name(k.proj_dt);
        CaseRng rng(name_seed(c.name) ^ 14);
        const std::vector<int32_t> idx = edge_indices(rng, k.n * k.heads * k.m, k.rows);
        c.inputs = {weight(k.bank_dt, {k.rows, k.rank}), i32_shaped({k.n, k.heads, k.m}, idx),
                    f32({k.n, k.heads, k.m}, 0.5f),
                    weight(k.proj_dt, {k.heads, k.rank, k.dh}, 1.0f / std::sqrt(static_cast<float>(k.rank)))};
        out.push_back(c);
    }
}

// Wide rows at decode (C = 4099: the columns are split over threads, with a vector tail), C = 37
// and 1030 (tails after several vectors), and empty bags (m = 0), each in every dtype (from the
// CPU module's former self-test).
inline void embedding_bag_tails(std::vector<OpCase>& out) {
    struct Bag { int64_t rows, cols, n, m; };
    for (DType dt : kWeightTypes)
        for (const Bag& b : {Bag{300, 4099, 1, 32}, Bag{50, 37, 5, 9}, Bag{7, 64, 2, 0}, Bag{1000, 1030, 3, 40}}) {
            OpCase c;
            c.op = MNEMO_OP_EMBEDDING_BAG;
            c.name = "embedding_bag_R" + std::to_string(b.rows) + "_C" + std::to_string(b.cols) + "_N" + std::to_string(b.n) +
                     "_m" + std::to_string(b.m) + "_" + dt_name(dt);
            CaseRng rng(name_seed(c.name) ^ 5);
            c.inputs = {weight(dt, {b.rows, b.cols}), i32_shaped({b.n, b.m}, edge_indices(rng, b.n * b.m, b.rows)),
                        f32({b.n, b.m}, 0.5f)};
            out.push_back(c);
        }
}

// Block-quantized tables (q8_0 ... q6_k): the reference reads each row through the reference
// dequantizer, so a backend that decodes the blocks exactly differs only by summation order, as
// with float tables. Widths are whole blocks (256 for the K-quants); the per-core split puts a core
// boundary inside a block (q8_0 / q4_0: C = 96 in 2 cores of 48; K-quants: C = 256 in 8 cores of 32).
inline void lookup_quantized(std::vector<OpCase>& out) {
    for (DType dt : kQuantizedTypes) {
        const bool k_quant = dtype_block(dt).elems == 256;
        const int64_t wide = k_quant ? 512 : 384, narrow = k_quant ? 256 : 64;
        struct Bag { int64_t n, m, cols, rows, groups, cores; };
        const Bag bags[] = {
            {1, 16, wide, 4096, 1, 1},     // decode: one bag, columns split between threads
            {1, 160, wide, 1024, 4, 2},    // UltraMem V1 decode: 4 groups, 2 cores
            {9, 7, narrow, 300, 1, 1},     // a batch: more bags than threads
            {2, 600, narrow, 64, 1, 1},    // a long bag
            {3, 5, k_quant ? 256 : 96, 50, 2, k_quant ? 8 : 2},  // cores of 32 / 48 columns inside blocks
        };
        for (const Bag& k : bags) {
            OpCase c;
            c.op = MNEMO_OP_EMBEDDING_BAG;
            c.name = "embedding_bag_q_R" + std::to_string(k.rows) + "_C" + std::to_string(k.cols) + "_N" + std::to_string(k.n) +
                     "_m" + std::to_string(k.m) + "_G" + std::to_string(k.groups) + "_P" + std::to_string(k.cores) + "_" + dt_name(dt);
            CaseRng rng(name_seed(c.name) ^ 21);
            const std::vector<int32_t> idx = edge_indices(rng, k.n * k.m, k.groups * k.rows, k.rows);
            InputSpec w = k.cores > 1 ? f32({k.n, k.m, k.cores}, 0.5f) : f32({k.n, k.m}, 0.5f);
            c.inputs = {weight(dt, {k.rows, k.cols}), i32_shaped({k.n, k.m}, idx), w};
            c.iparams[0] = k.groups;
            out.push_back(c);
        }
        for (int64_t n : {1, 5}) {
            OpCase c;
            c.op = MNEMO_OP_PEER_GATE;
            const int64_t width = narrow, rows = 500, m = 8;
            c.name = "peer_gate_q_R" + std::to_string(rows) + "_P" + std::to_string(width) + "_N" + std::to_string(n) + "_" + dt_name(dt);
            CaseRng rng(name_seed(c.name) ^ 22);
            const float row_sd = 1.5f / std::sqrt(static_cast<float>(width));
            c.inputs = {weight(dt, {rows, width}, row_sd), i32_shaped({n, m}, edge_indices(rng, n * m, 2 * rows, rows)),
                        f32({n, width}), f32({n, m, 2})};
            c.iparams[0] = 1;
            // The K-quants' random test blocks subtract large minima: the dot products cancel, so
            // f32 partial sums sit further from the double reference than with float rows.
            if (k_quant) c.max_nmse = 1e-6;
            out.push_back(c);
        }
        {
            OpCase c;
            c.op = MNEMO_OP_HIVE;
            const int64_t n = 3, heads = 4, m = 16, rows = 200, rank = narrow, dh = 48;
            c.name = "hive_q_R" + std::to_string(rows) + "_r" + std::to_string(rank) + "_H" + std::to_string(heads) + "_" + dt_name(dt);
            CaseRng rng(name_seed(c.name) ^ 23);
            c.inputs = {weight(dt, {rows, rank}), i32_shaped({n, heads, m}, edge_indices(rng, n * heads * m, rows)),
                        f32({n, heads, m}, 0.5f), weight(DType::F16, {heads, rank, dh}, 1.0f / std::sqrt(static_cast<float>(rank)))};
            out.push_back(c);
        }
    }
}

inline void lookup_cases(std::vector<OpCase>& out) {
    embedding_bag(out);
    embedding_bag_tails(out);
    embedding_bag_groups(out);
    mem_index(out);
    peer_gate(out);
    hive(out);
    lookup_quantized(out);
}

}  // namespace mnemo::conformance::detail
