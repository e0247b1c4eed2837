#include "memory/memory_writer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "mnemo/error.hpp"

namespace mnemo::detail {

namespace {

// Named outputs hold `per_row` values for each of `rows` rows: what the layout promises the
// indexing below (a plugin's graph that disagrees with its states is refused, not read past).
const std::vector<float>& output(const std::map<std::string, std::vector<float>>& out, const std::string& name,
                                 size_t rows, size_t per_row, const char* meaning) {
    const std::vector<float>& v = out.at(name);
    if (v.size() != rows * per_row)
        throw Error("memory graph output '" + name + "' holds " + std::to_string(v.size()) + " values for " +
                    std::to_string(rows) + " rows; the memory states need " + std::to_string(per_row) + " per row (" +
                    meaning + ")");
    return v;
}

// Mean of `n` rows of h from row `row0` on, L2-normalised: a retrieval vector (§3.1).
std::vector<float> pooled(const std::vector<float>& h, size_t row0, size_t n, size_t dim) {
    std::vector<double> acc(dim, 0.0);
    for (size_t j = 0; j < n; ++j)
        for (size_t d = 0; d < dim; ++d) acc[d] += h[(row0 + j) * dim + d];
    std::vector<float> v(dim);
    for (size_t d = 0; d < dim; ++d) v[d] = static_cast<float>(acc[d] / static_cast<double>(n));
    double norm = 0;
    for (float x : v) norm += static_cast<double>(x) * x;
    if (norm > 0) {
        const float inv = static_cast<float>(1.0 / std::sqrt(norm));
        for (float& x : v) x *= inv;
    }
    return v;
}

}  // namespace

std::vector<BatchToken> MemoryWriter::text_rows(const std::vector<std::vector<int32_t>>& texts, size_t first, size_t last,
                                                bool references) const {
    const MemorySpec& sp = layout_.spec;
    const int32_t b = static_cast<int32_t>(layout_.prefix());
    std::vector<BatchToken> rows;
    for (size_t i = first; i < last; ++i) {
        const std::vector<int32_t>& t = texts[i];
        if (t.empty() || static_cast<int32_t>(t.size()) > sp.reference_length)
            throw Error((references ? "reference " + std::to_string(i) : std::string("a retrieval text")) + " holds " +
                        std::to_string(t.size()) + " tokens; 1.." + std::to_string(sp.reference_length) + " are allowed");
        const int32_t seq = static_cast<int32_t>(i - first);
        for (int32_t j = 0; j < b; ++j) rows.push_back({sp.prefix_ids[static_cast<size_t>(j)], j, seq, false});
        for (size_t j = 0; j < t.size(); ++j) rows.push_back({t[j], b + static_cast<int32_t>(j), seq, false});
    }
    return rows;
}

std::vector<std::vector<float>> MemoryWriter::retrieval_vectors(const std::vector<std::vector<int32_t>>& texts) {
    const MemorySpec& sp = layout_.spec;
    const size_t b = static_cast<size_t>(layout_.prefix()), dim = static_cast<size_t>(sp.retrieval_dim);
    std::vector<std::vector<float>> out;
    for (size_t first = 0; first < texts.size(); first += static_cast<size_t>(sp.encode_sequences)) {
        const size_t last = std::min(texts.size(), first + static_cast<size_t>(sp.encode_sequences));
        const std::vector<BatchToken> rows = text_rows(texts, first, last, false);
        const auto res = host_.run_outputs(MNEMO_GRAPH_ENCODE_QUERY, rows, {"hidden"});
        stats_.query_passes++;
        const std::vector<float>& h = output(res, "hidden", rows.size(), dim, "retrieval_dim");
        size_t row = 0;
        for (size_t i = first; i < last; ++i) {
            out.push_back(pooled(h, row + b, texts[i].size(), dim));
            row += b + texts[i].size();
        }
    }
    return out;
}

std::vector<WrittenMemory> MemoryWriter::write(const std::vector<std::vector<int32_t>>& refs) {
    const MemorySpec& sp = layout_.spec;
    const size_t b = static_cast<size_t>(layout_.prefix()), dim = static_cast<size_t>(sp.retrieval_dim);
    const size_t H = static_cast<size_t>(sp.kv_heads), keep = static_cast<size_t>(sp.tokens_per_head);
    const size_t hd = static_cast<size_t>(sp.head_dim), vd = static_cast<size_t>(sp.value_dim);
    const size_t n_mem = sp.memory_layers.size();
    std::vector<std::string> wanted = {"hidden"};
    for (int32_t l : sp.memory_layers)
        for (const char* what : {"k.", "v.", "mass."}) wanted.push_back(what + std::to_string(l));
    std::vector<WrittenMemory> out;
    for (size_t first = 0; first < refs.size(); first += static_cast<size_t>(sp.encode_sequences)) {
        const size_t last = std::min(refs.size(), first + static_cast<size_t>(sp.encode_sequences));
        const std::vector<BatchToken> rows = text_rows(refs, first, last, true);
        const auto res = host_.run_outputs(MNEMO_GRAPH_ENCODE, rows, wanted);
        const std::vector<float>& hid = output(res, "hidden", rows.size(), dim, "retrieval_dim");
        size_t r0 = b;  // first reference token of reference i
        for (size_t i = first; i < last; r0 += b + refs[i].size(), ++i) {
            const int32_t n = static_cast<int32_t>(refs[i].size());
            WrittenMemory w;
            ExplicitMemory& mem = w.memory;
            mem.n_valid = std::min(n, sp.tokens_per_head);
            mem.indices.assign(n_mem * H * keep, -1);
            mem.keys.assign(n_mem * H * keep * hd, 0.0f);
            mem.values.assign(n_mem * H * keep * vd, 0.0f);
            for (size_t mi = 0; mi < n_mem; ++mi) {
                const std::string l = std::to_string(sp.memory_layers[mi]);
                const std::vector<float>& mass = output(res, "mass." + l, rows.size(), H, "kv_heads");
                const std::vector<float>& k = output(res, "k." + l, rows.size(), H * hd, "kv_heads x head_dim");
                const std::vector<float>& v = output(res, "v." + l, rows.size(), H * vd, "kv_heads x value_dim");
                for (size_t h = 0; h < H; ++h) {
                    // The kept tokens: most attention first, ties to the lower token; stored in
                    // ascending token order.
                    std::vector<int32_t> order(static_cast<size_t>(n));
                    std::iota(order.begin(), order.end(), 0);
                    auto w_of = [&](int32_t j) { return mass[(r0 + static_cast<size_t>(j)) * H + h]; };
                    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t c) { return w_of(a) > w_of(c); });
                    order.resize(static_cast<size_t>(mem.n_valid));
                    std::sort(order.begin(), order.end());
                    for (size_t s = 0; s < order.size(); ++s) {
                        const size_t slot = (mi * H + h) * keep + s;
                        const size_t row = r0 + static_cast<size_t>(order[s]);
                        mem.indices[slot] = order[s];
                        std::copy_n(&k[(row * H + h) * hd], hd, &mem.keys[slot * hd]);
                        std::copy_n(&v[(row * H + h) * vd], vd, &mem.values[slot * vd]);
                    }
                }
            }
            w.vector = pooled(hid, r0, static_cast<size_t>(n), dim);
            out.push_back(std::move(w));
        }
    }
    return out;
}

