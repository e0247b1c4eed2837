// Self-test of the CPU backend module through its C ABI: every op on awkward sizes (vector tails,
// partial tiles, sizes big enough to be split across threads) against plain double-precision
// loops written here, with 1, 2 and 3 threads. Run it with MNEMO_CPU_ISA=scalar as well to cover
// the portable kernels on a machine that has AVX2 (or NEON). Exit status 0 only when every case
// matches. Arguments name groups of ops to run alone (see main).
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "mnemo/abi/backend_abi.h"
#include "mnemo/ops/dtype.hpp"

namespace {

int g_failures = 0;
int g_checks = 0;

void fail(const std::string& what) {
    ++g_failures;
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
}

std::mt19937 g_rng(12345);

std::vector<float> random_floats(size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(g_rng);
    return v;
}

// Host copy of a tensor's contents plus its dtype/shape, uploaded on demand.
struct HostTensor {
    int32_t dtype = MNEMO_DTYPE_F32;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;

    size_t numel() const {
        size_t n = 1;
        for (int64_t s : shape) n *= static_cast<size_t>(s);
        return n;
    }
    float at(size_t i) const { return mnemo::load_as_f32(bytes.data(), static_cast<mnemo::DType>(dtype), i); }
    std::vector<float> as_floats() const {
        std::vector<float> v(numel());
        for (size_t i = 0; i < v.size(); ++i) v[i] = at(i);
        return v;
    }
};

HostTensor make(int32_t dtype, std::vector<int64_t> shape, const std::vector<float>& values) {
    HostTensor t;
    t.dtype = dtype;
    t.shape = std::move(shape);
    const size_t n = t.numel();
    const size_t es = dtype == MNEMO_DTYPE_F16 || dtype == MNEMO_DTYPE_BF16 ? 2 : 4;
    t.bytes.resize(n * es);
    for (size_t i = 0; i < n; ++i) {
        const float v = values[i];
        if (dtype == MNEMO_DTYPE_F32) {
            std::memcpy(t.bytes.data() + 4 * i, &v, 4);
        } else if (dtype == MNEMO_DTYPE_F16) {
            const uint16_t h = mnemo::f32_to_f16(v);
            std::memcpy(t.bytes.data() + 2 * i, &h, 2);
        } else if (dtype == MNEMO_DTYPE_BF16) {
            const uint16_t h = mnemo::f32_to_bf16(v);
            std::memcpy(t.bytes.data() + 2 * i, &h, 2);
        }
    }
    return t;
}

HostTensor make_i32(std::vector<int64_t> shape, const std::vector<int32_t>& values) {
    HostTensor t;
    t.dtype = MNEMO_DTYPE_I32;
    t.shape = std::move(shape);
    t.bytes.resize(values.size() * 4);
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());  // empty: data() may be null
    return t;
}

class Backend {
public:
    explicit Backend(const mnemo_backend_api* api, int threads) : api_(api) {
        mnemo_backend_config cfg{threads};
        mnemo_error err{};
        if (api_->open(0, &cfg, &ctx_, &err) != MNEMO_OK) {
            std::fprintf(stderr, "open failed: %s\n", err.message);
            std::exit(1);
        }
    }
    ~Backend() {
        for (void* b : buffers_) api_->buffer_free(ctx_, b);
        api_->close(ctx_);
    }
    const mnemo_backend_api* api() const { return api_; }
    void* ctx() const { return ctx_; }

    mnemo_tensor upload(const HostTensor& h) {
        void* buf = nullptr;
        mnemo_error err{};
        if (api_->buffer_alloc(ctx_, h.bytes.size(), &buf, &err) != MNEMO_OK) {
            std::fprintf(stderr, "alloc failed: %s\n", err.message);
            std::exit(1);
        }
        buffers_.push_back(buf);
        if (!h.bytes.empty()) api_->buffer_write(ctx_, buf, 0, h.bytes.data(), h.bytes.size(), &err);
        return describe(buf, h);
    }
    static mnemo_tensor describe(void* buf, const HostTensor& h) {
        mnemo_tensor t{};
        t.buffer = buf;
        t.dtype = h.dtype;
        t.ndim = static_cast<int32_t>(h.shape.size());
        for (size_t i = 0; i < h.shape.size(); ++i) t.shape[i] = h.shape[i];
        return t;
    }
    mnemo_tensor output(std::vector<int64_t> shape) {
        HostTensor h;
        h.shape = std::move(shape);
        // Poison so that elements a kernel forgets to write are caught.
        h = make(MNEMO_DTYPE_F32, h.shape, std::vector<float>(h.numel(), NAN));
        return upload(h);
    }
    std::vector<float> read(const mnemo_tensor& t) {
        size_t n = 1;
        for (int32_t i = 0; i < t.ndim; ++i) n *= static_cast<size_t>(t.shape[i]);
        std::vector<float> v(n);
        mnemo_error err{};
        api_->buffer_read(ctx_, t.buffer, t.offset, v.data(), n * 4, &err);
        return v;
    }
    // Prepares and runs a one-node graph; returns the status and fills err.
    mnemo_status run(const mnemo_node& node, mnemo_error* err) {
        void* graph = nullptr;
        mnemo_status s = api_->graph_prepare(ctx_, &node, 1, &graph, err);
        if (s != MNEMO_OK) return s;
        uint64_t timing = 0;
        s = api_->graph_run(ctx_, graph, &timing, err);
        api_->graph_release(ctx_, graph);
        return s;
    }

private:
    const mnemo_backend_api* api_;
    void* ctx_ = nullptr;
    std::vector<void*> buffers_;
};

