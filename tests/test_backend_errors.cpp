// Bad indices on the GPU backends (Vulkan, CUDA). Indices are data, so the kernels find a bad one
// only while the graph runs: they report it through the context's status word and skip the entry, and
// graph_run must then fail with MNEMO_ERR_INVALID and a message naming the op, the value and the
// valid range. The next run of the same prepared graph, with good indices, must succeed (the
// status word is reset before every submission) and match the engine's reference on host copies
// of the same inputs. Every op whose contract (mnemo_abi.h) calls an index an error is covered;
// ARGTOPK and PK_TOPK read no indices and have no data-dependent error. Runs on every device of
// each GPU backend; skipped (with the reason) when the module is not built or reports no device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/modules/registry.hpp"

namespace {

using mnemo::DType;

mnemo::BackendRegistry& registry() {
    static mnemo::BackendRegistry r({MNEMO_BUILD_BIN});
    return r;
}

// A host tensor to upload: raw bytes plus dtype and shape.
struct HostTensor {
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
};

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
}
template <typename T>
std::vector<T> values_of(const std::vector<uint8_t>& b) {
    std::vector<T> v(b.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
    return v;
}
HostTensor f32(std::vector<int64_t> shape, const std::vector<float>& v) { return {DType::F32, std::move(shape), bytes_of(v)}; }
HostTensor i32(std::vector<int64_t> shape, const std::vector<int32_t>& v) { return {DType::I32, std::move(shape), bytes_of(v)}; }

// An f32 tensor of deterministic values in offset + [-scale, scale]; `phase` makes tensors differ.
HostTensor wave(std::vector<int64_t> shape, float scale = 1.0f, float phase = 0.0f, float offset = 0.0f) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = offset + scale * std::sin(0.7f * static_cast<float>(i) + phase);
    return f32(std::move(shape), v);
}

mnemo_tensor tensor_of(void* buffer, DType dtype, const std::vector<int64_t>& shape) {
    mnemo_tensor t{};
    t.buffer = buffer;
    t.dtype = static_cast<int32_t>(dtype);
    t.ndim = static_cast<int32_t>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
    return t;
}

// One node prepared once on one device, every tensor in its own buffer; inputs can be rewritten
// between runs of the same graph. A host copy of every input is kept in step with the device, so
// the reference can be run on exactly what the device sees. An in-place op's output is its input 0.
class DeviceNode {
public:
    DeviceNode(const mnemo_backend_api* api, void* ctx, int32_t op, std::vector<HostTensor> inputs,
               const std::vector<int64_t>& iparams = {}, const std::vector<float>& fparams = {})
        : api_(api), ctx_(ctx), host_(std::move(inputs)) {
        node_.op = op;
        node_.n_inputs = static_cast<int32_t>(host_.size());
        for (size_t i = 0; i < iparams.size(); ++i) node_.iparams[i] = iparams[i];
        for (size_t i = 0; i < fparams.size(); ++i) node_.fparams[i] = fparams[i];
        std::vector<mnemo::TensorShape> shapes;
        for (size_t i = 0; i < host_.size(); ++i) {
            node_.inputs[i] = tensor_of(alloc(host_[i].bytes.size()), host_[i].dtype, host_[i].shape);
            upload(static_cast<int>(i));
            shapes.push_back(mnemo::shape_of(node_.inputs[i]));
        }
        if (mnemo::op_info(op).output_aliases_input0) {
            node_.output = node_.inputs[0];
        } else {
            const mnemo::TensorShape out = mnemo::infer_output(op, shapes, iparams, fparams);
            node_.output = tensor_of(alloc(out.nbytes()), out.dtype, std::vector<int64_t>(out.shape, out.shape + out.ndim));
        }
        if (!api_->supports_node(ctx_, &node_)) throw mnemo::Error(std::string(mnemo_op_name(op)) + ": not supported");
        mnemo_error err{};
        if (api_->graph_prepare(ctx_, &node_, 1, &graph_, &err) != MNEMO_OK)
            throw mnemo::Error(std::string("graph_prepare: ") + err.message);
    }
    ~DeviceNode() {
        if (graph_) api_->graph_release(ctx_, graph_);
        for (void* b : buffers_) api_->buffer_free(ctx_, b);
    }
    DeviceNode(const DeviceNode&) = delete;
    DeviceNode& operator=(const DeviceNode&) = delete;