MemoryWriter::Prefix MemoryWriter::encode_prefix() {
    const MemorySpec& sp = layout_.spec;
    const size_t n_layers = layout_.layers.size();
    const int64_t b = layout_.prefix();
    Prefix p;
    p.k.assign(n_layers, {});
    p.v.assign(n_layers, {});
    if (b == 0) return p;
    std::vector<BatchToken> rows;
    for (int64_t i = 0; i < b; ++i) rows.push_back({sp.prefix_ids[static_cast<size_t>(i)], static_cast<int32_t>(i), 0, false});
    std::vector<std::string> wanted;
    for (size_t l = 0; l < n_layers; ++l) {
        wanted.push_back("k." + std::to_string(l));
        wanted.push_back("v." + std::to_string(l));
    }
    const auto out = host_.run_outputs(MNEMO_GRAPH_ENCODE, rows, wanted);
    const size_t H = static_cast<size_t>(sp.kv_heads);
    // [b, Hkv, D] rows -> [Hkv, b, D] block layout
    auto to_heads = [&](const std::string& name, size_t d) {
        const std::vector<float>& x = output(out, name, static_cast<size_t>(b), H * d, "kv_heads x dim");
        std::vector<float> y(x.size());
        for (size_t t = 0; t < static_cast<size_t>(b); ++t)
            for (size_t h = 0; h < H; ++h)
                std::copy_n(&x[(t * H + h) * d], d, &y[(h * static_cast<size_t>(b) + t) * d]);
        return y;
    };
    for (size_t l = 0; l < n_layers; ++l) {
        p.k[l] = to_heads("k." + std::to_string(l), static_cast<size_t>(sp.head_dim));
        p.v[l] = to_heads("v." + std::to_string(l), static_cast<size_t>(sp.value_dim));
    }
    return p;
}

}  // namespace mnemo::detail