mnemo_node make_node(int32_t op, std::initializer_list<mnemo_tensor> inputs, mnemo_tensor out) {
    mnemo_node n{};
    n.op = op;
    for (const mnemo_tensor& t : inputs) n.inputs[n.n_inputs++] = t;
    n.output = out;
    return n;
}

void compare(const std::string& what, const std::vector<float>& got, const std::vector<double>& want, double atol,
             double rtol) {
    ++g_checks;
    if (got.size() != want.size()) {
        fail(what + ": size mismatch");
        return;
    }
    for (size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
        if (!(err <= atol + rtol * std::fabs(want[i]))) {
            fail(what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
                 std::to_string(want[i]));
            return;
        }
    }
}

void run_and_compare(Backend& be, const std::string& what, const mnemo_node& node, const std::vector<double>& want,
                     double atol = 1e-5, double rtol = 1e-5) {
    mnemo_error err{};
    if (be.run(node, &err) != MNEMO_OK) {
        fail(what + ": " + err.message);
        return;
    }
    compare(what, be.read(node.output), want, atol, rtol);
}

const char* dtype_name(int32_t dt) { return dt == 0 ? "f32" : dt == 1 ? "f16" : "bf16"; }

// ----------------------------------------------------------------------------------------------

void test_matmul(Backend& be) {
    struct Case { int64_t n, k, m; };
    const Case cases[] = {{1, 1, 1},  {1, 7, 5},  {1, 8, 4},    {1, 64, 33},   {2, 33, 13},  {3, 17, 7},
                          {4, 16, 6}, {5, 64, 11}, {9, 100, 7}, {13, 1030, 9}, {37, 2051, 23}, {1, 0, 3},
                          {1, 2048, 515}, {70, 40, 130}};
    for (int32_t dt : {MNEMO_DTYPE_F32, MNEMO_DTYPE_F16, MNEMO_DTYPE_BF16}) {
        for (const Case& c : cases) {
            const HostTensor x = make(MNEMO_DTYPE_F32, {c.n, c.k}, random_floats(static_cast<size_t>(c.n * c.k)));
            const HostTensor w = make(dt, {c.m, c.k}, random_floats(static_cast<size_t>(c.m * c.k)));
            const std::vector<float> xf = x.as_floats(), wf = w.as_floats();
            std::vector<double> want(static_cast<size_t>(c.n * c.m));
            for (int64_t n = 0; n < c.n; ++n)
                for (int64_t m = 0; m < c.m; ++m) {
                    double s = 0;
                    for (int64_t k = 0; k < c.k; ++k) s += static_cast<double>(xf[n * c.k + k]) * wf[m * c.k + k];
                    want[static_cast<size_t>(n * c.m + m)] = s;
                }
            const mnemo_node node = make_node(MNEMO_OP_MATMUL, {be.upload(x), be.upload(w)}, be.output({c.n, c.m}));
            const double atol = 2e-6 * static_cast<double>(c.k + 1);
            run_and_compare(be,
                            std::string("matmul ") + dtype_name(dt) + " N=" + std::to_string(c.n) + " K=" +
                                std::to_string(c.k) + " M=" + std::to_string(c.m),
                            node, want, atol, 1e-5);
        }
    }
}

void test_binary(Backend& be) {
    struct Case { std::vector<int64_t> a, b; };
    const Case cases[] = {{{4, 9}, {9}}, {{2, 3, 17}, {3, 17}}, {{5, 1}, {1}}, {{70000}, {70000}}, {{300, 257}, {257}},
                          {{3, 5}, {3, 5}}};
    for (int32_t op : {MNEMO_OP_ADD, MNEMO_OP_MUL}) {
        for (const Case& c : cases) {
            size_t na = 1, nb = 1;
            for (int64_t s : c.a) na *= static_cast<size_t>(s);
            for (int64_t s : c.b) nb *= static_cast<size_t>(s);
            const HostTensor a = make(MNEMO_DTYPE_F32, c.a, random_floats(na));
            const HostTensor b = make(MNEMO_DTYPE_F32, c.b, random_floats(nb));
            std::vector<double> want(na);
            for (size_t i = 0; i < na; ++i) {
                const double x = a.at(i), y = b.at(i % nb);
                want[i] = op == MNEMO_OP_ADD ? x + y : x * y;
            }
            run_and_compare(be, std::string(op == MNEMO_OP_ADD ? "add" : "mul") + " n=" + std::to_string(na) +
                                    " nb=" + std::to_string(nb),
                            make_node(op, {be.upload(a), be.upload(b)}, be.output(c.a)), want);
        }
    }
}

void test_unary(Backend& be) {
    for (size_t n : {1ul, 13ul, 64ul, 40001ul}) {
        const HostTensor x = make(MNEMO_DTYPE_F32, {static_cast<int64_t>(n)}, random_floats(n, -12.0f, 12.0f));
        const HostTensor u = make(MNEMO_DTYPE_F32, {static_cast<int64_t>(n)}, random_floats(n));
        const std::vector<int64_t> shape{static_cast<int64_t>(n)};
        std::vector<double> silu(n), gelu(n), swiglu(n), scale(n);
        for (size_t i = 0; i < n; ++i) {
            const double v = x.at(i);
            silu[i] = v / (1.0 + std::exp(-v));
            gelu[i] = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
            swiglu[i] = silu[i] * u.at(i);
            scale[i] = -0.375 * v;
        }
        const std::string sz = " n=" + std::to_string(n);
        run_and_compare(be, "silu" + sz, make_node(MNEMO_OP_SILU, {be.upload(x)}, be.output(shape)), silu, 1e-6, 1e-5);
        run_and_compare(be, "gelu" + sz, make_node(MNEMO_OP_GELU, {be.upload(x)}, be.output(shape)), gelu, 1e-6, 1e-5);
        run_and_compare(be, "swiglu" + sz, make_node(MNEMO_OP_SWIGLU, {be.upload(x), be.upload(u)}, be.output(shape)),
                        swiglu, 1e-6, 1e-5);
        mnemo_node sc = make_node(MNEMO_OP_SCALE, {be.upload(x)}, be.output(shape));
        sc.fparams[0] = -0.375f;
        run_and_compare(be, "scale" + sz, sc, scale, 0, 1e-6);
    }
}