    void write_i32(int input, const std::vector<int32_t>& v) {
        if (v.size() * 4 != host_[input].bytes.size()) throw mnemo::Error("write_i32: wrong element count");
        host_[input].bytes = bytes_of(v);
        upload(input);
    }

    // The run's status; `message` gets the error text ("" on success).
    mnemo_status run(std::string& message) {
        mnemo_error err{};
        const mnemo_status s = api_->graph_run(ctx_, graph_, nullptr, &err);
        message = s == MNEMO_OK ? "" : err.message;
        return s;
    }

    DType output_dtype() const { return static_cast<DType>(node_.output.dtype); }
    std::vector<uint8_t> output_bytes() const {
        std::vector<uint8_t> v(mnemo::shape_of(node_.output).nbytes());
        mnemo_error err{};
        if (api_->buffer_read(ctx_, node_.output.buffer, 0, v.data(), v.size(), &err) != MNEMO_OK)
            throw mnemo::Error(std::string("buffer_read: ") + err.message);
        return v;
    }
    template <typename T>
    std::vector<T> output() const { return values_of<T>(output_bytes()); }

    // The reference's output for the current inputs, computed on copies (the host inputs stay as
    // the device has them); throws mnemo::Error where the reference finds a bad index.
    std::vector<uint8_t> reference() const {
        std::vector<HostTensor> copy = host_;
        std::vector<uint8_t> out(mnemo::shape_of(node_.output).nbytes());
        mnemo_node ref = node_;
        for (size_t i = 0; i < copy.size(); ++i) {
            ref.inputs[i].buffer = copy[i].bytes.data();
            ref.inputs[i].offset = 0;
        }
        const bool in_place = mnemo::op_info(node_.op).output_aliases_input0;
        ref.output = in_place ? ref.inputs[0] : node_.output;
        if (!in_place) ref.output.buffer = out.data();
        mnemo::reference_compute(ref);
        return in_place ? copy[0].bytes : out;
    }

private:
    void* alloc(uint64_t bytes) {
        void* b = nullptr;
        mnemo_error err{};
        if (api_->buffer_alloc(ctx_, bytes > 0 ? bytes : 4, &b, &err) != MNEMO_OK) throw mnemo::Error(std::string("buffer_alloc: ") + err.message);
        buffers_.push_back(b);
        return b;
    }
    void upload(int input) {
        const std::vector<uint8_t>& bytes = host_[input].bytes;
        mnemo_error err{};
        if (!bytes.empty() && api_->buffer_write(ctx_, node_.inputs[input].buffer, 0, bytes.data(), bytes.size(), &err) != MNEMO_OK)
            throw mnemo::Error(std::string("buffer_write: ") + err.message);
    }

    const mnemo_backend_api* api_;
    void* ctx_;
    std::vector<HostTensor> host_;
    mnemo_node node_{};
    void* graph_ = nullptr;
    std::vector<void*> buffers_;
};

// Every fragment must occur in the message.
void expect_mentions(const std::string& message, const std::vector<std::string>& fragments) {
    for (const std::string& f : fragments) EXPECT_NE(message.find(f), std::string::npos) << "'" << f << "' missing in: " << message;
}

// The current inputs hold a bad index: the reference must agree that they do (else the test is
// wrong), and the run must fail naming every fragment.
void expect_rejected(DeviceNode& node, const std::vector<std::string>& fragments) {
    EXPECT_THROW(node.reference(), mnemo::Error) << "the test's bad index is not bad by the reference";
    std::string message;
    EXPECT_EQ(node.run(message), MNEMO_ERR_INVALID) << "a bad index must fail the run";
    expect_mentions(message, fragments);
}

