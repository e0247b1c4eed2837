// The CPU backend module's contract beyond op results, through its C API: host memory wrapped as a
// read-only buffer (used in place by a node, never written), tensors that overrun their buffer,
// reads past a buffer's end, and shapes it must call unsupported, and
// indices out of range, which are errors (MNEMO_ERR_INVALID, naming the op) and never reads or
// writes past a tensor. Every check runs on the vector and on the portable kernels, with 1, 2 and
// 3 threads each. The ops' results are the conformance harness's (test_backend_ops.cpp; ctest
// runs every case with the same kernels and thread counts); the GPU backends' index errors are
// test_backend_errors.cpp's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "conformance/harness.hpp"
#include "mnemo/ops/op_table.hpp"

namespace {

const mnemo_backend_api* cpu_api() {
    const mnemo::BackendModule* m = mnemo::conformance::harness_registry(MNEMO_BUILD_BIN).find("cpu");
    return m ? m->api : nullptr;
}

// One CPU context with `threads` worker threads, on the portable kernels when `scalar` (the
// module picks its kernels when a context opens: MNEMO_CPU_ISA=scalar), and the buffers of one test.
class Cpu {
public:
    Cpu(int32_t threads, bool scalar) : api_(cpu_api()) {
        if (!api_) return;
        const char* was = std::getenv("MNEMO_CPU_ISA");
        const std::string saved = was ? was : "";
        if (scalar) setenv("MNEMO_CPU_ISA", "scalar", 1);
        mnemo_backend_config cfg{threads};
        mnemo_error err{};
        if (api_->open(0, &cfg, &ctx_, &err) != MNEMO_OK) {
            ADD_FAILURE() << "open with " << threads << " threads: " << err.message;
            ctx_ = nullptr;
        }
        if (scalar) was ? setenv("MNEMO_CPU_ISA", saved.c_str(), 1) : unsetenv("MNEMO_CPU_ISA");
    }
    ~Cpu() {
        if (!ctx_) return;
        for (void* b : buffers_) api_->buffer_free(ctx_, b);
        api_->close(ctx_);
    }
    bool ok() const { return ctx_ != nullptr; }
    const mnemo_backend_api* api() const { return api_; }
    void* ctx() const { return ctx_; }

    // A tensor in a buffer of its own, exactly its size.
    mnemo_tensor upload(mnemo::DType dtype, std::vector<int64_t> shape, const void* data) {
        mnemo_tensor t = describe(nullptr, dtype, shape);
        const uint64_t bytes = shape_of(t).nbytes();
        mnemo_error err{};
        EXPECT_EQ(api_->buffer_alloc(ctx_, bytes > 0 ? bytes : 4, &t.buffer, &err), MNEMO_OK) << err.message;
        buffers_.push_back(t.buffer);
        if (bytes > 0 && data) {
            EXPECT_EQ(api_->buffer_write(ctx_, t.buffer, 0, data, bytes, &err), MNEMO_OK) << err.message;
        }
        return t;
    }
    mnemo_tensor f32(std::vector<int64_t> shape, const std::vector<float>& v) { return upload(mnemo::DType::F32, shape, v.data()); }
    mnemo_tensor i32(std::vector<int64_t> shape, const std::vector<int32_t>& v) { return upload(mnemo::DType::I32, shape, v.data()); }
    mnemo_tensor out(std::vector<int64_t> shape) { return upload(mnemo::DType::F32, shape, nullptr); }

    static mnemo_tensor describe(void* buffer, mnemo::DType dtype, const std::vector<int64_t>& shape) {
        mnemo_tensor t{};
        t.buffer = buffer;
        t.dtype = static_cast<int32_t>(dtype);
        t.ndim = static_cast<int32_t>(shape.size());
        for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
        return t;
    }
    static mnemo::TensorShape shape_of(const mnemo_tensor& t) {
        mnemo::TensorShape s;
        s.dtype = static_cast<mnemo::DType>(t.dtype);
        s.ndim = t.ndim;
        for (int32_t i = 0; i < t.ndim; ++i) s.shape[i] = t.shape[i];
        return s;
    }