void test_norms(Backend& be) {
    for (int32_t op : {MNEMO_OP_RMS_NORM, MNEMO_OP_LAYER_NORM}) {
        for (int64_t d : {1, 37, 4096}) {
            for (int n_inputs = 1; n_inputs <= (op == MNEMO_OP_RMS_NORM ? 2 : 3); ++n_inputs) {
                for (int32_t wdt : {MNEMO_DTYPE_F32, MNEMO_DTYPE_F16, MNEMO_DTYPE_BF16}) {
                    const int64_t rows = 9;
                    const HostTensor x = make(MNEMO_DTYPE_F32, {rows, d}, random_floats(static_cast<size_t>(rows * d), -3, 5));
                    const HostTensor w = make(wdt, {d}, random_floats(static_cast<size_t>(d)));
                    const HostTensor b = make(wdt, {d}, random_floats(static_cast<size_t>(d)));
                    const float eps = 1e-5f;
                    std::vector<double> want(static_cast<size_t>(rows * d));
                    for (int64_t r = 0; r < rows; ++r) {
                        double mean = 0, sq = 0;
                        if (op == MNEMO_OP_LAYER_NORM) {
                            for (int64_t i = 0; i < d; ++i) mean += x.at(r * d + i);
                            mean /= d;
                        }
                        for (int64_t i = 0; i < d; ++i) sq += (x.at(r * d + i) - mean) * (x.at(r * d + i) - mean);
                        const double inv = 1.0 / std::sqrt(sq / d + eps);
                        for (int64_t i = 0; i < d; ++i) {
                            double v = (x.at(r * d + i) - mean) * inv;
                            if (n_inputs > 1) v *= w.at(i);
                            if (n_inputs > 2) v += b.at(i);
                            want[r * d + i] = v;
                        }
                    }
                    mnemo_node node = make_node(op, {be.upload(x)}, be.output({rows, d}));
                    if (n_inputs > 1) node.inputs[node.n_inputs++] = be.upload(w);
                    if (n_inputs > 2) node.inputs[node.n_inputs++] = be.upload(b);
                    node.fparams[0] = eps;
                    run_and_compare(be,
                                    std::string(op == MNEMO_OP_RMS_NORM ? "rms_norm" : "layer_norm") + " D=" +
                                        std::to_string(d) + " inputs=" + std::to_string(n_inputs) + " " + dtype_name(wdt),
                                    node, want, 1e-5, 1e-4);
                    if (n_inputs == 1) break;  // weight dtype is irrelevant without weights
                }
            }
        }
    }
}

void test_softmax(Backend& be) {
    for (int64_t d : {1, 13, 1000}) {
        for (float scale : {0.0f, 0.5f, -2.0f}) {
            const int64_t rows = 33;
            const HostTensor x = make(MNEMO_DTYPE_F32, {rows, d}, random_floats(static_cast<size_t>(rows * d), -20, 20));
            const double s = scale == 0.0f ? 1.0 : scale;
            std::vector<double> want(static_cast<size_t>(rows * d));
            for (int64_t r = 0; r < rows; ++r) {
                double mx = -INFINITY, sum = 0;
                for (int64_t i = 0; i < d; ++i) mx = std::max(mx, s * x.at(r * d + i));
                for (int64_t i = 0; i < d; ++i) sum += std::exp(s * x.at(r * d + i) - mx);
                for (int64_t i = 0; i < d; ++i) want[r * d + i] = std::exp(s * x.at(r * d + i) - mx) / sum;
            }
            mnemo_node node = make_node(MNEMO_OP_SOFTMAX, {be.upload(x)}, be.output({rows, d}));
            node.fparams[0] = scale;
            run_and_compare(be, "softmax D=" + std::to_string(d) + " scale=" + std::to_string(scale), node, want, 1e-7,
                            1e-5);
        }
    }
}

void test_rope(Backend& be) {
    struct Case { int64_t n, h, d, r; int mode; };
    const Case cases[] = {{3, 5, 20, 12, 0}, {3, 5, 20, 12, 1}, {2, 4, 64, 64, 0}, {2, 4, 64, 64, 1}, {1, 1, 6, 2, 0},
                          {7, 3, 128, 96, 0}};
    for (const Case& c : cases) {
        const HostTensor x = make(MNEMO_DTYPE_F32, {c.n, c.h, c.d}, random_floats(static_cast<size_t>(c.n * c.h * c.d)));
        std::vector<int32_t> pos;
        for (int64_t i = 0; i < c.n; ++i) pos.push_back(static_cast<int32_t>(i * 977 + 3));
        std::vector<float> inv(static_cast<size_t>(c.r / 2));
        for (size_t j = 0; j < inv.size(); ++j) inv[j] = static_cast<float>(std::pow(10000.0, -2.0 * j / c.r));
        const HostTensor p = make_i32({c.n}, pos);
        const HostTensor f = make(MNEMO_DTYPE_F32, {c.r / 2}, inv);
        std::vector<double> want(x.numel());
        const int64_t half = c.r / 2;
        for (int64_t n = 0; n < c.n; ++n)
            for (int64_t h = 0; h < c.h; ++h) {
                const size_t base = static_cast<size_t>((n * c.h + h) * c.d);
                for (int64_t i = 0; i < c.d; ++i) want[base + i] = x.at(base + i);
                for (int64_t j = 0; j < half; ++j) {
                    const double a = static_cast<double>(pos[n]) * inv[j];
                    const size_t i0 = base + (c.mode == 0 ? j : 2 * j);
                    const size_t i1 = base + (c.mode == 0 ? j + half : 2 * j + 1);
                    const double x0 = x.at(i0), x1 = x.at(i1);
                    want[i0] = x0 * std::cos(a) - x1 * std::sin(a);
                    want[i1] = x0 * std::sin(a) + x1 * std::cos(a);
                }
            }
        mnemo_node node = make_node(MNEMO_OP_ROPE, {be.upload(x), be.upload(p), be.upload(f)}, be.output({c.n, c.h, c.d}));
        node.iparams[0] = c.mode;
        node.iparams[1] = c.r;
        run_and_compare(be, "rope mode=" + std::to_string(c.mode) + " D=" + std::to_string(c.d) + " R=" + std::to_string(c.r),
                        node, want, 1e-6, 1e-5);
    }
}