// The current inputs are good: the run must succeed and match the reference. Integer outputs
// exactly; floats within a few f32 roundings of the reference's (double-accumulated) result.
void expect_runs(DeviceNode& node, double tolerance = 2e-6) {
    std::string message;
    ASSERT_EQ(node.run(message), MNEMO_OK) << "a good run after a bad one failed (status word not reset?): " << message;
    const std::vector<uint8_t> want = node.reference();
    if (node.output_dtype() == DType::I32) {
        EXPECT_EQ(node.output<int32_t>(), values_of<int32_t>(want));
        return;
    }
    const std::vector<float> got = node.output<float>(), ref = values_of<float>(want);
    ASSERT_EQ(got.size(), ref.size());
    double scale = 0.0;  // the output's largest magnitude: small elements are judged against it
    for (float r : ref) scale = std::max(scale, std::fabs(static_cast<double>(r)));
    size_t bad = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double diff = std::fabs(static_cast<double>(got[i]) - ref[i]);
        if (!(diff <= tolerance * (std::fabs(static_cast<double>(ref[i])) + scale)) && bad++ == 0)
            ADD_FAILURE() << "element " << i << " of " << ref.size() << ": got " << got[i] << ", reference " << ref[i];
    }
    EXPECT_EQ(bad, 0u) << "elements off the reference";
}

// Opens each Vulkan device in turn; SetUp skips when there is none.
// Parameter: the backend module ("vulkan", "cuda"). The CPU backend checks indices before it runs
// and words its messages differently; its errors are tested with its kernels.
class GpuBackendErrors : public testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        const mnemo::BackendModule* m = registry().find(GetParam());
        if (!m) GTEST_SKIP() << "the " << GetParam() << " backend module is not built (or failed to load) in " << MNEMO_BUILD_BIN;
        api_ = m->api;
        devices_ = api_->device_count();
        if (devices_ <= 0) {
            const char* why = api_->unavailable_reason ? api_->unavailable_reason() : nullptr;
            GTEST_SKIP() << "the " << GetParam() << " backend reports no devices (" << (why && *why ? why : "no driver or no usable device") << ")";
        }
    }

    // Calls body(api, ctx) on every device, closing each context afterwards.
    template <typename Body>
    void on_each_device(Body body) {
        for (int32_t d = 0; d < devices_; ++d) {
            mnemo_device_info info{};
            api_->device_info(d, &info);
            SCOPED_TRACE(GetParam() + std::to_string(d) + " (" + info.name + ")");
            void* ctx = nullptr;
            mnemo_backend_config cfg{};
            mnemo_error err{};
            ASSERT_EQ(api_->open(d, &cfg, &ctx, &err), MNEMO_OK) << err.message;
            try {
                body(api_, ctx);
            } catch (const mnemo::Error& e) {
                ADD_FAILURE() << e.what();
            }
            api_->close(ctx);
        }
    }

    const mnemo_backend_api* api_ = nullptr;
    int32_t devices_ = 0;
};

TEST_P(GpuBackendErrors, GetRowsBadIndex) {
    on_each_device([](const mnemo_backend_api* api, void* ctx) {
        const std::vector<float> table = {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32};  // R = 4, C = 3
        DeviceNode node(api, ctx, MNEMO_OP_GET_ROWS, {f32({4, 3}, table), i32({3}, {1, 7, 0})});
        expect_rejected(node, {"get_rows", "index 7", "0..3"});
        node.write_i32(1, {1, -2, 0});
        expect_rejected(node, {"get_rows", "index -2", "0..3"});
        node.write_i32(1, {3, 0, 1});
        expect_runs(node);
        EXPECT_EQ(node.output<float>(), (std::vector<float>{30, 31, 32, 0, 1, 2, 10, 11, 12}));
    });
}

TEST_P(GpuBackendErrors, KvStoreBadSequenceOrPosition) {
    on_each_device([](const mnemo_backend_api* api, void* ctx) {
        // cache [S=2, H=1, C=3, D=2] of zeros; one token.
        DeviceNode node(api, ctx, MNEMO_OP_KV_STORE,
                        {f32({2, 1, 3, 2}, std::vector<float>(12, 0.0f)), f32({1, 1, 2}, {5, 6}), i32({1}, {2}), i32({1}, {0})});
        expect_rejected(node, {"kv_store", "index 2", "0..1"});  // seq 2 of 2 sequences
        node.write_i32(2, {1});
        node.write_i32(3, {3});
        expect_rejected(node, {"kv_store", "index 3", "0..2"});  // pos 3 of 3 positions
        node.write_i32(3, {2});
        expect_runs(node);  // the bad runs skipped their token: the cache is still all zeros before this one
        EXPECT_EQ(node.output<float>(), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 6}));
    });
}

