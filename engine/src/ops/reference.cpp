// The naive CPU reference of every op: the ground truth the conformance harness compares each
// backend with. Plain loops over the table in mnemo/abi/mnemo_abi.h, no vectorisation, no
// threading; dot products, norms and softmax sums accumulate in double so that the reference's
// own rounding is far below any backend's.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"
#include "ops/reference_detail.hpp"

namespace mnemo {
using namespace reference;
namespace {

const char* bytes_at(const mnemo_tensor& t) { return static_cast<const char*>(t.buffer) + t.offset; }

void get_rows(const Ctx& c) {
    const In& table = c.in[0];
    const In& idx = c.in[1];
    const int64_t rows = table.dim(0), cols = table.dim(1);
    for (int64_t n = 0; n < idx.numel(); ++n) {
        const int64_t r = idx.i32(n);
        if (r < 0 || r >= rows)
            c.fail("index " + std::to_string(n) + " is row " + std::to_string(r) + ", table has " +
                   std::to_string(rows) + " rows");
        for (int64_t j = 0; j < cols; ++j) c.out[n * cols + j] = table.f(r * cols + j);
    }
}

void matmul(const Ctx& c) {
    const In& x = c.in[0];
    const In& w = c.in[1];
    const int64_t k_dim = x.last(), m_dim = w.dim(0), rows = leading_rows(x.shape);
    // Decode the activations once and each weight row once (outer loop over W rows), so the
    // inner dot product is a plain double loop: the 4096x4096 conformance cases stay quick.
    std::vector<double> xd(static_cast<size_t>(rows * k_dim)), wrow(static_cast<size_t>(k_dim));
    for (int64_t i = 0; i < rows * k_dim; ++i) xd[static_cast<size_t>(i)] = x.f(i);
    for (int64_t m = 0; m < m_dim; ++m) {
        for (int64_t k = 0; k < k_dim; ++k) wrow[static_cast<size_t>(k)] = w.f(m * k_dim + k);
        for (int64_t n = 0; n < rows; ++n) {
            const double* xr = xd.data() + n * k_dim;
            double acc = 0.0;
            for (int64_t k = 0; k < k_dim; ++k) acc += xr[k] * wrow[static_cast<size_t>(k)];
            c.out[n * m_dim + m] = static_cast<float>(acc);
        }
    }
}

template <typename F>
void broadcast_binary(const Ctx& c, F op) {
    const In& a = c.in[0];
    const In& b = c.in[1];
    const int64_t nb = b.numel();
    if (nb == 0) return;  // then a is empty too: b's shape is a suffix of a's
    for (int64_t i = 0; i < a.numel(); ++i) c.out[i] = op(a.f(i), b.f(i % nb));
}

template <typename F>
void unary(const Ctx& c, F op) {
    for (int64_t i = 0; i < c.in[0].numel(); ++i) c.out[i] = static_cast<float>(op(static_cast<double>(c.in[0].f(i))));
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

double gelu_tanh(double x) {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// x Phi(x) written with erfc: equal to 0.5 x (1 + erf(x / sqrt 2)) but without the cancellation
// of 1 + erf in the negative tail.
double gelu_erf(double x) { return 0.5 * x * std::erfc(-x / std::numbers::sqrt2); }

void rms_norm(const Ctx& c) {
    const In& x = c.in[0];
    const In* w = c.in.size() > 1 ? &c.in[1] : nullptr;
    const double eps = c.node.fparams[0];
    const int64_t d = x.last(), rows = leading_rows(x.shape);
    if (d == 0) return;
    for (int64_t r = 0; r < rows; ++r) {
        double sum_sq = 0.0;
        for (int64_t j = 0; j < d; ++j) {
            const double v = x.f(r * d + j);
            sum_sq += v * v;
        }
        const double inv = 1.0 / std::sqrt(sum_sq / static_cast<double>(d) + eps);
        for (int64_t j = 0; j < d; ++j) {
            const double scale = w ? static_cast<double>(w->f(j)) : 1.0;
            c.out[r * d + j] = static_cast<float>(static_cast<double>(x.f(r * d + j)) * inv * scale);
        }
    }
}

void layer_norm(const Ctx& c) {
    const In& x = c.in[0];
    const In* w = c.in.size() > 1 ? &c.in[1] : nullptr;
    const In* b = c.in.size() > 2 ? &c.in[2] : nullptr;
    const double eps = c.node.fparams[0];
    const int64_t d = x.last(), rows = leading_rows(x.shape);
    if (d == 0) return;
    for (int64_t r = 0; r < rows; ++r) {
        // Two passes (mean, then squared deviations): exact enough in double even for rows
        // with a large common offset.
        double sum = 0.0;
        for (int64_t j = 0; j < d; ++j) sum += x.f(r * d + j);
        const double mean = sum / static_cast<double>(d);
        double sum_dev = 0.0;
        for (int64_t j = 0; j < d; ++j) {
            const double dev = x.f(r * d + j) - mean;
            sum_dev += dev * dev;
        }
        const double inv = 1.0 / std::sqrt(sum_dev / static_cast<double>(d) + eps);
        for (int64_t j = 0; j < d; ++j) {
            double v = (static_cast<double>(x.f(r * d + j)) - mean) * inv;
            if (w) v *= w->f(j);
            if (b) v += b->f(j);
            c.out[r * d + j] = static_cast<float>(v);
        }
    }
}

void rope(const Ctx& c) {
    const In& x = c.in[0];
    const In& pos = c.in[1];
    const In& inv_freq = c.in[2];
    const int64_t mode = c.node.iparams[0], rot = c.node.iparams[1];
    const int64_t offset = c.node.iparams[2];  // 0 when the caller sets none
    const int64_t n_tok = x.dim(0), heads = x.dim(1), d = x.dim(2), half = rot / 2;
    std::vector<double> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
    for (int64_t n = 0; n < n_tok; ++n) {
        // The shifted position is an integer (exact in int64 and, below 2^53, in double).
        const double p = static_cast<double>(static_cast<int64_t>(pos.i32(n)) + offset);
        for (int64_t j = 0; j < half; ++j) {
            const double angle = p * static_cast<double>(inv_freq.f(j));
            cos_t[static_cast<size_t>(j)] = std::cos(angle);
            sin_t[static_cast<size_t>(j)] = std::sin(angle);
        }
        for (int64_t h = 0; h < heads; ++h) {
            const int64_t base = (n * heads + h) * d;
            for (int64_t j = rot; j < d; ++j) c.out[base + j] = x.f(base + j);
            for (int64_t j = 0; j < half; ++j) {
                // mode 0 pairs element j with j + R/2 (HF rotate_half); mode 1 pairs 2j with 2j+1.
                const int64_t i0 = mode == 0 ? j : 2 * j;
                const int64_t i1 = mode == 0 ? j + half : 2 * j + 1;
                const double a = x.f(base + i0), b = x.f(base + i1);
                const double co = cos_t[static_cast<size_t>(j)], si = sin_t[static_cast<size_t>(j)];
                c.out[base + i0] = static_cast<float>(a * co - b * si);
                c.out[base + i1] = static_cast<float>(b * co + a * si);
            }
        }
    }
}

void swiglu(const Ctx& c) {
    for (int64_t i = 0; i < c.in[0].numel(); ++i)
        c.out[i] = static_cast<float>(silu(c.in[0].f(i)) * static_cast<double>(c.in[1].f(i)));
}

void softmax(const Ctx& c) {
    const In& x = c.in[0];
    const double scale = c.node.fparams[0] == 0.0f ? 1.0 : static_cast<double>(c.node.fparams[0]);
    const int64_t d = x.last(), rows = leading_rows(x.shape);
    std::vector<double> e(static_cast<size_t>(d));
    for (int64_t r = 0; r < rows; ++r) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < d; ++j) mx = std::max(mx, scale * x.f(r * d + j));
        double sum = 0.0;
        for (int64_t j = 0; j < d; ++j) {
            e[static_cast<size_t>(j)] = std::exp(scale * x.f(r * d + j) - mx);
            sum += e[static_cast<size_t>(j)];
        }
        for (int64_t j = 0; j < d; ++j) c.out[r * d + j] = static_cast<float>(e[static_cast<size_t>(j)] / sum);
    }
}

void check_seq_pos(const Ctx& c, const In& seq, const In& pos, int64_t n, int64_t n_seq, int64_t ctx_len) {
    const int64_t s = seq.i32(n), p = pos.i32(n);
    if (s < 0 || s >= n_seq)
        c.fail("row " + std::to_string(n) + ": sequence id " + std::to_string(s) + " is outside 0.." +
               std::to_string(n_seq - 1));
    if (p < 0 || p >= ctx_len)
        c.fail("row " + std::to_string(n) + ": position " + std::to_string(p) + " is outside the cache (0.." +
               std::to_string(ctx_len - 1) + ")");
}

void kv_store(const Ctx& c) {
    const In& cache = c.in[0];
    const In& src = c.in[1];
    const In& seq = c.in[2];
    const In& pos = c.in[3];
    const int64_t n_seq = cache.dim(0), heads = cache.dim(1), ctx_len = cache.dim(2), d = cache.dim(3);
    // Validate every row before writing anything, so a bad node leaves the cache untouched.
    for (int64_t n = 0; n < src.dim(0); ++n) check_seq_pos(c, seq, pos, n, n_seq, ctx_len);
    // The output is the cache. When a caller hands distinct memory for the two, the output first
    // receives the cache's current contents so the result is the same either way.
    if (static_cast<const void*>(c.out) != cache.data)
        std::memmove(c.out, cache.data, static_cast<size_t>(cache.numel()) * sizeof(float));
    for (int64_t n = 0; n < src.dim(0); ++n) {
        const int64_t s = seq.i32(n), p = pos.i32(n);
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t j = 0; j < d; ++j)
                c.out[((s * heads + h) * ctx_len + p) * d + j] = src.f((n * heads + h) * d + j);
    }
}

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
                for (int64_t j = 0; j < d; ++j)
                    dot += static_cast<double>(q.f(q_base + j)) * static_cast<double>(keys[t].k->f(keys[t].row * d + j));
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
                for (int64_t j = 0; j < dv; ++j) acc[static_cast<size_t>(j)] += p * keys[t].v->f(keys[t].row * dv + j);
            }
            for (int64_t j = 0; j < dv; ++j) c.out[(n * hq + h) * dv + j] = static_cast<float>(acc[static_cast<size_t>(j)]);
        }
    }
}

}  // namespace