void test_get_rows(Backend& be) {
    for (int32_t dt : {MNEMO_DTYPE_F32, MNEMO_DTYPE_F16, MNEMO_DTYPE_BF16}) {
        for (int64_t c : {1, 13, 4099}) {
            const int64_t rows = 11;
            const HostTensor t = make(dt, {rows, c}, random_floats(static_cast<size_t>(rows * c)));
            const std::vector<int32_t> idx{3, 0, 10, 3, 7, 1, 2, 9, 9};
            const HostTensor ix = make_i32({static_cast<int64_t>(idx.size())}, idx);
            std::vector<double> want;
            for (int32_t i : idx)
                for (int64_t j = 0; j < c; ++j) want.push_back(t.at(static_cast<size_t>(i * c + j)));
            const mnemo_node node = make_node(MNEMO_OP_GET_ROWS, {be.upload(t), be.upload(ix)},
                                              be.output({static_cast<int64_t>(idx.size()), c}));
            run_and_compare(be, std::string("get_rows ") + dtype_name(dt) + " C=" + std::to_string(c), node, want, 0, 0);
        }
    }
    // An index outside the table is an error, not a read past it.
    const HostTensor t = make(MNEMO_DTYPE_F32, {4, 3}, random_floats(12));
    for (int32_t bad : {4, -1}) {
        const HostTensor ix = make_i32({2}, {0, bad});
        mnemo_error err{};
        ++g_checks;
        if (be.run(make_node(MNEMO_OP_GET_ROWS, {be.upload(t), be.upload(ix)}, be.output({2, 3})), &err) != MNEMO_ERR_INVALID)
            fail("get_rows with index " + std::to_string(bad) + " was not rejected");
    }
}

// The memory-layer ops. EMBEDDING_BAG at decode (one bag, wide rows: the columns are split over
// threads) and batched; ARGTOPK's indices must match a stable sort exactly; bad indices of
// TAKE_ALONG and EMBEDDING_BAG are errors.
void test_memory_ops(Backend& be) {
    struct Bag { int64_t r, c, n, m; };
    for (int32_t dt : {MNEMO_DTYPE_F32, MNEMO_DTYPE_F16, MNEMO_DTYPE_BF16}) {
        for (const Bag& b : {Bag{300, 4099, 1, 32}, Bag{50, 37, 5, 9}, Bag{7, 64, 2, 0}, Bag{1000, 1030, 3, 40}}) {
            const HostTensor t = make(dt, {b.r, b.c}, random_floats(static_cast<size_t>(b.r * b.c)));
            std::vector<int32_t> idx;
            for (int64_t i = 0; i < b.n * b.m; ++i) idx.push_back(static_cast<int32_t>(g_rng() % static_cast<uint32_t>(b.r)));
            const HostTensor ix = make_i32({b.n, b.m}, idx);
            const HostTensor w = make(MNEMO_DTYPE_F32, {b.n, b.m}, random_floats(static_cast<size_t>(b.n * b.m)));
            std::vector<double> want(static_cast<size_t>(b.n * b.c), 0.0);
            for (int64_t n = 0; n < b.n; ++n)
                for (int64_t j = 0; j < b.m; ++j)
                    for (int64_t c = 0; c < b.c; ++c)
                        want[static_cast<size_t>(n * b.c + c)] +=
                            static_cast<double>(w.at(static_cast<size_t>(n * b.m + j))) *
                            t.at(static_cast<size_t>(idx[static_cast<size_t>(n * b.m + j)] * b.c + c));
            const mnemo_node node = make_node(MNEMO_OP_EMBEDDING_BAG, {be.upload(t), be.upload(ix), be.upload(w)},
                                              be.output({b.n, b.c}));
            run_and_compare(be, std::string("embedding_bag ") + dtype_name(dt) + " C=" + std::to_string(b.c) +
                                    " N=" + std::to_string(b.n) + " m=" + std::to_string(b.m),
                            node, want, 1e-5, 1e-5);
        }
    }
    // ARGTOPK: quantised scores (ties everywhere), both the insertion path (k <= 64) and the sort path.
    for (int64_t k : {1, 5, 64, 65, 700}) {
        const int64_t rows = 9, d = 700;
        std::vector<float> x = random_floats(static_cast<size_t>(rows * d), -4.0f, 4.0f);
        for (float& v : x) v = std::round(v);
        const HostTensor xt = make(MNEMO_DTYPE_F32, {rows, d}, x);
        std::vector<int32_t> want;
        for (int64_t r = 0; r < rows; ++r) {
            std::vector<int32_t> order(static_cast<size_t>(d));
            for (int64_t j = 0; j < d; ++j) order[static_cast<size_t>(j)] = static_cast<int32_t>(j);
            std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
                return x[static_cast<size_t>(r * d + a)] > x[static_cast<size_t>(r * d + b)];
            });
            want.insert(want.end(), order.begin(), order.begin() + k);
        }
        const mnemo_tensor out = be.upload(make_i32({rows, k}, std::vector<int32_t>(static_cast<size_t>(rows * k), -1)));
        mnemo_node node = make_node(MNEMO_OP_ARGTOPK, {be.upload(xt)}, out);
        node.iparams[0] = k;
        mnemo_error err{};
        ++g_checks;
        if (be.run(node, &err) != MNEMO_OK) {
            fail(std::string("argtopk: ") + err.message);
            continue;
        }
        const std::vector<float> raw = be.read(out);
        std::vector<int32_t> got(raw.size());
        std::memcpy(got.data(), raw.data(), raw.size() * 4);
        if (got != want) fail("argtopk k=" + std::to_string(k) + ": indices differ from a stable sort");
    }
    // Out-of-range indices are errors, never reads past the tensor.
    const HostTensor t = make(MNEMO_DTYPE_F32, {4, 3}, random_floats(12));
    for (int32_t bad : {4, -1}) {
        const HostTensor ix = make_i32({1, 2}, {0, bad});
        const HostTensor w = make(MNEMO_DTYPE_F32, {1, 2}, {1.0f, 1.0f});
        mnemo_error err{};
        ++g_checks;
        if (be.run(make_node(MNEMO_OP_EMBEDDING_BAG, {be.upload(t), be.upload(ix), be.upload(w)}, be.output({1, 3})), &err) !=
            MNEMO_ERR_INVALID)
            fail("embedding_bag with index " + std::to_string(bad) + " was not rejected");
        const HostTensor tix = make_i32({4, 1}, {0, 1, bad == 4 ? 3 : bad, 2});
        ++g_checks;
        if (be.run(make_node(MNEMO_OP_TAKE_ALONG, {be.upload(t), be.upload(tix)}, be.output({4, 1})), &err) !=
            MNEMO_ERR_INVALID)
            fail("take_along with index " + std::to_string(bad == 4 ? 3 : bad) + " was not rejected");
    }
}

