// Bad indices on the Vulkan backend. Indices are data, so the shaders find a bad one only while
// the graph runs: they report it through the context's status word and skip the entry, and
// graph_run must then fail with MNEMO_ERR_INVALID and a message naming the op and the value.
// The next run of the same prepared graph, with good indices, must succeed: the status word is
// reset before every submission. Runs on every Vulkan device; skipped (with the reason) when the
// module is not built or reports no device.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/ops.hpp"
#include "mnemo/registry.hpp"

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
HostTensor f32(std::vector<int64_t> shape, const std::vector<float>& v) { return {DType::F32, std::move(shape), bytes_of(v)}; }
HostTensor i32(std::vector<int64_t> shape, const std::vector<int32_t>& v) { return {DType::I32, std::move(shape), bytes_of(v)}; }

mnemo_tensor tensor_of(void* buffer, DType dtype, const std::vector<int64_t>& shape) {
    mnemo_tensor t{};
    t.buffer = buffer;
    t.dtype = static_cast<int32_t>(dtype);
    t.ndim = static_cast<int32_t>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
    return t;
}

// One node prepared once on one device, every tensor in its own buffer; inputs can be rewritten
// between runs of the same graph. An in-place op's output is its input 0.
class DeviceNode {
public:
    DeviceNode(const mnemo_backend_api* api, void* ctx, int32_t op, const std::vector<HostTensor>& inputs,
               const std::vector<int64_t>& iparams = {})
        : api_(api), ctx_(ctx) {
        node_.op = op;
        node_.n_inputs = static_cast<int32_t>(inputs.size());
        for (size_t i = 0; i < iparams.size(); ++i) node_.iparams[i] = iparams[i];
        std::vector<mnemo::TensorShape> shapes;
        for (size_t i = 0; i < inputs.size(); ++i) {
            node_.inputs[i] = tensor_of(alloc(inputs[i].bytes.size()), inputs[i].dtype, inputs[i].shape);
            write(static_cast<int>(i), inputs[i].bytes);
            shapes.push_back(mnemo::shape_of(node_.inputs[i]));
        }
        if (mnemo::op_info(op).output_aliases_input0) {
            node_.output = node_.inputs[0];
        } else {
            const mnemo::TensorShape out = mnemo::infer_output(op, shapes, iparams, {});
            node_.output = node_.inputs[0];
            node_.output.buffer = alloc(out.nbytes());
            node_.output.dtype = static_cast<int32_t>(out.dtype);
            node_.output.ndim = out.ndim;
            for (int32_t i = 0; i < out.ndim; ++i) node_.output.shape[i] = out.shape[i];
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

    void write(int input, const std::vector<uint8_t>& bytes) {
        mnemo_error err{};
        if (!bytes.empty() && api_->buffer_write(ctx_, node_.inputs[input].buffer, 0, bytes.data(), bytes.size(), &err) != MNEMO_OK)
            throw mnemo::Error(std::string("buffer_write: ") + err.message);
    }
    void write_i32(int input, const std::vector<int32_t>& v) { write(input, bytes_of(v)); }

    // The run's status; `message` gets the error text ("" on success).
    mnemo_status run(std::string& message) {
        mnemo_error err{};
        const mnemo_status s = api_->graph_run(ctx_, graph_, nullptr, &err);
        message = s == MNEMO_OK ? "" : err.message;
        return s;
    }

    template <typename T>
    std::vector<T> output() const {
        std::vector<T> v(static_cast<size_t>(mnemo::shape_of(node_.output).numel()));
        mnemo_error err{};
        if (api_->buffer_read(ctx_, node_.output.buffer, 0, v.data(), v.size() * sizeof(T), &err) != MNEMO_OK)
            throw mnemo::Error(std::string("buffer_read: ") + err.message);
        return v;
    }

private:
    void* alloc(uint64_t bytes) {
        void* b = nullptr;
        mnemo_error err{};
        if (api_->buffer_alloc(ctx_, bytes > 0 ? bytes : 4, &b, &err) != MNEMO_OK) throw mnemo::Error(std::string("buffer_alloc: ") + err.message);
        buffers_.push_back(b);
        return b;
    }

    const mnemo_backend_api* api_;
    void* ctx_;
    mnemo_node node_{};
    void* graph_ = nullptr;
    std::vector<void*> buffers_;
};

// Every fragment must occur in the message.
void expect_mentions(const std::string& message, const std::vector<std::string>& fragments) {
    for (const std::string& f : fragments) EXPECT_NE(message.find(f), std::string::npos) << "'" << f << "' missing in: " << message;
}

// Runs the graph expecting the bad-index error, then again expecting success.
void expect_rejected(DeviceNode& node, const std::vector<std::string>& fragments) {
    std::string message;
    EXPECT_EQ(node.run(message), MNEMO_ERR_INVALID) << "a bad index must fail the run";
    expect_mentions(message, fragments);
}
void expect_runs(DeviceNode& node) {
    std::string message;
    EXPECT_EQ(node.run(message), MNEMO_OK) << "a good run after a bad one failed (status word not reset?): " << message;
}

// Opens each Vulkan device in turn; SetUp skips when there is none.
class VulkanErrors : public testing::Test {
protected:
    void SetUp() override {
        const mnemo::BackendModule* m = registry().find("vulkan");
        if (!m) GTEST_SKIP() << "the vulkan backend module is not built (or failed to load) in " << MNEMO_BUILD_BIN;
        api_ = m->api;
        devices_ = api_->device_count();
        if (devices_ <= 0) GTEST_SKIP() << "the vulkan backend reports no devices (no driver or no usable device)";
    }

    // Calls body(api, ctx) on every device, closing each context afterwards.
    template <typename Body>
    void on_each_device(Body body) {
        for (int32_t d = 0; d < devices_; ++d) {
            mnemo_device_info info{};
            api_->device_info(d, &info);
            SCOPED_TRACE("vulkan" + std::to_string(d) + " (" + info.name + ")");
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

TEST_F(VulkanErrors, GetRowsBadIndex) {
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

TEST_F(VulkanErrors, KvStoreBadSequenceOrPosition) {
    on_each_device([](const mnemo_backend_api* api, void* ctx) {
        // cache [S=2, H=1, C=3, D=2] of zeros; one token.
        DeviceNode node(api, ctx, MNEMO_OP_KV_STORE,
                        {f32({2, 1, 3, 2}, std::vector<float>(12, 0.0f)), f32({1, 1, 2}, {5, 6}), i32({1}, {2}), i32({1}, {0})});
        expect_rejected(node, {"kv_store", "index 2", "0..1"});  // seq 2 of 2 sequences
        node.write_i32(2, {1});
        node.write_i32(3, {3});
        expect_rejected(node, {"kv_store", "index 3", "0..2"});  // pos 3 of 3 positions
        node.write_i32(3, {2});
        expect_runs(node);
        EXPECT_EQ(node.output<float>(), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 6}));
    });
}

TEST_F(VulkanErrors, TakeAlongBadIndex) {
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

TEST_F(VulkanErrors, MemIndexBadIndex) {
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

}  // namespace