namespace reference {
void attn_mass(const Ctx& c);  // ops_reference_attn_mass.cpp
}

void reference_compute(const mnemo_node& node) {
    const OpInfo& info = op_info(node.op);
    if (node.n_inputs < 0 || node.n_inputs > MNEMO_MAX_INPUTS)
        throw Error(std::string(info.name) + ": n_inputs " + std::to_string(node.n_inputs) + " is outside 0.." +
                    std::to_string(MNEMO_MAX_INPUTS));
    std::vector<TensorShape> shapes;
    for (int32_t i = 0; i < node.n_inputs; ++i) {
        if (!dtype_valid(node.inputs[i].dtype))
            throw Error(std::string(info.name) + ": input " + std::to_string(i) + " has unknown dtype " +
                        std::to_string(node.inputs[i].dtype));
        shapes.push_back(shape_of(node.inputs[i]));
    }
    const TensorShape expected = infer_output(node.op, shapes, node.iparams, node.fparams);
    const TensorShape got = shape_of(node.output);
    if (!dtype_valid(node.output.dtype) || got.dtype != expected.dtype || got.ndim != expected.ndim ||
        !std::equal(got.shape, got.shape + got.ndim, expected.shape))
        throw Error(std::string(info.name) + ": output is " + (dtype_valid(node.output.dtype) ? got.str() : "?") +
                    ", the op produces " + expected.str());

    Ctx c{node, info.name, {}, nullptr, expected.numel()};
    for (int32_t i = 0; i < node.n_inputs; ++i) {
        if (!node.inputs[i].buffer && shapes[static_cast<size_t>(i)].numel() > 0)
            c.fail("input " + std::to_string(i) + " has no buffer");
        c.in.push_back(In{bytes_at(node.inputs[i]), shapes[static_cast<size_t>(i)].dtype, shapes[static_cast<size_t>(i)]});
    }
    if (!node.output.buffer && c.out_numel > 0) c.fail("output has no buffer");
    c.out = reinterpret_cast<float*>(static_cast<char*>(node.output.buffer) + node.output.offset);

    switch (node.op) {
        case MNEMO_OP_GET_ROWS: return get_rows(c);
        case MNEMO_OP_MATMUL: return matmul(c);
        case MNEMO_OP_ADD: return broadcast_binary(c, [](float a, float b) { return a + b; });
        case MNEMO_OP_MUL: return broadcast_binary(c, [](float a, float b) { return a * b; });
        case MNEMO_OP_SCALE: {
            const double s = node.fparams[0];
            return unary(c, [s](double x) { return s * x; });
        }
        case MNEMO_OP_RMS_NORM: return rms_norm(c);
        case MNEMO_OP_LAYER_NORM: return layer_norm(c);
        case MNEMO_OP_ROPE: return rope(c);
        case MNEMO_OP_SILU: return unary(c, silu);
        case MNEMO_OP_GELU: return node.iparams[0] == 1 ? unary(c, gelu_erf) : unary(c, gelu_tanh);
        case MNEMO_OP_SWIGLU: return swiglu(c);
        case MNEMO_OP_SOFTMAX: return softmax(c);
        case MNEMO_OP_KV_STORE: return kv_store(c);
        case MNEMO_OP_ATTENTION: return attention(c);
        case MNEMO_OP_ARGTOPK: return argtopk(c);
        case MNEMO_OP_TAKE_ALONG: return take_along(c);
        case MNEMO_OP_EMBEDDING_BAG: return embedding_bag(c);
        case MNEMO_OP_PK_SCORE: return pk_score(c);
        case MNEMO_OP_PK_TOPK: return pk_topk(c);
        case MNEMO_OP_PK_PAIR_SCORES: return pk_pair_scores(c);
        case MNEMO_OP_MEM_INDEX: return mem_index(c);
        case MNEMO_OP_PEER_GATE: return peer_gate(c);
        case MNEMO_OP_HIVE: return hive(c);
        case MNEMO_OP_MOE_FFN: return moe_ffn(c);
        case MNEMO_OP_VQ_DECODE: return vq_decode(c);
        case MNEMO_OP_ATTN_MASS: return attn_mass(c);
        default: c.fail("has no reference implementation");
    }
}

}  // namespace mnemo