// PK_SCORE (product-key sub-key scores, with and without the key norm), PEER_GATE and HIVE: the
// memory-layer ops with vector kernels of their own (AVX2 / NEON), on shapes that reach every
// path: decode with the key norm, vector ranks (1, 2, 4, 8) and a rank that is not (3), K*Rk tails,
// shared queries, the packed many-token path (N >= 16), and f32 / f16 / bf16 weights.
void test_product_key_ops(Backend& be) {
    struct Score { int64_t n, heads, share, nk, k, rank; bool norm; };
    const Score cases[] = {{1, 2, 1, 37, 16, 2, true}, {1, 1, 1, 19, 13, 4, false}, {3, 2, 2, 40, 8, 1, true},
                           {5, 1, 1, 33, 24, 8, false}, {2, 1, 1, 9, 7, 3, true},   {1, 1, 1, 70, 32, 8, true},
                           {20, 2, 1, 45, 16, 2, true}, {17, 1, 1, 70, 9, 1, false}};
    for (int32_t dt : {MNEMO_DTYPE_F32, MNEMO_DTYPE_F16, MNEMO_DTYPE_BF16}) {
        for (const Score& c : cases) {
            const int64_t nq = (c.heads + c.share - 1) / c.share, banks = 2 * c.heads;
            const HostTensor q = make(MNEMO_DTYPE_F32, {c.n, nq, 2, c.k}, random_floats(static_cast<size_t>(c.n * nq * 2 * c.k)));
            const HostTensor keys = make(dt, {banks, c.nk, c.k, c.rank}, random_floats(static_cast<size_t>(banks * c.nk * c.k * c.rank)));
            const HostTensor gain = make(dt, {c.k}, random_floats(static_cast<size_t>(c.k), 0.5f, 1.5f));
            const double eps = 1e-6;
            std::vector<double> want(static_cast<size_t>(c.n * banks * c.nk * c.rank));
            for (int64_t n = 0; n < c.n; ++n)
                for (int64_t b = 0; b < banks; ++b)
                    for (int64_t j = 0; j < c.nk; ++j)
                        for (int64_t r = 0; r < c.rank; ++r) {
                            auto key = [&](int64_t d) { return static_cast<double>(keys.at(static_cast<size_t>(((b * c.nk + j) * c.k + d) * c.rank + r))); };
                            double scale = 1.0, acc = 0.0;
                            if (c.norm) {
                                double ss = 0.0;
                                for (int64_t d = 0; d < c.k; ++d) ss += key(d) * key(d);
                                scale = 1.0 / std::sqrt(ss / static_cast<double>(c.k) + eps);
                            }
                            const int64_t q0 = ((n * nq + (b / 2) / c.share) * 2 + b % 2) * c.k;
                            for (int64_t d = 0; d < c.k; ++d)
                                acc += static_cast<double>(q.at(static_cast<size_t>(q0 + d))) * key(d) *
                                       (c.norm ? scale * gain.at(static_cast<size_t>(d)) : 1.0);
                            want[static_cast<size_t>(((n * banks + b) * c.nk + j) * c.rank + r)] = acc;
                        }
            mnemo_node node = c.norm ? make_node(MNEMO_OP_PK_SCORE, {be.upload(q), be.upload(keys), be.upload(gain)},
                                                 be.output({c.n, banks, c.nk, c.rank}))
                                     : make_node(MNEMO_OP_PK_SCORE, {be.upload(q), be.upload(keys)}, be.output({c.n, banks, c.nk, c.rank}));
            node.iparams[0] = c.heads;
            node.iparams[1] = c.share;
            node.fparams[0] = static_cast<float>(eps);
            run_and_compare(be, std::string("pk_score ") + dtype_name(dt) + " N=" + std::to_string(c.n) + " H=" + std::to_string(c.heads) +
                                    " Nk=" + std::to_string(c.nk) + " K=" + std::to_string(c.k) + " Rk=" + std::to_string(c.rank) +
                                    (c.norm ? " norm" : ""),
                            node, want, 1e-4, 1e-4);
        }
    }

    // PEER_GATE: out[n, j, e] = act(table[idx % R] . x[n]) * s[n, j, e].
    struct Gate { int64_t rows, width, n, m, per_entry, act; };
    for (int32_t dt : {MNEMO_DTYPE_F32, MNEMO_DTYPE_F16, MNEMO_DTYPE_BF16}) {
        for (const Gate& g : {Gate{50, 37, 3, 5, 1, 0}, Gate{300, 256, 1, 16, 4, 2}, Gate{20, 3, 2, 7, 1, 1}, Gate{64, 100, 4, 9, 2, 0}}) {
            const HostTensor table = make(dt, {g.rows, g.width}, random_floats(static_cast<size_t>(g.rows * g.width)));
            std::vector<int32_t> idx;
            for (int64_t i = 0; i < g.n * g.m; ++i) idx.push_back(static_cast<int32_t>(g_rng() % static_cast<uint32_t>(3 * g.rows)));
            const HostTensor ix = make_i32({g.n, g.m}, idx);
            const HostTensor x = make(MNEMO_DTYPE_F32, {g.n, g.width}, random_floats(static_cast<size_t>(g.n * g.width)));
            const std::vector<int64_t> sshape = g.per_entry == 1 ? std::vector<int64_t>{g.n, g.m} : std::vector<int64_t>{g.n, g.m, g.per_entry};
            const HostTensor sc = make(MNEMO_DTYPE_F32, sshape, random_floats(static_cast<size_t>(g.n * g.m * g.per_entry)));
            std::vector<double> want(static_cast<size_t>(g.n * g.m * g.per_entry));
            for (int64_t e = 0; e < g.n * g.m; ++e) {
                const int64_t row = idx[static_cast<size_t>(e)] % g.rows, n = e / g.m;
                double dot = 0.0;
                for (int64_t d = 0; d < g.width; ++d)
                    dot += static_cast<double>(table.at(static_cast<size_t>(row * g.width + d))) * x.at(static_cast<size_t>(n * g.width + d));
                const double a = g.act == 1   ? 0.5 * dot * (1.0 + std::erf(dot / std::sqrt(2.0)))
                                 : g.act == 2 ? 0.5 * dot * (1.0 + std::tanh(0.7978845608028654 * (dot + 0.044715 * dot * dot * dot)))
                                              : dot;
                for (int64_t k = 0; k < g.per_entry; ++k)
                    want[static_cast<size_t>(e * g.per_entry + k)] = a * sc.at(static_cast<size_t>(e * g.per_entry + k));
            }
            mnemo_node node = make_node(MNEMO_OP_PEER_GATE, {be.upload(table), be.upload(ix), be.upload(x), be.upload(sc)}, be.output(sshape));
            node.iparams[0] = g.act;
            run_and_compare(be, std::string("peer_gate ") + dtype_name(dt) + " P=" + std::to_string(g.width) + " N=" + std::to_string(g.n) +
                                    " m=" + std::to_string(g.m) + " act=" + std::to_string(g.act),
                            node, want, 1e-4, 1e-4);
        }
    }

    // HIVE: out[n, h] = (sum_j w[n, h, j] bank[idx[n, h, j]]) proj[h].
    struct Hive { int64_t rows, rank, n, heads, m, dh; };
    for (int32_t dt : {MNEMO_DTYPE_F32, MNEMO_DTYPE_F16, MNEMO_DTYPE_BF16}) {
        for (const Hive& h : {Hive{40, 37, 2, 3, 5, 19}, Hive{200, 64, 1, 4, 16, 64}, Hive{9, 5, 3, 1, 2, 3}}) {
            const HostTensor bank = make(dt, {h.rows, h.rank}, random_floats(static_cast<size_t>(h.rows * h.rank)));
            std::vector<int32_t> idx;
            for (int64_t i = 0; i < h.n * h.heads * h.m; ++i) idx.push_back(static_cast<int32_t>(g_rng() % static_cast<uint32_t>(h.rows)));
            const HostTensor ix = make_i32({h.n, h.heads, h.m}, idx);
            const HostTensor w = make(MNEMO_DTYPE_F32, {h.n, h.heads, h.m}, random_floats(static_cast<size_t>(h.n * h.heads * h.m)));
            const HostTensor proj = make(dt, {h.heads, h.rank, h.dh}, random_floats(static_cast<size_t>(h.heads * h.rank * h.dh)));
            std::vector<double> want(static_cast<size_t>(h.n * h.heads * h.dh), 0.0);
            for (int64_t n = 0; n < h.n; ++n)
                for (int64_t hd = 0; hd < h.heads; ++hd) {
                    std::vector<double> latent(static_cast<size_t>(h.rank), 0.0);
                    for (int64_t j = 0; j < h.m; ++j) {
                        const int64_t e = (n * h.heads + hd) * h.m + j;
                        for (int64_t k = 0; k < h.rank; ++k)
                            latent[static_cast<size_t>(k)] += static_cast<double>(w.at(static_cast<size_t>(e))) *
                                                              bank.at(static_cast<size_t>(idx[static_cast<size_t>(e)] * h.rank + k));
                    }
                    for (int64_t d = 0; d < h.dh; ++d)
                        for (int64_t k = 0; k < h.rank; ++k)
                            want[static_cast<size_t>((n * h.heads + hd) * h.dh + d)] +=
                                latent[static_cast<size_t>(k)] * proj.at(static_cast<size_t>((hd * h.rank + k) * h.dh + d));
                }
            const mnemo_node node = make_node(MNEMO_OP_HIVE, {be.upload(bank), be.upload(ix), be.upload(w), be.upload(proj)},
                                              be.output({h.n, h.heads, h.dh}));
            run_and_compare(be, std::string("hive ") + dtype_name(dt) + " r=" + std::to_string(h.rank) + " H=" + std::to_string(h.heads) +
                                    " m=" + std::to_string(h.m) + " Dh=" + std::to_string(h.dh),
                            node, want, 1e-4, 1e-4);
        }
    }
}

