// Block-quantized weights (q8_0, q4_0, q4_k, q5_k, q6_k; issue 25): the dtypes and their block
// sizes, the ops that take them (MATMUL's W, GET_ROWS's table) and the ones that refuse them, the
// GPU modules taking them in MATMUL and GET_ROWS and in the memory-layer tables, MoE experts and a
// q8_0 KV cache (CUDA's kernels built, not yet run on a GPU), and GGUF models whose quantized
// weights stay packed in memory: the same logits as the same weights decoded to F32 at load (what
// Mnemo did before), in fewer bytes. The kernels themselves are the conformance harness's
// (tests/conformance/op_cases_matmul.hpp, op_cases_rows.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "fixtures/error_checks.hpp"
#include "mnemo/io/ggml_type.hpp"
#include "mnemo/io/gguf.hpp"
#include "mnemo/io/gguf_convert.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/quant/ggml_quants.hpp"
#include "model_test_util.hpp"

using namespace mnemo;
using namespace mnemo::test;
namespace fs = std::filesystem;

namespace {

constexpr DType kQuantized[] = {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

TensorShape shape(DType dt, std::initializer_list<int64_t> dims) {
    TensorShape s;
    s.dtype = dt;
    s.ndim = static_cast<int32_t>(dims.size());
    int32_t i = 0;
    for (int64_t d : dims) s.shape[i++] = d;
    return s;
}

std::string infer_error(int32_t op, std::vector<TensorShape> in, std::vector<float> fp = {}) {
    try {
        infer_output(op, in, {}, fp);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(QuantizedDTypes, BlocksNamesAndGgmlIds) {
    const struct {
        DType dt;
        const char* name;
        int64_t elems, bytes;
        uint32_t ggml;
        int32_t abi;
    } want[] = {{DType::Q8_0, "q8_0", 32, 34, ggml_type::Q8_0, MNEMO_DTYPE_Q8_0},
                {DType::Q4_0, "q4_0", 32, 18, ggml_type::Q4_0, MNEMO_DTYPE_Q4_0},
                {DType::Q4_K, "q4_k", 256, 144, ggml_type::Q4_K, MNEMO_DTYPE_Q4_K},
                {DType::Q5_K, "q5_k", 256, 176, ggml_type::Q5_K, MNEMO_DTYPE_Q5_K},
                {DType::Q6_K, "q6_k", 256, 210, ggml_type::Q6_K, MNEMO_DTYPE_Q6_K}};
    for (const auto& w : want) {
        SCOPED_TRACE(w.name);
        EXPECT_EQ(static_cast<int32_t>(w.dt), w.abi);
        EXPECT_TRUE(dtype_is_quantized(w.dt));
        EXPECT_TRUE(dtype_valid(w.abi));
        EXPECT_EQ(dtype_name(w.dt), w.name);
        EXPECT_EQ(dtype_from_name(w.name), w.dt);
        EXPECT_EQ(dtype_block(w.dt).elems, w.elems);
        EXPECT_EQ(dtype_block(w.dt).bytes, w.bytes);
        EXPECT_EQ(dtype_bytes(w.dt, 3 * w.elems), static_cast<uint64_t>(3 * w.bytes));
        EXPECT_EQ(ggml_type_of_dtype(w.dt), w.ggml);
        EXPECT_EQ(dtype_of_ggml_type(w.ggml), w.dt);
        // A block-quantized type has no element size: asking is a bug, never a wrong number.
        EXPECT_THROW((void)dtype_size(w.dt), std::logic_error);
        const uint8_t block[256] = {};
        EXPECT_THROW((void)load_as_f32(block, w.dt, 0), std::logic_error);
        // A tensor's bytes are its rows' whole blocks.
        EXPECT_EQ(shape(w.dt, {5, 2 * w.elems}).nbytes(), static_cast<uint64_t>(10 * w.bytes));
    }
    EXPECT_EQ(dtype_from_name("Q4_K"), DType::Q4_K);  // GGUF's spelling
    EXPECT_FALSE(dtype_from_name("q4_1").has_value());
    EXPECT_FALSE(dtype_of_ggml_type(ggml_type::Q4_1).has_value());
    for (int32_t raw : std::initializer_list<int32_t>{MNEMO_DTYPE_COUNT_, 15, MNEMO_DTYPE_QUANT_END_, -1}) EXPECT_FALSE(dtype_valid(raw)) << raw;
    EXPECT_FALSE(dtype_is_quantized(DType::F16));
    EXPECT_EQ(dtype_size(DType::BF16), 2u);
    EXPECT_EQ(dtype_bytes(DType::F32, 7), 28u);
}

TEST(QuantizedDTypes, MatmulAndGetRowsTakeThemInWholeBlocks) {
    for (DType dt : kQuantized) {
        SCOPED_TRACE(std::string(dtype_name(dt)));
        const int64_t block = dtype_block(dt).elems;
        const TensorShape y = infer_output(MNEMO_OP_MATMUL, {{shape(DType::F32, {2, 3, 2 * block}), shape(dt, {7, 2 * block})}}, {}, {});
        EXPECT_EQ(y.str(), "f32[2, 3, 7]");
        const TensorShape rows = infer_output(MNEMO_OP_GET_ROWS, {{shape(dt, {10, block}), shape(DType::I32, {4})}}, {}, {});
        EXPECT_EQ(rows.str(), "f32[4, " + std::to_string(block) + "]");
    }
    // Rows that are no whole number of blocks: the rule names the block size.
    EXPECT_MENTIONS(infer_error(MNEMO_OP_MATMUL, {shape(DType::F32, {1, 100}), shape(DType::Q8_0, {7, 100})}),
                    "matmul: input 1: q8_0[7, 100] has rows of 100 weights, not a whole number of q8_0 blocks of 32");
    EXPECT_MENTIONS(infer_error(MNEMO_OP_GET_ROWS, {shape(DType::Q4_K, {9, 512 + 32}), shape(DType::I32, {1})}),
                    "get_rows: input 0: q4_k[9, 544] has rows of 544 weights, not a whole number of q4_k blocks of 256");
    // x is an activation: f32 only.
    EXPECT_MENTIONS(infer_error(MNEMO_OP_MATMUL, {shape(DType::Q8_0, {1, 32}), shape(DType::Q8_0, {7, 32})}),
                    "matmul: input 0: expected 1...4-D f32 activations [..., K], got q8_0[1, 32]");
}

TEST(QuantizedDTypes, OtherOpsRefuseThemAsAnyOtherDtype) {
    EXPECT_MENTIONS(infer_error(MNEMO_OP_RMS_NORM, {shape(DType::F32, {2, 64}), shape(DType::Q8_0, {64})}, {1e-5f}),
                    "rms_norm: input 1: expected 1-D f32/f16/bf16 weight [D], got q8_0[64]");
    EXPECT_MENTIONS(infer_error(MNEMO_OP_ADD, {shape(DType::F32, {2, 64}), shape(DType::Q4_0, {2, 64})}), "got q4_0[2, 64]");
}

TEST(QuantizedDTypes, NodeErrorRefusesATensorOfPartBlocks) {
    mnemo_node n{};
    n.op = MNEMO_OP_MATMUL;
    n.n_inputs = 2;
    uint8_t dummy[64] = {};
    n.inputs[0] = {dummy, 0, MNEMO_DTYPE_F32, 2, {1, 300, 0, 0}};
    n.inputs[1] = {dummy, 0, MNEMO_DTYPE_Q4_K, 2, {3, 300, 0, 0}};
    n.output = {dummy, 0, MNEMO_DTYPE_F32, 2, {1, 3, 0, 0}};
    EXPECT_MENTIONS(node_error(n), "matmul: input 1 is q4_k[3, 300]: a q4_k row is a whole number of 256-element blocks");
    n.inputs[1].dtype = 21;  // past the quantized types
    EXPECT_MENTIONS(node_error(n), "matmul: input 1 has an invalid dtype, rank or size");
}

// ------------------------------------------------------------------ GPU modules take them

namespace {

// MATMUL with a q4_k W and GET_ROWS with a q8_0 table in `buf` (1 MiB).
std::vector<mnemo_node> matmul_get_rows_nodes(void* buf) {
    mnemo_node mm{};
    mm.op = MNEMO_OP_MATMUL;
    mm.n_inputs = 2;
    mm.inputs[0] = {buf, 0, MNEMO_DTYPE_F32, 2, {1, 256, 0, 0}};
    mm.inputs[1] = {buf, 4096, MNEMO_DTYPE_Q4_K, 2, {8, 256, 0, 0}};
    mm.output = {buf, 65536, MNEMO_DTYPE_F32, 2, {1, 8, 0, 0}};
    mnemo_node gr{};
    gr.op = MNEMO_OP_GET_ROWS;
    gr.n_inputs = 2;
    gr.inputs[0] = {buf, 4096, MNEMO_DTYPE_Q8_0, 2, {8, 64, 0, 0}};
    gr.inputs[1] = {buf, 0, MNEMO_DTYPE_I32, 1, {2, 0, 0, 0}};
    gr.output = {buf, 65536, MNEMO_DTYPE_F32, 2, {2, 64, 0, 0}};
    return {mm, gr};
}

// `check(api, ctx, buf)` on the first device of `backend`, with a 1 MiB buffer `buf`; skips
// without the module or a device.
template <class Check>
void on_device_buffer(const std::string& backend, Check check) {
    const BackendModule* m = backends().find(backend);
    if (!m) GTEST_SKIP() << "the " << backend << " module is not built";
    if (m->api->device_count() <= 0) GTEST_SKIP() << backend << ": no device";
    void* ctx = nullptr;
    mnemo_error err{};
    mnemo_backend_config cfg{};
    ASSERT_EQ(m->api->open(0, &cfg, &ctx, &err), MNEMO_OK) << err.message;
    void* buf = nullptr;
    ASSERT_EQ(m->api->buffer_alloc(ctx, 1 << 20, &buf, &err), MNEMO_OK) << err.message;
    check(m->api, ctx, buf);
    m->api->buffer_free(ctx, buf);
    m->api->close(ctx);
}

// The nodes `make(buf)` builds (in a 1 MiB buffer buf) on the first device of `backend`:
// supported, and they prepare (their values are the conformance cases'). Skips without a device.
template <class Make>
void expect_nodes_taken(const std::string& backend, Make make) {
    on_device_buffer(backend, [&](const mnemo_backend_api* api, void* ctx, void* buf) {
        for (const mnemo_node& n : make(buf)) {
            EXPECT_NE(api->supports_node(ctx, &n), 0) << backend << ": " << mnemo_op_name(n.op);
            void* g = nullptr;
            mnemo_error e{};
            EXPECT_EQ(api->graph_prepare(ctx, &n, 1, &g, &e), MNEMO_OK) << backend << ": " << e.message;
            if (g) api->graph_release(ctx, g);
        }
    });
}

// Memory-layer, MoE and KV-cache nodes with quantized inputs (issue 26): EMBEDDING_BAG over a
// q8_0 table, MOE_FFN with q4_0 experts, KV_STORE into a q8_0 cache and ATTENTION over it.
std::vector<mnemo_node> memory_moe_kv_nodes(void* buf) {
    mnemo_node bag{};
    bag.op = MNEMO_OP_EMBEDDING_BAG;
    bag.n_inputs = 3;
    bag.inputs[0] = {buf, 4096, MNEMO_DTYPE_Q8_0, 2, {8, 64, 0, 0}};
    bag.inputs[1] = {buf, 0, MNEMO_DTYPE_I32, 2, {1, 2, 0, 0}};
    bag.inputs[2] = {buf, 256, MNEMO_DTYPE_F32, 2, {1, 2, 0, 0}};
    bag.output = {buf, 65536, MNEMO_DTYPE_F32, 2, {1, 64, 0, 0}};
    mnemo_node moe{};
    moe.op = MNEMO_OP_MOE_FFN;
    moe.n_inputs = 6;
    moe.inputs[0] = {buf, 512, MNEMO_DTYPE_F32, 2, {1, 32, 0, 0}};
    moe.inputs[1] = {buf, 0, MNEMO_DTYPE_I32, 2, {1, 1, 0, 0}};
    moe.inputs[2] = {buf, 256, MNEMO_DTYPE_F32, 2, {1, 1, 0, 0}};
    for (int i = 3; i < 6; ++i) moe.inputs[i] = {buf, 8192 + 4096 * static_cast<uint64_t>(i), MNEMO_DTYPE_Q4_0, 3, {2, 32, 32, 0}};
    moe.output = {buf, 65536, MNEMO_DTYPE_F32, 2, {1, 32, 0, 0}};
    mnemo_node kv{};
    kv.op = MNEMO_OP_KV_STORE;
    kv.n_inputs = 4;
    kv.inputs[0] = {buf, 131072, MNEMO_DTYPE_Q8_0, 4, {1, 2, 4, 32}};
    kv.inputs[1] = {buf, 512, MNEMO_DTYPE_F32, 3, {1, 2, 32, 0}};
    kv.inputs[2] = {buf, 0, MNEMO_DTYPE_I32, 1, {1, 0, 0, 0}};
    kv.inputs[3] = {buf, 16, MNEMO_DTYPE_I32, 1, {1, 0, 0, 0}};
    kv.output = kv.inputs[0];
    mnemo_node at{};
    at.op = MNEMO_OP_ATTENTION;
    at.n_inputs = 5;
    at.inputs[0] = {buf, 512, MNEMO_DTYPE_F32, 3, {1, 2, 32, 0}};
    at.inputs[1] = kv.inputs[0];
    at.inputs[2] = {buf, 196608, MNEMO_DTYPE_Q8_0, 4, {1, 2, 4, 32}};
    at.inputs[3] = kv.inputs[2];
    at.inputs[4] = kv.inputs[3];
    at.output = {buf, 65536, MNEMO_DTYPE_F32, 3, {1, 2, 32, 0}};
    at.fparams[0] = 0.125f;
    return {bag, moe, kv, at};
}

}  // namespace

// The nodes are valid by the op rules everywhere (so the tests below check the modules, not the
// nodes).
TEST(QuantizedWeights, MemoryMoeKvNodesPassTheOpRules) {
    uint8_t buf[16] = {};
    for (const mnemo_node& n : memory_moe_kv_nodes(buf)) EXPECT_EQ(node_error(n), "") << mnemo_op_name(n.op);
}
TEST(QuantizedWeights, CudaTakesThemInMemoryLayersMoeAndTheKvCache) { expect_nodes_taken("cuda", memory_moe_kv_nodes); }
TEST(QuantizedWeights, VulkanTakesThemInMemoryLayersMoeAndTheKvCache) { expect_nodes_taken("vulkan", memory_moe_kv_nodes); }

TEST(QuantizedWeights, VulkanTakesThemInMatmulAndGetRows) { expect_nodes_taken("vulkan", matmul_get_rows_nodes); }

// Vulkan's MoE up pass decodes gate and up with one shader variant: a quantized pair of two types
// is refused, and the message says which types and what to do (not "not supported on this device").
TEST(QuantizedWeights, VulkanNamesTheGateUpTypeMixItRefuses) {
    on_device_buffer("vulkan", [](const mnemo_backend_api* api, void* ctx, void* buf) {
        mnemo_node moe = memory_moe_kv_nodes(buf)[1];
        ASSERT_EQ(moe.op, MNEMO_OP_MOE_FFN);
        moe.inputs[4].dtype = MNEMO_DTYPE_Q8_0;  // gate stays q4_0
        EXPECT_EQ(node_error(moe), "");          // fine by the op's rule (the CPU takes it)
        EXPECT_EQ(api->supports_node(ctx, &moe), 0);
        void* g = nullptr;
        mnemo_error e{};
        EXPECT_NE(api->graph_prepare(ctx, &moe, 1, &g, &e), MNEMO_OK);
        EXPECT_NE(std::string(e.message).find("gate (q4_0) and up (q8_0)"), std::string::npos) << e.message;
        EXPECT_NE(std::string(e.message).find("quantize them to the same type"), std::string::npos) << e.message;
        if (g) api->graph_release(ctx, g);
    });
}
TEST(QuantizedWeights, CudaTakesThemInMatmulAndGetRows) { expect_nodes_taken("cuda", matmul_get_rows_nodes); }

// ------------------------------------------------------------------ models

namespace {

class QuantizedModel : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("mnemo-quantized-model-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string convert(const std::string& model, uint32_t type) {
        const std::string out = (dir_ / (model + "-" + ggml_type_info(type)->name + ".gguf")).string();
        GgufConvertOptions o;
        o.type = type;
        convert_to_gguf(model_dir(model), out, o);
        return out;
    }

    // A copy of a GGUF file with its block-quantized tensors decoded to F32 (the reference
    // dequantizer): what Mnemo loaded before quantized weights stayed packed. With `quantize`, the
    // F32 tensors named there are written Q8_0 instead (tensors the plugin declares as float).
    // With `only`, just the quantized tensors named there are decoded.
    std::string rewritten(const std::string& gguf, const std::string& name, bool widen, const std::vector<std::string>& quantize = {},
                          const std::vector<std::string>& only = {}) {
        const GgufFile f(gguf);
        std::vector<std::vector<uint8_t>> keep;
        std::vector<GgufTensorToWrite> ts;
        for (const GgufTensorInfo& t : f.header().tensors) {
            GgufTensorToWrite w{t.name, t.type, t.shape(), f.tensor_data(t), t.nbytes};
            const std::optional<DType> dt = dtype_of_ggml_type(t.type);
            const bool named = only.empty() || std::find(only.begin(), only.end(), t.name) != only.end();
            if (widen && named && dt && dtype_is_quantized(*dt)) {
                keep.emplace_back(static_cast<size_t>(t.elements()) * sizeof(float));
                dequantize_row(t.type, f.tensor_data(t), reinterpret_cast<float*>(keep.back().data()), t.elements());
                w = {t.name, ggml_type::F32, t.shape(), keep.back().data(), keep.back().size()};
            }
            if (std::find(quantize.begin(), quantize.end(), t.name) != quantize.end()) {
                EXPECT_EQ(t.type, ggml_type::F32) << t.name;
                keep.emplace_back(static_cast<size_t>(t.elements() / 32 * 34));
                quantize_row(ggml_type::Q8_0, reinterpret_cast<const float*>(f.tensor_data(t)), keep.back().data(), t.elements());
                w = {t.name, ggml_type::Q8_0, t.shape(), keep.back().data(), keep.back().size()};
            }
            ts.push_back(w);
        }
        const std::string out = (dir_ / name).string();
        write_gguf(out, f.header().metadata, ts);
        return out;
    }

    fs::path dir_;
};

const std::vector<int32_t> kPrompt = {1, 5, 9, 2, 7, 3, 11, 4, 8, 6, 10, 12};

// Logits of the prompt fed at once (one prefill batch) and fed token by token (decode batches).
struct Logits {
    std::vector<float> prefill, decode;
};
Logits logits_of(Session& s) {
    Logits l;
    l.prefill = s.append(0, kPrompt, /*all_logits=*/true);
    s.reset_all();
    for (int32_t id : kPrompt) {
        const std::vector<float>& row = s.append(0, {id});
        l.decode.insert(l.decode.end(), row.begin(), row.end());
    }
    return l;
}

double top1_agreement(const std::vector<float>& a, const std::vector<float>& b, int64_t vocab) {
    int64_t same = 0, rows = static_cast<int64_t>(a.size()) / vocab;
    for (int64_t r = 0; r < rows; ++r) {
        const auto* pa = a.data() + r * vocab;
        const auto* pb = b.data() + r * vocab;
        same += std::max_element(pa, pa + vocab) - pa == std::max_element(pb, pb + vocab) - pb;
    }
    return rows ? static_cast<double>(same) / static_cast<double>(rows) : 1.0;
}

// MNEMO_CPU_ISA set for a scope (read when a CPU context opens and when a graph is prepared).
class CpuIsa {
public:
    explicit CpuIsa(const char* isa) {
        if (const char* old = std::getenv("MNEMO_CPU_ISA")) old_ = old;
        ::setenv("MNEMO_CPU_ISA", isa, 1);
    }
    ~CpuIsa() {
        if (old_.empty()) ::unsetenv("MNEMO_CPU_ISA");
        else ::setenv("MNEMO_CPU_ISA", old_.c_str(), 1);
    }

private:
    std::string old_;
};

}  // namespace

// The same weights packed and decoded to F32 at load give the same logits; packed they take
// fewer bytes. The portable kernels decode W with the reference dequantizer, so the logits are
// the F32 file's to f32 rounding. The vector kernels' decode (and, where the CPU has AVX-512 VNNI,
// their prefill; AVX2 alone dequantizes bands of W for an f32 GEMM) quantizes the activations to
// 8 bits per block of 32 for integer dot products (as llama.cpp does): each such matmul's output
// moves by an NMSE of about 2e-5, which these two-layer random models turn into 0.5-1.8 % of the
// largest logit (measured), with the same top-1 token everywhere. (memory3 writes its chunks' memories with
// graphs of a few rows, so its prefill logits see the decode path too.)
TEST_F(QuantizedModel, PackedWeightsGiveTheLogitsOfTheF32DecodedOnesInFewerBytes) {
    for (const char* model : {"llama-tiny-f32", "memory3-tiny-f32"})
        for (uint32_t type : {ggml_type::Q8_0, ggml_type::Q4_0}) {
            const std::string label = std::string(model) + " " + ggml_type_info(type)->name;
            SCOPED_TRACE(label);
            const std::string packed = convert(model, type);
            const std::string widened = rewritten(packed, "widened.gguf", /*widen=*/true);
            Logits lp, lw;
            {
                const CpuIsa portable("scalar");
                lp = logits_of(*open_model(packed));
                lw = logits_of(*open_model(widened));
                EXPECT_LT(max_rel_error(lp.prefill, lw.prefill), 1e-6);
                EXPECT_LT(max_rel_error(lp.decode, lw.decode), 1e-6);
            }
            auto sp = open_model(packed);
            auto sw = open_model(widened);
            lp = logits_of(*sp);
            lw = logits_of(*sw);
            ASSERT_EQ(lp.prefill.size(), lw.prefill.size());
            ASSERT_TRUE(all_finite(lp.prefill) && all_finite(lp.decode));
            const double prefill_err = max_rel_error(lp.prefill, lw.prefill), decode_err = max_rel_error(lp.decode, lw.decode);
            EXPECT_LT(prefill_err, 0.05);
            EXPECT_LT(decode_err, 0.05);
            EXPECT_EQ(top1_agreement(lp.prefill, lw.prefill, sp->vocab_size()), 1.0);
            EXPECT_EQ(top1_agreement(lp.decode, lw.decode, sp->vocab_size()), 1.0);
            const ModelSummary& a = sp->summary();
            const ModelSummary& b = sw->summary();
            EXPECT_LT(a.weight_bytes, b.weight_bytes);
            EXPECT_NE(a.weight_dtypes.find(type == ggml_type::Q8_0 ? "q8_0" : "q4_0"), std::string::npos) << a.weight_dtypes;
            EXPECT_EQ(b.weight_dtypes.find("q"), std::string::npos) << b.weight_dtypes;
            std::printf("%s: weights %llu bytes packed, %llu decoded to f32 (%s); max relative logit error prefill %.2g, decode %.2g\n",
                        label.c_str(), static_cast<unsigned long long>(a.weight_bytes), static_cast<unsigned long long>(b.weight_bytes),
                        a.weight_dtypes.c_str(), prefill_err, decode_err);
        }
}

// A memory layer's value tables (EMBEDDING_BAG's, PEER_GATE's) stay packed: the model's weights
// take exactly the tables' f32 bytes fewer than with those tables decoded, and the logits are the
// decoded file's (to f32 rounding on the portable kernels, which decode each row exactly; within
// the decode path's activation rounding on the vector kernels).
TEST_F(QuantizedModel, MemoryValueTablesStayPackedAndGiveTheDecodedTablesLogits) {
    struct Case {
        const char* model;
        std::vector<std::string> tables;
    };
    const Case cases[] = {
        {"pkm-tiny-f32", {"memories.0_after.values.weight", "memories.1_in.values.weight"}},
        {"memory_plus_peer-tiny-f32", {"layers.0.feed_forward.values_u.weight", "layers.0.feed_forward.values_v.weight"}},
    };
    for (const Case& c : cases)
        for (uint32_t type : {ggml_type::Q8_0, ggml_type::Q4_0}) {
            SCOPED_TRACE(std::string(c.model) + " " + ggml_type_info(type)->name);
            const std::string packed = convert(c.model, type);
            const std::string tables_f32 = rewritten(packed, "tables-f32.gguf", /*widen=*/true, {}, c.tables);
            const std::string all_f32 = rewritten(packed, "all-f32.gguf", /*widen=*/true);
            uint64_t table_f32_bytes = 0, table_packed_bytes = 0;
            const GgufFile f(packed);
            for (const GgufTensorInfo& t : f.header().tensors)
                if (std::find(c.tables.begin(), c.tables.end(), t.name) != c.tables.end()) {
                    ASSERT_EQ(t.type, type) << t.name;
                    table_packed_bytes += t.nbytes;
                    table_f32_bytes += static_cast<uint64_t>(t.elements()) * 4;
                }
            auto sp = open_model(packed);
            auto st = open_model(tables_f32);
            EXPECT_EQ(sp->summary().weight_bytes + table_f32_bytes - table_packed_bytes, st->summary().weight_bytes);
            {
                const CpuIsa portable("scalar");
                EXPECT_LT(max_rel_error(logits_of(*open_model(packed)).decode, logits_of(*open_model(all_f32)).decode), 1e-6);
            }
            const Logits lp = logits_of(*sp), lt = logits_of(*st);
            ASSERT_TRUE(all_finite(lp.prefill) && all_finite(lp.decode));
            EXPECT_LT(max_rel_error(lp.prefill, lt.prefill), 1e-5);
            EXPECT_LT(max_rel_error(lp.decode, lt.decode), 1e-5);
        }
}

// A quantized tensor the plugin declares as float (a norm gain) is decoded to f32 at load: the
// model runs, with the logits of the F32-decoded file (compared on the portable kernels, where the
// packed matmuls decode W exactly too). MoE experts stay packed (MOE_FFN decodes a band of rows at
// a time): the same logits as the decoded file in fewer bytes.
TEST_F(QuantizedModel, TensorsDeclaredAsFloatAreDecodedAtLoadAndMoeExpertsStayPacked) {
    const CpuIsa portable("scalar");
    const std::string packed = convert("memory3-tiny-f32", ggml_type::Q8_0);
    const std::string norm_q8 = rewritten(packed, "norm-q8.gguf", /*widen=*/false, {"output_norm.weight"});
    const std::string widened = rewritten(norm_q8, "widened.gguf", /*widen=*/true);
    auto s = open_model(norm_q8);
    EXPECT_LT(max_rel_error(s->append(0, kPrompt, true), open_model(widened)->append(0, kPrompt, true)), 1e-6);
    EXPECT_EQ(s->summary().weight_dtypes, "f32 (9), q8_0 (29)");  // output_norm.weight widened: f32

    for (const char* model : {"moe-tiny-f32", "mixtral-tiny-f32"}) {
        SCOPED_TRACE(model);
        const std::string moe = convert(model, ggml_type::Q8_0);
        const std::string moe_widened = rewritten(moe, "moe-widened.gguf", /*widen=*/true);
        auto sm = open_model(moe);
        auto sw = open_model(moe_widened);
        EXPECT_LT(max_rel_error(sm->append(0, kPrompt, true), sw->append(0, kPrompt, true)), 1e-6);
        // Every 2-D and stacked weight packed: nothing but the 1-D norms (and what is not whole
        // blocks, written f16) is float.
        EXPECT_LT(sm->summary().weight_bytes * 5 / 2, sw->summary().weight_bytes) << sm->summary().weight_dtypes;
        std::printf("%s q8_0: %s, %llu bytes (decoded: %llu)\n", model, sm->summary().weight_dtypes.c_str(),
                    static_cast<unsigned long long>(sm->summary().weight_bytes), static_cast<unsigned long long>(sw->summary().weight_bytes));
    }
}

// On Vulkan (MATMUL, GET_ROWS, the memory-layer lookups and MOE_FFN decode the blocks in the
// shaders, exactly, and multiply in f32) a packed model gives the logits of its weights decoded to
// F32 at load, up to f32 summation order: a llama, a PKM model whose value tables (EMBEDDING_BAG)
// stay packed, compared with those tables decoded, and an MoE whose experts stay packed.
TEST_F(QuantizedModel, OnVulkanPackedWeightsGiveTheDecodedLogits) {
    const BackendModule* m = backends().find("vulkan");
    if (!m || m->api->device_count() <= 0) GTEST_SKIP() << "no Vulkan device";
    auto on_vulkan = [&](const std::string& path) {
        SessionOptions o;
        o.model_dir = path;
        o.n_ctx = 64;
        o.backend = "vulkan";
        o.backends = &backends();
        o.plugins = &plugins();
        return o;
    };
    struct Case {
        const char* model;
        std::vector<std::string> tables;  // the tensors decoded for the comparison; empty: every one
    };
    const Case cases[] = {
        {"llama-tiny-f32", {}},
        {"pkm-tiny-f32", {"memories.0_after.values.weight", "memories.1_in.values.weight"}},
        {"moe-tiny-f32", {}},
    };
    for (const Case& c : cases)
        for (uint32_t type : {ggml_type::Q8_0, ggml_type::Q4_0}) {
            const char* name = type == ggml_type::Q8_0 ? "q8_0" : "q4_0";
            const std::string label = std::string(c.model) + " " + name;
            SCOPED_TRACE(label);
            const std::string packed = convert(c.model, type);
            const std::string decoded = c.tables.empty() ? rewritten(packed, "widened.gguf", /*widen=*/true)
                                                         : rewritten(packed, "tables-f32.gguf", /*widen=*/true, {}, c.tables);
            auto sp = Session::open(on_vulkan(packed));
            auto sd = Session::open(on_vulkan(decoded));
            EXPECT_NE(sp->summary().weight_dtypes.find(name), std::string::npos) << sp->summary().weight_dtypes;
            EXPECT_LT(sp->summary().weight_bytes, sd->summary().weight_bytes);
            const Logits lp = logits_of(*sp), ld = logits_of(*sd);
            ASSERT_EQ(lp.prefill.size(), ld.prefill.size());
            ASSERT_TRUE(all_finite(lp.prefill) && all_finite(lp.decode));
            EXPECT_LT(max_rel_error(lp.prefill, ld.prefill), 1e-5);
            EXPECT_LT(max_rel_error(lp.decode, ld.decode), 1e-5);
            std::printf("vulkan %s: max relative logit error against decoded weights prefill %.2g, decode %.2g\n", label.c_str(),
                        max_rel_error(lp.prefill, ld.prefill), max_rel_error(lp.decode, ld.decode));
        }
}