TEST_P(GpuBackendErrors, TakeAlongBadIndex) {
    on_each_device([](const mnemo_backend_api* api, void* ctx) {
        const std::vector<float> x = {0, 1, 2, 3, 4, 10, 11, 12, 13, 14};  // [2, D=5]
        DeviceNode node(api, ctx, MNEMO_OP_TAKE_ALONG, {f32({2, 5}, x), i32({2, 2}, {4, 0, 5, 1})});
        expect_rejected(node, {"take_along", "index 5", "0..4"});
        node.write_i32(1, {4, 0, -1, 1});
        expect_rejected(node, {"take_along", "index -1", "0..4"});
        node.write_i32(1, {4, 0, 3, 3});
        expect_runs(node);
        EXPECT_EQ(node.output<float>(), (std::vector<float>{4, 0, 13, 13}));
    });
}

TEST_P(GpuBackendErrors, MemIndexBadIndex) {
    on_each_device([](const mnemo_backend_api* api, void* ctx) {
        // value_num 4, offset 1, A = 5 rows, G = 2 groups, with groups: V = 8 virtual indices.
        const std::vector<int64_t> params = {4, 1, 5, 2, 1};
        const std::vector<int32_t> shuffle = {7, 6, 5, 4, 3, 2, 1, 0};
        {
            DeviceNode node(api, ctx, MNEMO_OP_MEM_INDEX, {i32({2}, {3, 8}), i32({8}, shuffle)}, params);
            expect_rejected(node, {"mem_index", "index 8", "0..7"});  // v outside the shuffle
            node.write_i32(1, {7, 6, -3, 4, 3, 2, 1, 0});
            node.write_i32(0, {2, 0});
            expect_rejected(node, {"mem_index", "index -3"});  // shuffles to a negative s
            node.write_i32(1, shuffle);
            node.write_i32(0, {0, 5});
            expect_runs(node);
            // s = 7: g 1, row (3 + 1) % 5 = 4 -> 9;  s = 2: g 0, row 3 -> 3.
            EXPECT_EQ(node.output<int32_t>(), (std::vector<int32_t>{9, 3}));
        }
        {
            DeviceNode node(api, ctx, MNEMO_OP_MEM_INDEX, {i32({3}, {0, 9, 1})}, params);
            expect_rejected(node, {"mem_index", "index 9", "0..7"});  // g = 9 / 4 = 2 >= G
            node.write_i32(0, {0, 7, 4});
            expect_runs(node);
            // s = 0: row 1 -> 1;  s = 7: g 1, row 4 -> 9;  s = 4: g 1, row 1 -> 6.
            EXPECT_EQ(node.output<int32_t>(), (std::vector<int32_t>{1, 9, 6}));
        }
    });
}

TEST_P(GpuBackendErrors, EmbeddingBagBadIndex) {
    on_each_device([](const mnemo_backend_api* api, void* ctx) {
        // table R = 3, C = 4; G = 2 groups, so indices 0..5; 2 bags of 3 entries; one weight per
        // entry, then one per entry and core (P = 2 cores of 2 columns each).
        for (const std::vector<int64_t>& w_shape : {std::vector<int64_t>{2, 3}, std::vector<int64_t>{2, 3, 2}}) {
            SCOPED_TRACE("w " + std::to_string(w_shape.size()) + "-D");
            DeviceNode node(api, ctx, MNEMO_OP_EMBEDDING_BAG, {wave({3, 4}), i32({2, 3}, {0, 6, 2, 1, 1, 4}), wave(w_shape, 0.5f, 1.0f)}, {2});
            expect_rejected(node, {"embedding_bag", "index 6", "0..5"});
            node.write_i32(1, {0, 5, 2, -1, 1, 4});
            expect_rejected(node, {"embedding_bag", "index -1", "0..5"});
            node.write_i32(1, {0, 5, 2, 3, 3, 4});  // a repeated index adds up
            expect_runs(node);
        }
    });
}