void test_kv_attention(Backend& be) {
    struct Case { int64_t s, hkv, c, d, dv, hq, n; };
    const Case cases[] = {{2, 2, 9, 20, 12, 4, 3}, {1, 1, 40, 64, 64, 1, 1}, {3, 2, 17, 8, 7, 6, 5}, {1, 4, 300, 128, 128, 32, 2}};
    for (const Case& cs : cases) {
        const HostTensor kc = make(MNEMO_DTYPE_F32, {cs.s, cs.hkv, cs.c, cs.d}, random_floats(static_cast<size_t>(cs.s * cs.hkv * cs.c * cs.d)));
        const HostTensor vc = make(MNEMO_DTYPE_F32, {cs.s, cs.hkv, cs.c, cs.dv}, random_floats(static_cast<size_t>(cs.s * cs.hkv * cs.c * cs.dv)));
        const HostTensor newk = make(MNEMO_DTYPE_F32, {cs.n, cs.hkv, cs.d}, random_floats(static_cast<size_t>(cs.n * cs.hkv * cs.d)));
        std::vector<int32_t> seq, pos;
        for (int64_t i = 0; i < cs.n; ++i) {
            seq.push_back(static_cast<int32_t>(i % cs.s));
            pos.push_back(static_cast<int32_t>((i * 5 + 2) % cs.c));
        }
        const HostTensor sq = make_i32({cs.n}, seq), ps = make_i32({cs.n}, pos);
        const mnemo_tensor kt = be.upload(kc), vt = be.upload(vc), st = be.upload(sq), pt = be.upload(ps);

        // KV_STORE into the k cache, then compare the whole cache.
        std::vector<float> kexp = kc.as_floats();
        for (int64_t i = 0; i < cs.n; ++i)
            for (int64_t h = 0; h < cs.hkv; ++h)
                for (int64_t j = 0; j < cs.d; ++j)
                    kexp[static_cast<size_t>(((seq[i] * cs.hkv + h) * cs.c + pos[i]) * cs.d + j)] =
                        newk.at(static_cast<size_t>((i * cs.hkv + h) * cs.d + j));
        const mnemo_node store = make_node(MNEMO_OP_KV_STORE, {kt, be.upload(newk), st, pt}, kt);
        run_and_compare(be, "kv_store C=" + std::to_string(cs.c), store, std::vector<double>(kexp.begin(), kexp.end()), 0, 0);

        const HostTensor q = make(MNEMO_DTYPE_F32, {cs.n, cs.hq, cs.d}, random_floats(static_cast<size_t>(cs.n * cs.hq * cs.d)));
        const float scale = 1.0f / std::sqrt(static_cast<float>(cs.d));
        std::vector<double> want(static_cast<size_t>(cs.n * cs.hq * cs.dv));
        const std::vector<float> vf = vc.as_floats();
        for (int64_t i = 0; i < cs.n; ++i)
            for (int64_t h = 0; h < cs.hq; ++h) {
                const int64_t g = h / (cs.hq / cs.hkv);
                std::vector<double> sc(static_cast<size_t>(pos[i] + 1));
                double mx = -INFINITY, sum = 0;
                for (int64_t t = 0; t <= pos[i]; ++t) {
                    double s = 0;
                    for (int64_t j = 0; j < cs.d; ++j)
                        s += static_cast<double>(q.at(static_cast<size_t>((i * cs.hq + h) * cs.d + j))) *
                             kexp[static_cast<size_t>(((seq[i] * cs.hkv + g) * cs.c + t) * cs.d + j)];
                    sc[t] = s * scale;
                    mx = std::max(mx, sc[t]);
                }
                for (double& s : sc) { s = std::exp(s - mx); sum += s; }
                for (int64_t j = 0; j < cs.dv; ++j) {
                    double acc = 0;
                    for (int64_t t = 0; t <= pos[i]; ++t)
                        acc += sc[t] * vf[static_cast<size_t>(((seq[i] * cs.hkv + g) * cs.c + t) * cs.dv + j)];
                    want[static_cast<size_t>((i * cs.hq + h) * cs.dv + j)] = acc / sum;
                }
            }
        mnemo_node attn = make_node(MNEMO_OP_ATTENTION, {be.upload(q), kt, vt, st, pt}, be.output({cs.n, cs.hq, cs.dv}));
        attn.fparams[0] = scale;
        run_and_compare(be, "attention Hq=" + std::to_string(cs.hq) + " Hkv=" + std::to_string(cs.hkv) + " C=" +
                                std::to_string(cs.c),
                        attn, want, 1e-5, 1e-4);

        // Positions outside the cache are rejected by both ops.
        const HostTensor badp = make_i32({cs.n}, std::vector<int32_t>(static_cast<size_t>(cs.n), static_cast<int32_t>(cs.c)));
        mnemo_node bad_attn = attn;
        bad_attn.inputs[4] = be.upload(badp);
        mnemo_error err{};
        ++g_checks;
        if (be.run(bad_attn, &err) != MNEMO_ERR_INVALID) fail("attention with pos == C was not rejected");
        mnemo_node bad_store = store;
        bad_store.inputs[3] = bad_attn.inputs[4];
        ++g_checks;
        if (be.run(bad_store, &err) != MNEMO_ERR_INVALID) fail("kv_store with pos == C was not rejected");
    }
}