    // Prepares and runs a one-node graph; the status, with the error text in `message`.
    mnemo_status run(const mnemo_node& node, std::string& message) {
        mnemo_error err{};
        void* graph = nullptr;
        mnemo_status s = api_->graph_prepare(ctx_, &node, 1, &graph, &err);
        if (s == MNEMO_OK) {
            s = api_->graph_run(ctx_, graph, nullptr, &err);
            api_->graph_release(ctx_, graph);
        }
        message = err.message;
        return s;
    }
    std::vector<float> read(const mnemo_tensor& t) {
        std::vector<float> v(static_cast<size_t>(shape_of(t).numel()));
        mnemo_error err{};
        EXPECT_EQ(api_->buffer_read(ctx_, t.buffer, t.offset, v.data(), v.size() * 4, &err), MNEMO_OK) << err.message;
        return v;
    }

private:
    const mnemo_backend_api* api_;
    void* ctx_ = nullptr;
    std::vector<void*> buffers_;
};

mnemo_node node_of(int32_t op, std::initializer_list<mnemo_tensor> inputs, const mnemo_tensor& out) {
    mnemo_node n{};
    n.op = op;
    for (const mnemo_tensor& t : inputs) n.inputs[n.n_inputs++] = t;
    n.output = out;
    return n;
}

// The node must fail with MNEMO_ERR_INVALID and a message that names the op.
void expect_invalid(Cpu& cpu, const mnemo_node& node, const std::string& what) {
    std::string message;
    EXPECT_EQ(cpu.run(node, message), MNEMO_ERR_INVALID) << what << " was not rejected";
    EXPECT_NE(message.find(mnemo::op_info(node.op).name), std::string::npos) << what << ": the message does not name the op: " << message;
}

// Every check runs on the vector kernels (AVX2 / NEON where the CPU has them) and on the portable
// ones, with 1, 2 and 3 threads each.
struct Config {
    bool scalar;
    int32_t threads;
};
std::vector<Config> configs() {
    std::vector<Config> out;
    for (bool scalar : {false, true})
        for (int32_t threads : {1, 2, 3}) out.push_back({scalar, threads});
    return out;
}
std::string describe(const Config& c) {
    return std::string(c.scalar ? "portable kernels, " : "default kernels, ") + std::to_string(c.threads) + " threads";
}

#define CPU_OR_FAIL(cpu)                                                                    \
    ASSERT_NE(cpu_api(), nullptr) << "the CPU backend module is not in " << MNEMO_BUILD_BIN; \
    ASSERT_TRUE(cpu.ok())

TEST(CpuBackend, WrappedHostMemoryIsReadOnlyAndUsedInPlace) {
    for (const Config& config : configs()) {
        SCOPED_TRACE(describe(config));
        Cpu cpu(config.threads, config.scalar);
        CPU_OR_FAIL(cpu);
        const mnemo_backend_api* api = cpu.api();
        std::vector<float> host(6 * 5);
        for (size_t i = 0; i < host.size(); ++i) host[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
        void* wrapped = nullptr;
        mnemo_error err{};
        ASSERT_EQ(api->buffer_from_host(cpu.ctx(), host.data(), host.size() * 4, &wrapped, &err), MNEMO_OK) << err.message;
        EXPECT_EQ(wrapped, static_cast<void*>(host.data())) << "the CPU backend serves wrapped memory in place";
        const float one = 1.0f;
        EXPECT_NE(api->buffer_write(cpu.ctx(), wrapped, 0, &one, 4, &err), MNEMO_OK) << "a write into a wrapped buffer was accepted";

        // A matmul reads the wrapped weights in place, and gives the reference's answer.
        const std::vector<float> xv = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f};
        const mnemo_tensor x = cpu.f32({1, 5}, xv);
        const mnemo_tensor w = Cpu::describe(wrapped, mnemo::DType::F32, {6, 5});
        const mnemo_tensor y = cpu.out({1, 6});
        std::string message;
        ASSERT_EQ(cpu.run(node_of(MNEMO_OP_MATMUL, {x, w}, y), message), MNEMO_OK) << message;
        std::vector<float> xh = xv, want(6);
        mnemo_node ref = node_of(MNEMO_OP_MATMUL, {Cpu::describe(xh.data(), mnemo::DType::F32, {1, 5}),
                                                   Cpu::describe(host.data(), mnemo::DType::F32, {6, 5})},
                                 Cpu::describe(want.data(), mnemo::DType::F32, {1, 6}));
        mnemo::reference_compute(ref);
        const std::vector<float> got = cpu.read(y);
        for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << "element " << i;

        // Outputs may not land in wrapped memory.
        void* graph = nullptr;
        const mnemo_node into_host = node_of(MNEMO_OP_SCALE, {x}, Cpu::describe(wrapped, mnemo::DType::F32, {1, 5}));
        if (api->graph_prepare(cpu.ctx(), &into_host, 1, &graph, &err) == MNEMO_OK) {
            ADD_FAILURE() << "a graph writing into wrapped memory was accepted";
            api->graph_release(cpu.ctx(), graph);
        }
        api->buffer_free(cpu.ctx(), wrapped);
    }
}

TEST(CpuBackend, TensorsAndReadsStayInsideTheirBuffer) {
    for (const Config& config : configs()) {
        SCOPED_TRACE(describe(config));
        Cpu cpu(config.threads, config.scalar);
        CPU_OR_FAIL(cpu);
        const mnemo_backend_api* api = cpu.api();
        const mnemo_tensor x = cpu.f32({1, 5}, {1, 2, 3, 4, 5});
        mnemo_node overrun = node_of(MNEMO_OP_SCALE, {x}, cpu.out({1, 5}));
        overrun.output.offset = 4;  // the buffer holds exactly 5 floats
        void* graph = nullptr;
        mnemo_error err{};
        if (api->graph_prepare(cpu.ctx(), &overrun, 1, &graph, &err) == MNEMO_OK) {
            ADD_FAILURE() << "a tensor overrunning its buffer was accepted";
            api->graph_release(cpu.ctx(), graph);
        }
        float sink[4];
        EXPECT_NE(api->buffer_read(cpu.ctx(), overrun.output.buffer, 8, sink, 16, &err), MNEMO_OK)
            << "buffer_read past the end was accepted";
        // A shape mismatch is unsupported, not a crash.
        const mnemo_node bad_matmul =
            node_of(MNEMO_OP_MATMUL, {x, cpu.f32({6, 4}, std::vector<float>(24, 1.0f))}, cpu.out({1, 6}));
        EXPECT_EQ(api->supports_node(cpu.ctx(), &bad_matmul), 0) << "a matmul with mismatched K was reported as supported";
    }
}

TEST(CpuBackend, IndicesOutOfRangeAreErrors) {
    for (const Config& config : configs()) {
        SCOPED_TRACE(describe(config));
        Cpu cpu(config.threads, config.scalar);
        CPU_OR_FAIL(cpu);
        std::vector<float> table(12);
        for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i);
        const mnemo_tensor t = cpu.f32({4, 3}, table);  // 4 rows of 3 columns
        for (int32_t bad : {4, -1}) {
            SCOPED_TRACE("index " + std::to_string(bad));
            expect_invalid(cpu, node_of(MNEMO_OP_GET_ROWS, {t, cpu.i32({2}, {0, bad})}, cpu.out({2, 3})), "get_rows");
            expect_invalid(cpu,
                           node_of(MNEMO_OP_EMBEDDING_BAG, {t, cpu.i32({1, 2}, {0, bad}), cpu.f32({1, 2}, {1.0f, 1.0f})}, cpu.out({1, 3})),
                           "embedding_bag");
            const int32_t bad_column = bad == 4 ? 3 : bad;  // of 3 columns
            expect_invalid(cpu, node_of(MNEMO_OP_TAKE_ALONG, {t, cpu.i32({4, 1}, {0, 1, bad_column, 2})}, cpu.out({4, 1})), "take_along");
        }
        // A position at or past the cache's end, for the cache shapes of the conformance cases
        // attention_scattered_* / kv_store_scattered_*: [S, Hkv, C, D] caches, N tokens.
        struct Cache { int64_t s, hkv, c, d, dv, hq, n; };
        for (const Cache& k : {Cache{2, 2, 9, 20, 12, 4, 3}, Cache{1, 1, 40, 64, 64, 1, 1}, Cache{3, 2, 17, 8, 7, 6, 5},
                               Cache{1, 4, 300, 128, 128, 32, 2}}) {
            SCOPED_TRACE("C = " + std::to_string(k.c));
            const mnemo_tensor kc = cpu.f32({k.s, k.hkv, k.c, k.d}, std::vector<float>(static_cast<size_t>(k.s * k.hkv * k.c * k.d), 0.5f));
            const mnemo_tensor vc = cpu.f32({k.s, k.hkv, k.c, k.dv}, std::vector<float>(static_cast<size_t>(k.s * k.hkv * k.c * k.dv), 0.5f));
            std::vector<int32_t> seq;
            for (int64_t i = 0; i < k.n; ++i) seq.push_back(static_cast<int32_t>(i % k.s));
            const mnemo_tensor st = cpu.i32({k.n}, seq);
            const mnemo_tensor past = cpu.i32({k.n}, std::vector<int32_t>(static_cast<size_t>(k.n), static_cast<int32_t>(k.c)));
            const mnemo_tensor q = cpu.f32({k.n, k.hq, k.d}, std::vector<float>(static_cast<size_t>(k.n * k.hq * k.d), 1.0f));
            mnemo_node attn = node_of(MNEMO_OP_ATTENTION, {q, kc, vc, st, past}, cpu.out({k.n, k.hq, k.dv}));
            attn.fparams[0] = 0.125f;
            expect_invalid(cpu, attn, "attention with pos == C");
            const mnemo_tensor newk = cpu.f32({k.n, k.hkv, k.d}, std::vector<float>(static_cast<size_t>(k.n * k.hkv * k.d), 2.0f));
            expect_invalid(cpu, node_of(MNEMO_OP_KV_STORE, {kc, newk, st, past}, kc), "kv_store with pos == C");
        }
    }
}

}  // namespace