TEST_P(GpuBackendErrors, PeerGateNegativeIndex) {
    on_each_device([](const mnemo_backend_api* api, void* ctx) {
        // table R = 3, P = 4; 2 tokens of 2 entries, 3 scores per entry; GELU (erf). An index
        // >= R is not an error (it carries a group and reads row idx % R); a negative one is.
        DeviceNode node(api, ctx, MNEMO_OP_PEER_GATE,
                        {wave({3, 4}), i32({2, 2}, {0, -1, 2, 1}), wave({2, 4}, 1.0f, 2.0f), wave({2, 2, 3}, 0.5f, 1.0f)}, {1});
        expect_rejected(node, {"peer_gate", "index -1"});
        node.write_i32(1, {0, 2, -7, 1});
        expect_rejected(node, {"peer_gate", "index -7"});
        node.write_i32(1, {0, 7, 5, 1});
        expect_runs(node);
    });
}

TEST_P(GpuBackendErrors, HiveBadIndex) {
    on_each_device([](const mnemo_backend_api* api, void* ctx) {
        // bank R = 4, r = 3; 2 tokens x H = 2 heads x m = 2 entries; proj [H, r, Dh = 5].
        DeviceNode node(api, ctx, MNEMO_OP_HIVE,
                        {wave({4, 3}), i32({2, 2, 2}, {0, 1, 4, 2, 3, 3, 1, 0}), wave({2, 2, 2}, 0.5f, 1.0f), wave({2, 3, 5}, 1.0f, 2.0f)});
        expect_rejected(node, {"hive", "index 4", "0..3"});
        node.write_i32(1, {0, 1, 2, 2, 3, -2, 1, 0});
        expect_rejected(node, {"hive", "index -2", "0..3"});
        node.write_i32(1, {0, 1, 2, 2, 3, 3, 1, 0});
        expect_runs(node);
    });
}

TEST_P(GpuBackendErrors, PkPairScoresBadIndex) {
    on_each_device([](const mnemo_backend_api* api, void* ctx) {
        // Nk = 3 sub-keys per side, so pair indices 0..8; 1 token x H = 2 heads x k = 2 pairs.
        // Additive (rank 1, no cores), then Tucker (rank 2, two cores).
        for (int cores : {0, 2}) {
            SCOPED_TRACE(std::to_string(cores) + " cores");
            const int64_t rank = cores == 0 ? 1 : 2;
            std::vector<HostTensor> in = {wave({1, 4, 3, rank}), i32({1, 2, 2}, {0, 9, 4, 8})};
            for (int c = 0; c < cores; ++c) in.push_back(wave({2, rank, rank}, 1.0f, 1.0f + c));
            DeviceNode node(api, ctx, MNEMO_OP_PK_PAIR_SCORES, std::move(in));
            expect_rejected(node, {"pk_pair_scores", "index 9", "0..8"});
            node.write_i32(1, {0, 1, -1, 8});
            expect_rejected(node, {"pk_pair_scores", "index -1", "0..8"});
            node.write_i32(1, {0, 5, 4, 8});
            expect_runs(node);
        }
    });
}

TEST_P(GpuBackendErrors, MoeFfnBadExpert) {
    on_each_device([](const mnemo_backend_api* api, void* ctx) {
        // E = 3 experts, D = 6, F = 5, k = 2 choices; 1 token (2 slots: the mat-vec decode path)
        // and 20 tokens (40 slots, above the kernel's 16: the grouped prefill path).
        for (int64_t n_tok : {1, 20}) {
            SCOPED_TRACE(std::to_string(n_tok) + " tokens");
            std::vector<int32_t> good(static_cast<size_t>(n_tok * 2));
            for (size_t i = 0; i < good.size(); ++i) good[i] = static_cast<int32_t>((i * 7 + 1) % 3);
            std::vector<int32_t> bad = good;
            bad.back() = 3;
            DeviceNode node(api, ctx, MNEMO_OP_MOE_FFN,
                            {wave({n_tok, 6}), i32({n_tok, 2}, bad), wave({n_tok, 2}, 0.5f, 1.0f), wave({3, 5, 6}, 0.3f, 2.0f),
                             wave({3, 5, 6}, 0.4f, 3.0f), wave({3, 6, 5}, 0.35f, 4.0f)});
            expect_rejected(node, {"moe_ffn", "index 3", "0..2"});
            bad.back() = good.back();
            bad.front() = -1;
            node.write_i32(1, bad);
            expect_rejected(node, {"moe_ffn", "index -1", "0..2"});
            node.write_i32(1, good);
            expect_runs(node);
        }
    });
}