void test_buffers(Backend& be) {
    const mnemo_backend_api* api = be.api();
    // A wrapped host buffer serves as a weight in place and refuses writes.
    std::vector<float> host = random_floats(6 * 5);
    void* wrapped = nullptr;
    mnemo_error err{};
    ++g_checks;
    if (api->buffer_from_host(be.ctx(), host.data(), host.size() * 4, &wrapped, &err) != MNEMO_OK || wrapped != host.data())
        fail(std::string("buffer_from_host: ") + err.message);
    const float one = 1.0f;
    ++g_checks;
    if (api->buffer_write(be.ctx(), wrapped, 0, &one, 4, &err) == MNEMO_OK) fail("write into a wrapped buffer was accepted");
    const HostTensor w = make(MNEMO_DTYPE_F32, {6, 5}, host);
    const HostTensor x = make(MNEMO_DTYPE_F32, {1, 5}, random_floats(5));
    std::vector<double> want(6);
    for (int m = 0; m < 6; ++m)
        for (int k = 0; k < 5; ++k) want[m] += static_cast<double>(x.at(k)) * host[m * 5 + k];
    run_and_compare(be, "matmul with wrapped weights", make_node(MNEMO_OP_MATMUL, {be.upload(x), Backend::describe(wrapped, w)}, be.output({1, 6})), want);
    // Outputs may not land in wrapped memory, tensors may not overrun their buffer.
    void* graph = nullptr;
    mnemo_node into_host = make_node(MNEMO_OP_SCALE, {be.upload(x)}, Backend::describe(wrapped, x));
    ++g_checks;
    if (api->graph_prepare(be.ctx(), &into_host, 1, &graph, &err) == MNEMO_OK) {
        fail("graph writing into wrapped memory was accepted");
        api->graph_release(be.ctx(), graph);
    }
    mnemo_node overrun = make_node(MNEMO_OP_SCALE, {be.upload(x)}, be.output({1, 5}));
    overrun.output.offset = 4;
    ++g_checks;
    if (api->graph_prepare(be.ctx(), &overrun, 1, &graph, &err) == MNEMO_OK) {
        fail("tensor overrunning its buffer was accepted");
        api->graph_release(be.ctx(), graph);
    }
    ++g_checks;
    if (api->buffer_read(be.ctx(), overrun.output.buffer, 8, host.data(), 16, &err) == MNEMO_OK)
        fail("buffer_read past the end was accepted");
    api->buffer_free(be.ctx(), wrapped);
    // Shape mismatch is unsupported, not a crash.
    mnemo_node badmm = make_node(MNEMO_OP_MATMUL, {be.upload(x), be.upload(make(MNEMO_DTYPE_F32, {6, 4}, random_floats(24)))}, be.output({1, 6}));
    ++g_checks;
    if (api->supports_node(be.ctx(), &badmm) != 0) fail("matmul with mismatched K reported as supported");
}

}  // namespace

