// Reference of ATTENTION: causal attention over a sequence's cache rows, with the optional
// explicit-memory prefix read first under ONE softmax (Memory3 eq. 4). The caches and the prefix
// may be f16 or q8_0: each key and value row is read exactly as stored, through row_f32 (the
// reference dequantizer), so the reference attends to what the cache holds.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/reference_detail.hpp"

namespace mnemo::reference {
namespace {

// ATTENTION's optional prefix (inputs 5..8): the block each query reads, -1 for none. Every
// plen and pblock entry is checked up front, so a bad one is an error whether or not a query
// would have read it.
std::vector<int64_t> prefix_blocks(const Ctx& c, int64_t n_tok) {
    std::vector<int64_t> block(static_cast<size_t>(n_tok), -1);
    if (c.in.size() < 8) return block;
    const In& pk = c.in[5];
    const In& plen = c.in[7];
    const int64_t n_blocks = pk.dim(0), slots = pk.dim(2);
    for (int64_t b = 0; b < n_blocks; ++b)
        if (plen.i32(b) < 0 || plen.i32(b) > slots)
            c.fail("prefix block " + std::to_string(b) + ": length " + std::to_string(plen.i32(b)) + " is outside 0.." +
                   std::to_string(slots));
    for (int64_t n = 0; n < n_tok; ++n) {
        const int64_t b = c.in.size() > 8 ? c.in[8].i32(n) : 0;
        if (b >= n_blocks)
            c.fail("row " + std::to_string(n) + ": prefix block " + std::to_string(b) + " is outside 0.." +
                   std::to_string(n_blocks - 1) + " (negative: no prefix)");
        block[static_cast<size_t>(n)] = b < 0 ? -1 : b;
    }
    return block;
}

}  // namespace

void attention(const Ctx& c) {
    const In& q = c.in[0];
    const In& k = c.in[1];
    const In& v = c.in[2];
    const In& seq = c.in[3];
    const In& pos = c.in[4];
    const double scale = c.node.fparams[0];
    const int64_t n_tok = q.dim(0), hq = q.dim(1), d = q.dim(2);
    const int64_t n_seq = k.dim(0), hkv = k.dim(1), ctx_len = k.dim(2), dv = v.dim(3);
    const int64_t group = hq / hkv;
    for (int64_t n = 0; n < n_tok; ++n) check_seq_pos(c, seq, pos, n, n_seq, ctx_len);
    const std::vector<int64_t> block = prefix_blocks(c, n_tok);
    const int64_t slots = c.in.size() >= 8 ? c.in[5].dim(2) : 0;
    // One key list per (query, head): the prefix slots first, then the causal cache rows. Each
    // key is (tensor, row) so that one softmax covers both parts.
    struct Key {
        const In* k;
        const In* v;
        int64_t row;
    };
    std::vector<Key> keys;
    std::vector<double> scores, acc(static_cast<size_t>(dv));
    std::vector<float> krow(static_cast<size_t>(d)), vrow(static_cast<size_t>(dv));
    for (int64_t n = 0; n < n_tok; ++n) {
        const int64_t s = seq.i32(n), b = block[static_cast<size_t>(n)];
        const int64_t n_prefix = b < 0 ? 0 : c.in[7].i32(b);
        for (int64_t h = 0; h < hq; ++h) {
            const int64_t kvh = h / group;
            const int64_t q_base = (n * hq + h) * d;
            keys.clear();
            for (int64_t t = 0; t < n_prefix; ++t) keys.push_back({&c.in[5], &c.in[6], (b * hkv + kvh) * slots + t});
            for (int64_t t = 0; t <= pos.i32(n); ++t) keys.push_back({&k, &v, (s * hkv + kvh) * ctx_len + t});
            scores.assign(keys.size(), 0.0);
            double mx = -INFINITY;
            for (size_t t = 0; t < keys.size(); ++t) {
                double dot = 0.0;
                keys[t].k->row_f32(keys[t].row, krow.data());
                for (int64_t j = 0; j < d; ++j)
                    dot += static_cast<double>(q.f(q_base + j)) * static_cast<double>(krow[static_cast<size_t>(j)]);
                scores[t] = dot * scale;
                mx = std::max(mx, scores[t]);
            }
            double sum = 0.0;
            for (double& e : scores) {
                e = std::exp(e - mx);
                sum += e;
            }
            std::fill(acc.begin(), acc.end(), 0.0);
            for (size_t t = 0; t < keys.size(); ++t) {
                const double p = scores[t] / sum;
                keys[t].v->row_f32(keys[t].row, vrow.data());
                for (int64_t j = 0; j < dv; ++j) acc[static_cast<size_t>(j)] += p * vrow[static_cast<size_t>(j)];
            }
            for (int64_t j = 0; j < dv; ++j) c.out[(n * hq + h) * dv + j] = static_cast<float>(acc[static_cast<size_t>(j)]);
        }
    }
}

}  // namespace mnemo::reference