TEST_P(GpuBackendErrors, AttentionBadSequenceOrPosition) {
    on_each_device([](const mnemo_backend_api* api, void* ctx) {
        // 2 tokens, Hq = 2 heads over Hkv = 1, D = 8, Dv = 4, S = 2 sequences. A short cache
        // (one pass) and a long one (C >= 512: the split path with its combine pass). Values away
        // from zero, so that the averages over many positions do not cancel to almost nothing.
        for (int64_t c : {8, 512}) {
            SCOPED_TRACE("C = " + std::to_string(c));
            const std::string last = std::to_string(c - 1);
            DeviceNode node(api, ctx, MNEMO_OP_ATTENTION,
                            {wave({2, 2, 8}), wave({2, 1, c, 8}, 1.0f, 1.0f), wave({2, 1, c, 4}, 1.0f, 2.0f, 1.5f), i32({2}, {0, 2}),
                             i32({2}, {3, 1})},
                            {}, {0.35f});
            expect_rejected(node, {"attention", "index 2", "0..1"});  // seq 2 of 2 sequences
            node.write_i32(3, {-1, 1});
            expect_rejected(node, {"attention", "index -1", "0..1"});
            node.write_i32(3, {1, 0});
            node.write_i32(4, {static_cast<int32_t>(c), 1});
            expect_rejected(node, {"attention", "index " + std::to_string(c), "0.." + last});  // pos C
            node.write_i32(4, {3, -4});
            expect_rejected(node, {"attention", "index -4", "0.." + last});
            node.write_i32(4, {static_cast<int32_t>(c - 1), static_cast<int32_t>(c / 2)});  // the whole cache, and half
            expect_runs(node);
        }
    });
}

TEST_P(GpuBackendErrors, AttentionBadPrefix) {
    on_each_device([](const mnemo_backend_api* api, void* ctx) {
        // The attention node above plus a prefix of B = 3 blocks of M = 5 slots: a length outside
        // 0..5 (even of a block no query reads) and a block >= 3 are errors; a negative block is
        // none. Short cache and the split path (its combine pass must skip the same queries).
        for (int64_t c : {8, 512}) {
            SCOPED_TRACE("C = " + std::to_string(c));
            DeviceNode node(api, ctx, MNEMO_OP_ATTENTION,
                            {wave({2, 2, 8}), wave({2, 1, c, 8}, 1.0f, 1.0f), wave({2, 1, c, 4}, 1.0f, 2.0f, 1.5f), i32({2}, {0, 1}),
                             i32({2}, {3, static_cast<int32_t>(c - 1)}), wave({3, 1, 5, 8}, 1.0f, 3.0f),
                             wave({3, 1, 5, 4}, 1.0f, 4.0f, -1.0f), i32({3}, {5, 6, 0}), i32({2}, {1, -1})},
                            {}, {0.35f});
            expect_rejected(node, {"attention", "index 6", "0..5"});  // plen[1] = 6 > M, read by query 0
            node.write_i32(7, {5, 2, -1});
            expect_rejected(node, {"attention", "index -1", "0..5"});  // plen[2] = -1, read by no query
            node.write_i32(7, {5, 2, 0});
            node.write_i32(8, {3, 0});
            expect_rejected(node, {"attention", "index 3", "0..2"});  // block 3 of 3
            node.write_i32(8, {1, -7});
            expect_runs(node);
            node.write_i32(8, {2, 0});  // an empty block, and a full one
            expect_runs(node);
        }
        // One shared block (8 inputs): its length alone can be bad.
        DeviceNode node(api, ctx, MNEMO_OP_ATTENTION,
                        {wave({1, 2, 8}), wave({1, 1, 8, 8}, 1.0f, 1.0f), wave({1, 1, 8, 4}, 1.0f, 2.0f), i32({1}, {0}), i32({1}, {4}),
                         wave({1, 1, 5, 8}, 1.0f, 3.0f), wave({1, 1, 5, 4}, 1.0f, 4.0f), i32({1}, {7})},
                        {}, {0.35f});
        expect_rejected(node, {"attention", "index 7", "0..5"});
        node.write_i32(7, {4});
        expect_runs(node);
    });
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuBackendErrors, testing::Values(std::string("vulkan"), std::string("cuda")),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