int main(int argc, char** argv) {
    void* lib = dlopen(MNEMO_CPU_MODULE_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        std::fprintf(stderr, "cannot load %s: %s\n", MNEMO_CPU_MODULE_PATH, dlerror());
        return 1;
    }
    auto entry = reinterpret_cast<mnemo_backend_entry_fn>(dlsym(lib, MNEMO_BACKEND_ENTRY_SYMBOL));
    const mnemo_backend_api* api = entry ? entry() : nullptr;
    if (!api || api->abi_version != MNEMO_ABI_VERSION) {
        std::fprintf(stderr, "bad module entry\n");
        return 1;
    }
    mnemo_device_info info{};
    if (api->device_count() != 1 || api->device_info(0, &info) != MNEMO_OK) {
        std::fprintf(stderr, "device info failed\n");
        return 1;
    }
    std::printf("device: %s (%s)\n", info.name, info.description);
    // Groups named on the command line run alone (all by default): under an emulator (qemu-user,
    // scripts/edge-arm64.sh) the whole self-test takes minutes, and a kernel change needs only its group.
    const std::pair<const char*, void (*)(Backend&)> groups[] = {
        {"matmul", test_matmul},   {"binary", test_binary},           {"unary", test_unary},
        {"norms", test_norms},     {"softmax", test_softmax},         {"rope", test_rope},
        {"get_rows", test_get_rows}, {"memory", test_memory_ops},     {"product_keys", test_product_key_ops},
        {"kv_attention", test_kv_attention}, {"buffers", test_buffers}};
    std::vector<std::string> wanted(argv + 1, argv + argc);
    for (const std::string& w : wanted) {
        bool known = false;
        for (const auto& g : groups) known = known || w == g.first;
        if (!known) {
            std::fprintf(stderr, "unknown group '%s'; groups:", w.c_str());
            for (const auto& g : groups) std::fprintf(stderr, " %s", g.first);
            std::fprintf(stderr, "\n");
            return 2;
        }
    }
    for (int threads : {1, 2, 3}) {
        Backend be(api, threads);
        for (const auto& g : groups)
            if (wanted.empty() || std::find(wanted.begin(), wanted.end(), g.first) != wanted.end()) g.second(be);
        std::printf("threads=%d: %d checks, %d failures so far\n", threads, g_checks, g_failures);
        std::fflush(stdout);
    }
    std::printf("%s: %d checks, %d failures\n", g_failures ? "FAILED" : "OK", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
