// Product-key ops (PK_SCORE, PK_TOPK, PK_PAIR_SCORES) beyond the conformance cases: a hand-worked
// example on the reference and on the CPU backend, and the failures both must report clearly
// (an out-of-range pair index, shapes and parameters the op table rejects).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "mnemo/abi/backend_abi.h"
#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/modules/registry.hpp"

namespace {

using mnemo::DType;
using mnemo::TensorShape;

struct HostTensor {
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
};

HostTensor f32(std::vector<int64_t> shape, std::vector<float> v) {
    HostTensor t{DType::F32, std::move(shape), std::vector<uint8_t>(v.size() * 4)};
    std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
    return t;
}
HostTensor i32(std::vector<int64_t> shape, std::vector<int32_t> v) {
    HostTensor t{DType::I32, std::move(shape), std::vector<uint8_t>(v.size() * 4)};
    std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
    return t;
}

mnemo_tensor tensor_of(void* buffer, const HostTensor& t) {
    mnemo_tensor m{};
    m.buffer = buffer;
    m.dtype = static_cast<int32_t>(t.dtype);
    m.ndim = static_cast<int32_t>(t.shape.size());
    for (size_t i = 0; i < t.shape.size(); ++i) m.shape[i] = t.shape[i];
    return m;
}

TensorShape shape_of(const HostTensor& t) {
    TensorShape s;
    s.dtype = t.dtype;
    s.ndim = static_cast<int32_t>(t.shape.size());
    for (size_t i = 0; i < t.shape.size(); ++i) s.shape[i] = t.shape[i];
    return s;
}

struct Result {
    std::string error;  // "" on success
    std::vector<uint8_t> out;
};

// The node on the naive reference (host memory), output shape from the op table.
Result run_reference(int32_t op, std::vector<HostTensor> in, std::vector<int64_t> ip) {
    Result r;
    try {
        std::vector<TensorShape> shapes;
        for (const HostTensor& t : in) shapes.push_back(shape_of(t));
        const TensorShape os = mnemo::infer_output(op, shapes, ip, std::vector<float>{0.0f});
        HostTensor out{os.dtype, std::vector<int64_t>(os.shape, os.shape + os.ndim), std::vector<uint8_t>(os.nbytes())};
        mnemo_node n{};
        n.op = op;
        n.n_inputs = static_cast<int32_t>(in.size());
        for (size_t i = 0; i < in.size(); ++i) n.inputs[i] = tensor_of(in[i].bytes.data(), in[i]);
        for (size_t i = 0; i < ip.size(); ++i) n.iparams[i] = ip[i];
        n.output = tensor_of(out.bytes.data(), out);
        mnemo::reference_compute(n);
        r.out = out.bytes;
    } catch (const mnemo::Error& e) {
        r.error = e.what();
    }
    return r;
}

// The node on the CPU backend, bypassing the engine's shape checks (the module must do its own).
// `out` gives the output's dtype and shape.
Result run_cpu(int32_t op, std::vector<HostTensor> in, std::vector<int64_t> ip, HostTensor out) {
    static mnemo::BackendRegistry reg({MNEMO_BUILD_BIN});
    const mnemo_backend_api* api = reg.require("cpu").api;
    Result r;
    mnemo_error err{};
    void* ctx = nullptr;
    mnemo_backend_config cfg{};
    if (api->open(0, &cfg, &ctx, &err) != MNEMO_OK) return {std::string("open: ") + err.message, {}};
    std::vector<void*> buffers;
    auto buffer_for = [&](const HostTensor& t) {
        void* b = nullptr;
        if (api->buffer_alloc(ctx, t.bytes.size() + 4, &b, &err) != MNEMO_OK) return static_cast<void*>(nullptr);
        buffers.push_back(b);
        if (!t.bytes.empty()) api->buffer_write(ctx, b, 0, t.bytes.data(), t.bytes.size(), &err);
        return b;
    };
    mnemo_node n{};
    n.op = op;
    n.n_inputs = static_cast<int32_t>(in.size());
    for (size_t i = 0; i < in.size(); ++i) n.inputs[i] = tensor_of(buffer_for(in[i]), in[i]);
    for (size_t i = 0; i < ip.size(); ++i) n.iparams[i] = ip[i];
    n.output = tensor_of(buffer_for(out), out);
    void* graph = nullptr;
    if (api->graph_prepare(ctx, &n, 1, &graph, &err) != MNEMO_OK) {
        r.error = err.message;
    } else {
        if (api->graph_run(ctx, graph, nullptr, &err) != MNEMO_OK) r.error = err.message;
        r.out.resize(out.bytes.size());
        api->buffer_read(ctx, n.output.buffer, 0, r.out.data(), r.out.size(), &err);
        api->graph_release(ctx, graph);
    }
    for (void* b : buffers) api->buffer_free(ctx, b);
    api->close(ctx);
    return r;
}

std::vector<int32_t> as_i32(const std::vector<uint8_t>& b) {
    std::vector<int32_t> v(b.size() / 4);
    std::memcpy(v.data(), b.data(), v.size() * 4);
    return v;
}

#define EXPECT_MENTIONS(text, ...)                                                                      \
    do {                                                                                                \
        const std::string got_ = (text);                                                                \
        ASSERT_FALSE(got_.empty()) << "no error, expected one";                                         \
        for (const char* part_ : {__VA_ARGS__})                                                         \
            EXPECT_NE(got_.find(part_), std::string::npos) << "'" << part_ << "' not in: " << got_;    \
    } while (0)

// One token, one head, Nk = 3: s1 = [0.1, 0.9, 0.5], s2 = [0.3, 0.2, 0.8]. With m = 2 the
// candidates are I1 = [1, 2], I2 = [2, 0]; the pairs score 1.7 (1,2), 1.2 (1,0), 1.3 (2,2),
// 0.8 (2,0), so the best three are the virtual keys 1*3+2, 2*3+2, 1*3+0.
HostTensor hand_scores() { return f32({1, 2, 3, 1}, {0.1f, 0.9f, 0.5f, 0.3f, 0.2f, 0.8f}); }

TEST(ProductKeyOps, AdditiveTopKByHandOnReferenceAndCpu) {
    const std::vector<int32_t> want = {5, 8, 3};
    const Result ref = run_reference(MNEMO_OP_PK_TOPK, {hand_scores()}, {2, 3});
    ASSERT_EQ(ref.error, "");
    EXPECT_EQ(as_i32(ref.out), want);
    const Result cpu = run_cpu(MNEMO_OP_PK_TOPK, {hand_scores()}, {2, 3}, i32({1, 1, 3}, {-1, -1, -1}));
    ASSERT_EQ(cpu.error, "");
    EXPECT_EQ(as_i32(cpu.out), want);
}

TEST(ProductKeyOps, EqualScoresGoToTheLowerIndexThenTheLowerPair) {
    // Rows tie at 1 (indices 0 and 2), columns tie at 0.5 (indices 1 and 2): I1 = [0, 2], I2 = [1, 2],
    // and all four pairs score 1.5, so they come out in pair order.
    const HostTensor s = f32({1, 2, 3, 1}, {1.0f, -1.0f, 1.0f, -2.0f, 0.5f, 0.5f});
    const std::vector<int32_t> want = {0 * 3 + 1, 0 * 3 + 2, 2 * 3 + 1, 2 * 3 + 2};
    EXPECT_EQ(as_i32(run_reference(MNEMO_OP_PK_TOPK, {s}, {2, 4}).out), want);
    EXPECT_EQ(as_i32(run_cpu(MNEMO_OP_PK_TOPK, {s}, {2, 4}, i32({1, 1, 4}, {0, 0, 0, 0})).out), want);
}

TEST(ProductKeyOps, PairScoresRejectAnIndexOutsideTheVirtualKeys) {
    for (int32_t bad : {9, -1}) {  // Nk = 3: virtual keys 0..8
        const HostTensor idx = i32({1, 1, 3}, {8, 0, bad});
        const std::string value = "is " + std::to_string(bad);
        const Result ref = run_reference(MNEMO_OP_PK_PAIR_SCORES, {hand_scores(), idx}, {});
        EXPECT_MENTIONS(ref.error, "pk_pair_scores", "pair index [0, 0, 2]", value.c_str(), "outside 0..Nk*Nk-1", "Nk = 3");
        const Result cpu = run_cpu(MNEMO_OP_PK_PAIR_SCORES, {hand_scores(), idx}, {}, f32({1, 1, 3, 1}, {0, 0, 0}));
        EXPECT_MENTIONS(cpu.error, "pk_pair_scores", "pair index [0, 0, 2]", value.c_str(), "Nk = 3");
    }
    const Result ok = run_cpu(MNEMO_OP_PK_PAIR_SCORES, {hand_scores(), i32({1, 1, 2}, {8, 3})}, {}, f32({1, 1, 2, 1}, {0, 0}));
    ASSERT_EQ(ok.error, "");
    float got[2];
    std::memcpy(got, ok.out.data(), 8);
    EXPECT_FLOAT_EQ(got[0], 0.5f + 0.8f);  // i = 2, j = 2
    EXPECT_FLOAT_EQ(got[1], 0.9f + 0.3f);  // i = 1, j = 0
}

TEST(ProductKeyOps, ShapeRulesNameTheProblem) {
    const HostTensor s2 = f32({1, 2, 3, 2}, std::vector<float>(12, 0.0f));  // rank 2
    const HostTensor uv = f32({1, 2}, {1, 0});
    const HostTensor core = f32({1, 2, 2}, {1, 0, 0, 1});
    EXPECT_MENTIONS(run_reference(MNEMO_OP_PK_TOPK, {s2}, {2, 3}).error, "pk_topk", "additive scoring needs rank-1 scores");
    EXPECT_MENTIONS(run_reference(MNEMO_OP_PK_TOPK, {s2, uv, uv}, {2, 3}).error, "pk_topk", "1..5 cores");
    EXPECT_MENTIONS(run_reference(MNEMO_OP_PK_TOPK, {hand_scores()}, {4, 3}).error, "pk_topk", "m = 4", "1..3");
    EXPECT_MENTIONS(run_reference(MNEMO_OP_PK_TOPK, {hand_scores()}, {2, 5}).error, "pk_topk", "k = 5", "m*m = 4");
    EXPECT_MENTIONS(run_reference(MNEMO_OP_PK_TOPK, {s2, uv, uv, f32({1, 3, 3}, std::vector<float>(9))}, {2, 3}).error,
                    "pk_topk", "input 3", "core [1, 2, 2]");
    EXPECT_EQ(run_reference(MNEMO_OP_PK_TOPK, {s2, uv, uv, core}, {2, 3}).error, "");
    EXPECT_MENTIONS(run_reference(MNEMO_OP_PK_PAIR_SCORES, {hand_scores(), i32({2, 1, 1}, {0, 0})}, {}).error,
                    "pk_pair_scores", "input 1");
    const HostTensor q = f32({1, 1, 2, 4}, std::vector<float>(8, 1.0f));
    const HostTensor keys = f32({2, 3, 4, 1}, std::vector<float>(24, 1.0f));
    EXPECT_MENTIONS(run_reference(MNEMO_OP_PK_SCORE, {q, keys}, {2, 1}).error, "pk_score", "2H = 4");
    EXPECT_MENTIONS(run_reference(MNEMO_OP_PK_SCORE, {q, f32({4, 3, 4, 1}, std::vector<float>(48))}, {2, 1}).error,
                    "pk_score", "cannot serve 2 heads");
    EXPECT_EQ(run_reference(MNEMO_OP_PK_SCORE, {q, f32({4, 3, 4, 1}, std::vector<float>(48))}, {2, 2}).error, "");
}

TEST(ProductKeyOps, CpuBackendChecksTheNodeItself) {
    // Shapes the engine would refuse never reach a kernel: the module re-checks what its kernels rely on.
    const Result bad_m = run_cpu(MNEMO_OP_PK_TOPK, {hand_scores()}, {4, 3}, i32({1, 1, 3}, {0, 0, 0}));
    EXPECT_MENTIONS(bad_m.error, "pk_topk", "candidates per side m");
    const Result bad_out = run_cpu(MNEMO_OP_PK_TOPK, {hand_scores()}, {2, 3}, f32({1, 1, 3}, {0, 0, 0}));
    EXPECT_MENTIONS(bad_out.error, "pk_topk", "output");
    const HostTensor q = f32({1, 1, 2, 4}, std::vector<float>(8, 1.0f));
    const Result bad_keys = run_cpu(MNEMO_OP_PK_SCORE, {q, f32({2, 3, 5, 1}, std::vector<float>(30))}, {1, 1},
                                    f32({1, 2, 3, 1}, std::vector<float>(6)));
    EXPECT_MENTIONS(bad_keys.error, "pk_score", "sub-key dim");
}

}  // namespace
