// Shape rules of the op table (engine/src/ops/shape_<family>.cpp): good shapes give the documented
// output, bad ones are rejected with a message naming the op and the offending input; and the
// node check every backend runs at its C ABI boundary (mnemo::node_error).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"

namespace {

using mnemo::DType;
using mnemo::TensorShape;

TensorShape T(DType dt, std::initializer_list<int64_t> dims) {
    TensorShape s;
    s.dtype = dt;
    s.ndim = static_cast<int32_t>(dims.size());
    // ndim may exceed MNEMO_MAX_DIMS (to test the rank check); only the storable dims are kept.
    int i = 0;
    for (int64_t d : dims)
        if (i < MNEMO_MAX_DIMS) s.shape[i++] = d;
    return s;
}
TensorShape F(std::initializer_list<int64_t> dims) { return T(DType::F32, dims); }
TensorShape I(std::initializer_list<int64_t> dims) { return T(DType::I32, dims); }

TensorShape infer(int32_t op, const std::vector<TensorShape>& in, std::vector<int64_t> ip = {0, 0},
                  std::vector<float> fp = {1e-5f}) {
    return mnemo::infer_output(op, in, ip, fp);
}

// The error text of a rejected shape ("" when it was accepted).
std::string rejection(int32_t op, const std::vector<TensorShape>& in, std::vector<int64_t> ip = {0, 0},
                      std::vector<float> fp = {1e-5f}) {
    try {
        infer(op, in, ip, fp);
    } catch (const mnemo::Error& e) {
        return e.what();
    }
    return "";
}

#define EXPECT_REJECTS(msg, ...)                                                         \
    do {                                                                                 \
        const std::string got_ = (msg);                                                  \
        ASSERT_FALSE(got_.empty()) << "accepted, expected an error";                     \
        for (const char* part_ : {__VA_ARGS__})                                          \
            EXPECT_NE(got_.find(part_), std::string::npos) << "'" << part_ << "' not in: " << got_; \
    } while (0)

TEST(OpTable, NamesRoundTripAndUnknownIdsThrow) {
    EXPECT_EQ(mnemo::op_count(), MNEMO_OP_COUNT_);
    for (int32_t op = 1; op < MNEMO_OP_COUNT_; ++op) {
        const auto& info = mnemo::op_info(op);
        EXPECT_EQ(info.op, op);
        EXPECT_EQ(mnemo::op_from_name(info.name), op);
    }
    EXPECT_FALSE(mnemo::op_from_name("none").has_value());
    EXPECT_FALSE(mnemo::op_from_name("conv2d").has_value());
    EXPECT_THROW(mnemo::op_info(0), mnemo::Error);
    EXPECT_THROW(mnemo::op_info(MNEMO_OP_COUNT_), mnemo::Error);
    EXPECT_TRUE(mnemo::op_info(MNEMO_OP_KV_STORE).output_aliases_input0);
}

TEST(OpTable, TensorShapeText) { EXPECT_EQ(T(DType::BF16, {4, 8}).str(), "bf16[4, 8]"); }

TEST(OpTable, GetRows) {
    const TensorShape out = infer(MNEMO_OP_GET_ROWS, {T(DType::BF16, {100, 16}), I({5})});
    EXPECT_EQ(out.str(), "f32[5, 16]");
    EXPECT_REJECTS(rejection(MNEMO_OP_GET_ROWS, {F({100, 16}), F({5})}), "get_rows", "input 1");
    EXPECT_REJECTS(rejection(MNEMO_OP_GET_ROWS, {F({100}), I({5})}), "get_rows", "input 0", "f32[100]");
}

TEST(OpTable, Matmul) {
    EXPECT_EQ(infer(MNEMO_OP_MATMUL, {F({2, 3, 64}), T(DType::F16, {17, 64})}).str(), "f32[2, 3, 17]");
    EXPECT_EQ(infer(MNEMO_OP_MATMUL, {F({64}), F({1, 64})}).str(), "f32[1]");
    EXPECT_REJECTS(rejection(MNEMO_OP_MATMUL, {F({2, 64}), F({17, 63})}), "matmul", "inner dimensions", "K=64", "K=63");
    EXPECT_REJECTS(rejection(MNEMO_OP_MATMUL, {F({2, 64}), F({64})}), "matmul", "input 1", "weight");
    EXPECT_REJECTS(rejection(MNEMO_OP_MATMUL, {T(DType::F16, {2, 64}), F({3, 64})}), "matmul", "input 0", "f16[2, 64]");
    EXPECT_REJECTS(rejection(MNEMO_OP_MATMUL, {F({2, 64})}), "matmul", "takes 2 inputs, got 1");
}

TEST(OpTable, AddMulSuffixBroadcast) {
    for (int32_t op : {MNEMO_OP_ADD, MNEMO_OP_MUL}) {
        EXPECT_EQ(infer(op, {F({2, 3, 4}), F({4})}).str(), "f32[2, 3, 4]");
        EXPECT_EQ(infer(op, {F({2, 3, 4}), F({3, 4})}).str(), "f32[2, 3, 4]");
        EXPECT_EQ(infer(op, {F({2, 3, 4}), F({2, 3, 4})}).str(), "f32[2, 3, 4]");
        const char* name = op == MNEMO_OP_ADD ? "add" : "mul";
        EXPECT_REJECTS(rejection(op, {F({2, 3, 4}), F({3})}), name, "trailing");
        EXPECT_REJECTS(rejection(op, {F({4}), F({2, 4})}), name, "trailing");
        EXPECT_REJECTS(rejection(op, {F({4}), T(DType::F16, {4})}), name, "input 1");
    }
}

TEST(OpTable, ElementwiseUnary) {
    for (int32_t op : {MNEMO_OP_SILU, MNEMO_OP_GELU, MNEMO_OP_SCALE, MNEMO_OP_SOFTMAX}) {
        EXPECT_EQ(infer(op, {F({3, 5})}).str(), "f32[3, 5]");
        EXPECT_REJECTS(rejection(op, {I({3})}), mnemo::op_info(op).name, "input 0", "i32[3]");
    }
    EXPECT_REJECTS(rejection(MNEMO_OP_SCALE, {F({3})}, {}, {}), "scale", "float parameter");
    EXPECT_REJECTS(rejection(MNEMO_OP_SILU, {F({1, 1, 1, 1, 1})}), "silu", "input 0");
}

TEST(OpTable, Clamp) {
    EXPECT_EQ(infer(MNEMO_OP_CLAMP, {F({3, 5})}, {}, {-1.0f, 2.0f}).str(), "f32[3, 5]");
    EXPECT_EQ(infer(MNEMO_OP_CLAMP, {F({4})}, {}, {0.5f, 0.5f}).str(), "f32[4]");
    EXPECT_REJECTS(rejection(MNEMO_OP_CLAMP, {F({4})}, {}, {2.0f, -1.0f}), "clamp", "lo <= hi");
    EXPECT_REJECTS(rejection(MNEMO_OP_CLAMP, {F({4})}, {}, {std::nanf(""), 1.0f}), "clamp", "lo <= hi");
    EXPECT_REJECTS(rejection(MNEMO_OP_CLAMP, {F({4})}, {}, {1.0f}), "clamp", "2 float parameter");
    EXPECT_REJECTS(rejection(MNEMO_OP_CLAMP, {I({4})}, {}, {0.0f, 1.0f}), "clamp", "input 0", "i32[4]");
}

TEST(OpTable, Swiglu) {
    EXPECT_EQ(infer(MNEMO_OP_SWIGLU, {F({2, 8}), F({2, 8})}).str(), "f32[2, 8]");
    EXPECT_REJECTS(rejection(MNEMO_OP_SWIGLU, {F({2, 8}), F({8})}), "swiglu", "differ");
}

TEST(OpTable, Norms) {
    EXPECT_EQ(infer(MNEMO_OP_RMS_NORM, {F({3, 16})}).str(), "f32[3, 16]");
    EXPECT_EQ(infer(MNEMO_OP_RMS_NORM, {F({3, 16}), T(DType::BF16, {16})}).str(), "f32[3, 16]");
    EXPECT_EQ(infer(MNEMO_OP_LAYER_NORM, {F({3, 16}), F({16}), T(DType::F16, {16})}).str(), "f32[3, 16]");
    EXPECT_REJECTS(rejection(MNEMO_OP_RMS_NORM, {F({3, 16}), F({15})}), "rms_norm", "input 1", "length 16");
    EXPECT_REJECTS(rejection(MNEMO_OP_LAYER_NORM, {F({3, 16}), F({16}), F({8})}), "layer_norm", "input 2");
    EXPECT_REJECTS(rejection(MNEMO_OP_RMS_NORM, {F({3, 16}), F({16}), F({16})}), "rms_norm", "inputs, got 3");
    EXPECT_REJECTS(rejection(MNEMO_OP_RMS_NORM, {F({3, 16})}, {}, {-1.0f}), "rms_norm", "eps");
}

TEST(OpTable, Rope) {
    EXPECT_EQ(infer(MNEMO_OP_ROPE, {F({4, 2, 64}), I({4}), F({16})}, {0, 32}).str(), "f32[4, 2, 64]");
    EXPECT_EQ(infer(MNEMO_OP_ROPE, {F({4, 2, 64}), I({4}), F({32})}, {1, 64}).str(), "f32[4, 2, 64]");
    EXPECT_REJECTS(rejection(MNEMO_OP_ROPE, {F({4, 2, 64}), I({3}), F({32})}, {0, 64}), "rope", "input 1");
    EXPECT_REJECTS(rejection(MNEMO_OP_ROPE, {F({4, 2, 64}), I({4}), F({32})}, {2, 64}), "rope", "mode");
    EXPECT_REJECTS(rejection(MNEMO_OP_ROPE, {F({4, 2, 64}), I({4}), F({33})}, {0, 66}), "rope", "rotary dims 66");
    EXPECT_REJECTS(rejection(MNEMO_OP_ROPE, {F({4, 2, 64}), I({4}), F({16})}, {0, 31}), "rope", "even");
    EXPECT_REJECTS(rejection(MNEMO_OP_ROPE, {F({4, 2, 64}), I({4}), F({16})}, {0, 64}), "rope", "hold 16", "need 32");
    EXPECT_REJECTS(rejection(MNEMO_OP_ROPE, {F({4, 128}), I({4}), F({16})}, {0, 32}), "rope", "input 0");
    EXPECT_REJECTS(rejection(MNEMO_OP_ROPE, {F({4, 2, 64}), I({4}), F({16})}, {0}), "rope", "integer parameter");
}

TEST(OpTable, KvStore) {
    EXPECT_EQ(infer(MNEMO_OP_KV_STORE, {F({2, 4, 128, 64}), F({3, 4, 64}), I({3}), I({3})}).str(),
              "f32[2, 4, 128, 64]");
    EXPECT_REJECTS(rejection(MNEMO_OP_KV_STORE, {F({2, 4, 128, 64}), F({3, 2, 64}), I({3}), I({3})}), "kv_store",
                   "does not fit");
    EXPECT_REJECTS(rejection(MNEMO_OP_KV_STORE, {F({2, 4, 128, 64}), F({3, 4, 64}), I({2}), I({3})}), "kv_store",
                   "input 2");
    EXPECT_REJECTS(rejection(MNEMO_OP_KV_STORE, {F({2, 4, 128, 64}), F({3, 4, 64}), I({3}), F({3})}), "kv_store",
                   "input 3");
    // The cache may be f16 or q8_0 (the --cache-type; test_cache_type.cpp), never bf16, and a
    // q8_0 cache's rows are whole blocks of 32.
    EXPECT_EQ(infer(MNEMO_OP_KV_STORE, {T(DType::F16, {2, 4, 128, 64}), F({3, 4, 64}), I({3}), I({3})}).str(),
              "f16[2, 4, 128, 64]");
    EXPECT_REJECTS(rejection(MNEMO_OP_KV_STORE, {T(DType::BF16, {2, 4, 128, 64}), F({3, 4, 64}), I({3}), I({3})}),
                   "kv_store", "input 0");
    EXPECT_REJECTS(rejection(MNEMO_OP_KV_STORE, {T(DType::Q8_0, {2, 4, 128, 48}), F({3, 4, 48}), I({3}), I({3})}),
                   "kv_store", "input 0", "multiple of 32");
}

TEST(OpTable, Attention) {
    const TensorShape q = F({3, 8, 64}), k = F({2, 2, 128, 64}), v = F({2, 2, 128, 32});
    EXPECT_EQ(infer(MNEMO_OP_ATTENTION, {q, k, v, I({3}), I({3})}).str(), "f32[3, 8, 32]");
    EXPECT_REJECTS(rejection(MNEMO_OP_ATTENTION, {F({3, 8, 60}), k, v, I({3}), I({3})}), "attention", "head dim");
    EXPECT_REJECTS(rejection(MNEMO_OP_ATTENTION, {F({3, 7, 64}), k, v, I({3}), I({3})}), "attention",
                   "not a multiple");
    EXPECT_REJECTS(rejection(MNEMO_OP_ATTENTION, {q, k, F({2, 2, 64, 32}), I({3}), I({3})}), "attention",
                   "disagree");
    EXPECT_REJECTS(rejection(MNEMO_OP_ATTENTION, {q, k, v, I({3}), I({4})}), "attention", "input 4");
    EXPECT_REJECTS(rejection(MNEMO_OP_ATTENTION, {q, F({2, 0, 128, 64}), F({2, 0, 128, 32}), I({3}), I({3})}),
                   "attention", "not a multiple");
}

TEST(OpTable, Argtopk) {
    EXPECT_EQ(infer(MNEMO_OP_ARGTOPK, {F({3, 100})}, {4}).str(), "i32[3, 4]");
    EXPECT_EQ(infer(MNEMO_OP_ARGTOPK, {F({2, 3, 7})}, {7}).str(), "i32[2, 3, 7]");
    EXPECT_EQ(infer(MNEMO_OP_ARGTOPK, {F({1})}, {1}).str(), "i32[1]");
    EXPECT_REJECTS(rejection(MNEMO_OP_ARGTOPK, {F({3, 100})}, {101}), "argtopk", "k = 101", "D = 100");
    EXPECT_REJECTS(rejection(MNEMO_OP_ARGTOPK, {F({3, 100})}, {0}), "argtopk", "k = 0");
    EXPECT_REJECTS(rejection(MNEMO_OP_ARGTOPK, {F({3, 0})}, {1}), "argtopk", "D = 0");
    EXPECT_REJECTS(rejection(MNEMO_OP_ARGTOPK, {T(DType::F16, {3, 100})}, {4}), "argtopk", "input 0", "f32");
    EXPECT_REJECTS(rejection(MNEMO_OP_ARGTOPK, {F({3, 100})}, {}), "argtopk", "integer parameter");
}

TEST(OpTable, TakeAlong) {
    EXPECT_EQ(infer(MNEMO_OP_TAKE_ALONG, {F({3, 100}), I({3, 4})}).str(), "f32[3, 4]");
    EXPECT_EQ(infer(MNEMO_OP_TAKE_ALONG, {F({2, 3, 100}), I({2, 3, 200})}).str(), "f32[2, 3, 200]");
    EXPECT_REJECTS(rejection(MNEMO_OP_TAKE_ALONG, {F({3, 100}), I({2, 4})}), "take_along", "leading dimensions");
    EXPECT_REJECTS(rejection(MNEMO_OP_TAKE_ALONG, {F({3, 100}), I({3, 1, 4})}), "take_along", "leading dimensions");
    EXPECT_REJECTS(rejection(MNEMO_OP_TAKE_ALONG, {F({3, 100}), F({3, 4})}), "take_along", "input 1", "i32");
    EXPECT_REJECTS(rejection(MNEMO_OP_TAKE_ALONG, {I({3, 100}), I({3, 4})}), "take_along", "input 0");
}

TEST(OpTable, EmbeddingBag) {
    EXPECT_EQ(infer(MNEMO_OP_EMBEDDING_BAG, {T(DType::BF16, {65536, 256}), I({3, 32}), F({3, 32})}).str(),
              "f32[3, 256]");
    EXPECT_EQ(infer(MNEMO_OP_EMBEDDING_BAG, {F({10, 8}), I({1, 0}), F({1, 0})}).str(), "f32[1, 8]");
    EXPECT_REJECTS(rejection(MNEMO_OP_EMBEDDING_BAG, {F({10, 8}), I({3, 4}), F({3, 5})}), "embedding_bag",
                   "bag weights f32[3, 5]", "i32[3, 4]");
    EXPECT_REJECTS(rejection(MNEMO_OP_EMBEDDING_BAG, {F({10, 8}), I({12}), F({12})}), "embedding_bag", "input 1",
                   "2-D");
    EXPECT_REJECTS(rejection(MNEMO_OP_EMBEDDING_BAG, {F({10, 8}), F({3, 4}), F({3, 4})}), "embedding_bag", "input 1");
    EXPECT_REJECTS(rejection(MNEMO_OP_EMBEDDING_BAG, {F({10, 8}), I({3, 4}), T(DType::F16, {3, 4})}),
                   "embedding_bag", "input 2");
    EXPECT_REJECTS(rejection(MNEMO_OP_EMBEDDING_BAG, {I({10, 8}), I({3, 4}), F({3, 4})}), "embedding_bag", "input 0");
    EXPECT_REJECTS(rejection(MNEMO_OP_EMBEDDING_BAG, {F({10, 8}), I({3, 4})}), "embedding_bag", "inputs, got 2");
}

TEST(OpTable, RejectsBadRankAndNegativeDimensions) {
    TensorShape none;  // ndim 0
    EXPECT_REJECTS(rejection(MNEMO_OP_SILU, {none}), "silu", "input 0", "1..4 dimensions");
    EXPECT_REJECTS(rejection(MNEMO_OP_SILU, {F({3, -1})}), "silu", "input 0", "non-negative");
}

// A tensor of a node: host memory is never looked at, only the description.
mnemo_tensor tensor(void* buffer, DType dt, std::initializer_list<int64_t> dims) {
    mnemo_tensor t{};
    t.buffer = buffer;
    t.dtype = static_cast<int32_t>(dt);
    t.ndim = static_cast<int32_t>(dims.size());
    int i = 0;
    for (int64_t d : dims) t.shape[i++] = d;
    return t;
}

TEST(OpTable, NodeErrorAcceptsAWellFormedNode) {
    int dummy = 0;
    mnemo_node n{};
    n.op = MNEMO_OP_MATMUL;
    n.n_inputs = 2;
    n.inputs[0] = tensor(&dummy, DType::F32, {3, 8});
    n.inputs[1] = tensor(&dummy, DType::BF16, {5, 8});
    n.output = tensor(&dummy, DType::F32, {3, 5});
    EXPECT_EQ(mnemo::node_error(n), "");
}

TEST(OpTable, NodeErrorNamesWhatAKernelCouldNotRelyOn) {
    int dummy = 0;
    mnemo_node n{};
    n.op = MNEMO_OP_MATMUL;
    n.n_inputs = 2;
    n.inputs[0] = tensor(&dummy, DType::F32, {3, 8});
    n.inputs[1] = tensor(&dummy, DType::F32, {5, 8});
    n.output = tensor(&dummy, DType::F32, {3, 6});
    EXPECT_REJECTS(mnemo::node_error(n), "matmul", "output is f32[3, 6]", "f32[3, 5]");
    n.output = tensor(&dummy, DType::F32, {3, 5});
    n.n_inputs = 3;
    EXPECT_REJECTS(mnemo::node_error(n), "matmul", "takes 2 inputs, got 3");
    n.n_inputs = 2;
    n.inputs[1].dtype = 77;
    EXPECT_REJECTS(mnemo::node_error(n), "matmul", "input 1", "invalid dtype");
    n.inputs[1] = tensor(&dummy, DType::F32, {5, int64_t{1} << 62});
    n.inputs[0] = tensor(&dummy, DType::F32, {3, int64_t{1} << 62});
    EXPECT_REJECTS(mnemo::node_error(n), "matmul", "input 0", "size");  // 4 * 2^62 bytes overflow
    n.op = 999;
    EXPECT_REJECTS(mnemo::node_error(n), "unknown op id 999");
}

TEST(OpTable, NodeErrorWantsInPlaceWritesInPlace) {
    float cache[2 * 1 * 4 * 3] = {}, other[2 * 1 * 4 * 3] = {}, src[3] = {};
    int32_t seq[1] = {0}, pos[1] = {0};
    mnemo_node n{};
    n.op = MNEMO_OP_KV_STORE;
    n.n_inputs = 4;
    n.inputs[0] = tensor(cache, DType::F32, {2, 1, 4, 3});
    n.inputs[1] = tensor(src, DType::F32, {1, 1, 3});
    n.inputs[2] = tensor(seq, DType::I32, {1});
    n.inputs[3] = tensor(pos, DType::I32, {1});
    n.output = tensor(cache, DType::F32, {2, 1, 4, 3});
    EXPECT_EQ(mnemo::node_error(n), "");
    n.output.buffer = other;
    EXPECT_REJECTS(mnemo::node_error(n), "kv_store", "input 0 itself");
    EXPECT_EQ(mnemo::node_error(n, mnemo::InPlace::Optional), "");
}

TEST(OpTable, EveryOpHasAFamilyThatIsListed) {
    const auto families = mnemo::op_families();
    for (int32_t op = 1; op < MNEMO_OP_COUNT_; ++op) {
        const std::string family = mnemo::op_info(op).family;
        EXPECT_NE(std::find(families.begin(), families.end(), family), families.end()) << mnemo::op_info(op).name;
    }
}

// The family taxonomy is the file layout: who knows an op's family finds its shape rule, its
// reference, its kernel on every backend, its shaders and its conformance cases by that name.
TEST(OpTable, EveryFamilyHasItsFileInEveryPlace) {
    const std::filesystem::path root = MNEMO_SOURCE_DIR;
    for (const char* f : mnemo::op_families()) {
        const std::string family = f;
        for (const std::string& file :
             {"engine/src/ops/shape_" + family + ".cpp", "engine/src/ops/reference_" + family + ".cpp",
              "backends/cpu/src/kernels/" + family + ".cpp", "backends/vulkan/src/kernels/" + family + ".cpp",
              "backends/cuda/src/kernels/" + family + ".cu", "shaders/" + family + "/" + family + ".cmake",
              "tests/conformance/op_cases_" + family + ".hpp"})
            EXPECT_TRUE(std::filesystem::exists(root / file)) << "family " << family << ": " << file << " is missing";
    }
}

TEST(OpTable, NodeFlopsOfMatmul) {
    mnemo_node n{};
    n.op = MNEMO_OP_MATMUL;
    n.n_inputs = 2;
    n.inputs[1].ndim = 2;
    n.inputs[1].shape[0] = 17;
    n.inputs[1].shape[1] = 64;
    n.output.ndim = 2;
    n.output.shape[0] = 3;
    n.output.shape[1] = 17;
    EXPECT_DOUBLE_EQ(mnemo::node_flops(n), 2.0 * 3 * 17 * 64);
}

}  // namespace
