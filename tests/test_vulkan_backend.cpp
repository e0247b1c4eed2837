// The Vulkan backend's runtime, through its C API: device listing and filtering, buffers on both
// the mapped (unified memory) and staged (discrete GPU) paths, the pipeline cache on disk, graphs
// whose nodes depend on each other (derived barriers), and per-node timestamps. The ops themselves
// are covered by the conformance harness (test_backend_ops.cpp). Weights imported in place on
// unified memory (VK_EXT_external_memory_host) are checked through the C API and through a whole
// session. Every test is skipped, with the reason, when the module is not built or reports no
// device.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "mnemo/modules/registry.hpp"
#include "process_util.hpp"
#include "model_test_util.hpp"
#include "scoped_env.hpp"

namespace fs = std::filesystem;

namespace {

mnemo::BackendRegistry& registry() {
    static mnemo::BackendRegistry r({MNEMO_BUILD_BIN});
    return r;
}

const mnemo_backend_api* vulkan_or_skip_reason(std::string& reason) {
    const mnemo::BackendModule* m = registry().find("vulkan");
    if (!m) {
        reason = "the Vulkan backend module is not built (MNEMO_VULKAN=OFF or glslc missing)";
        return nullptr;
    }
    if (m->api->device_count() <= 0) {
        reason = "the Vulkan backend reports no devices (no driver; install mesa-vulkan-drivers for lavapipe)";
        return nullptr;
    }
    return m->api;
}

#define VULKAN_OR_SKIP(api)                              \
    std::string skip_reason;                             \
    const mnemo_backend_api* api = vulkan_or_skip_reason(skip_reason); \
    if (!api) {                                          \
        GTEST_SKIP() << skip_reason;                     \
    }                                                    \
    static_assert(true, "")

// A context opened (and closed) by the test, with the environment the test asked for.
class Ctx {
public:
    explicit Ctx(const mnemo_backend_api* api) : api_(api) {
        mnemo_error err{};
        mnemo_backend_config cfg{};
        if (api->open(0, &cfg, &ctx_, &err) != MNEMO_OK) ctx_ = nullptr, error_ = err.message;
    }
    ~Ctx() {
        for (void* b : buffers_) api_->buffer_free(ctx_, b);
        if (ctx_) api_->close(ctx_);
    }
    void* get() const { return ctx_; }
    const std::string& error() const { return error_; }
    void* buffer(uint64_t bytes) {
        void* b = nullptr;
        mnemo_error err{};
        EXPECT_EQ(api_->buffer_alloc(ctx_, bytes, &b, &err), MNEMO_OK) << err.message;
        buffers_.push_back(b);
        return b;
    }

private:
    const mnemo_backend_api* api_;
    void* ctx_ = nullptr;
    std::string error_;
    std::vector<void*> buffers_;
};

mnemo_tensor f32_tensor(void* buffer, uint64_t offset, int64_t n) {
    mnemo_tensor t{};
    t.buffer = buffer;
    t.offset = offset;
    t.dtype = MNEMO_DTYPE_F32;
    t.ndim = 1;
    t.shape[0] = n;
    return t;
}

mnemo_node binary(int32_t op, mnemo_tensor a, mnemo_tensor b, mnemo_tensor out) {
    mnemo_node n{};
    n.op = op;
    n.n_inputs = 2;
    n.inputs[0] = a;
    n.inputs[1] = b;
    n.output = out;
    return n;
}

// Writes a pattern over a buffer larger than the staging ring (32 MiB), reads it back whole
// and in pieces at odd offsets, and checks out-of-range accesses are refused with a message.
void round_trip(const mnemo_backend_api* api) {
    Ctx ctx(api);
    ASSERT_NE(ctx.get(), nullptr) << ctx.error();
    const uint64_t bytes = (40ull << 20) + 12;
    void* b = ctx.buffer(bytes);
    std::vector<uint8_t> data(bytes);
    for (uint64_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
    mnemo_error err{};
    ASSERT_EQ(api->buffer_write(ctx.get(), b, 0, data.data(), bytes, &err), MNEMO_OK) << err.message;
    std::vector<uint8_t> back(bytes, 0);
    ASSERT_EQ(api->buffer_read(ctx.get(), b, 0, back.data(), bytes, &err), MNEMO_OK) << err.message;
    EXPECT_TRUE(back == data);
    // A small write in the middle (staged writes are batched until the next read or run).
    const uint8_t patch[5] = {1, 2, 3, 4, 5};
    ASSERT_EQ(api->buffer_write(ctx.get(), b, 1000003, patch, 5, &err), MNEMO_OK) << err.message;
    uint8_t piece[9] = {};
    ASSERT_EQ(api->buffer_read(ctx.get(), b, 1000001, piece, 9, &err), MNEMO_OK) << err.message;
    EXPECT_EQ(piece[0], data[1000001]);
    EXPECT_EQ(piece[2], 1);
    EXPECT_EQ(piece[6], 5);
    EXPECT_EQ(piece[8], data[1000009]);
    EXPECT_NE(api->buffer_write(ctx.get(), b, bytes - 2, patch, 5, &err), MNEMO_OK);
    EXPECT_NE(std::string(err.message).find("outside"), std::string::npos) << err.message;
    EXPECT_NE(api->buffer_read(ctx.get(), b, bytes + 1, piece, 1, &err), MNEMO_OK);
}

using mnemo::test::ScopedEnv;

// x + y (n floats at the start of buffers x and y) by the device's ADD into a new buffer, read
// back; empty, with the failure recorded, when a call fails.
std::vector<float> add_on_device(const mnemo_backend_api* api, Ctx& ctx, void* x, void* y, int64_t n) {
    void* out = ctx.buffer(static_cast<uint64_t>(n) * 4);
    const mnemo_node node = binary(MNEMO_OP_ADD, f32_tensor(x, 0, n), f32_tensor(y, 0, n), f32_tensor(out, 0, n));
    void* graph = nullptr;
    mnemo_error err{};
    std::vector<float> got(static_cast<size_t>(n));
    if (api->graph_prepare(ctx.get(), &node, 1, &graph, &err) != MNEMO_OK || api->graph_run(ctx.get(), graph, nullptr, &err) != MNEMO_OK ||
        api->buffer_read(ctx.get(), out, 0, got.data(), static_cast<uint64_t>(n) * 4, &err) != MNEMO_OK) {
        ADD_FAILURE() << err.message;
        got.clear();
    }
    if (graph) api->graph_release(ctx.get(), graph);
    return got;
}

bool device0_imports(const mnemo_backend_api* api) {
    mnemo_device_info info{};
    return api->device_info(0, &info) == MNEMO_OK && (info.caps & MNEMO_CAP_IMPORT_HOST);
}

// A read-only private file mapping, as the engine maps checkpoints (safetensors.cpp).
class ReadOnlyFile {
public:
    explicit ReadOnlyFile(const std::vector<uint8_t>& bytes) {
        path_ = (fs::temp_directory_path() / ("mnemo-vk-import-" + std::to_string(::getpid()) + ".bin")).string();
        std::ofstream(path_, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        const int fd = ::open(path_.c_str(), O_RDONLY);
        if (fd < 0) return;
        void* p = ::mmap(nullptr, bytes.size(), PROT_READ, MAP_PRIVATE, fd, 0);
        ::close(fd);
        if (p != MAP_FAILED) data_ = static_cast<uint8_t*>(p), size_ = bytes.size();
    }
    ~ReadOnlyFile() {
        if (data_) ::munmap(data_, size_);
        std::remove(path_.c_str());
    }
    uint8_t* data() const { return data_; }

private:
    std::string path_;
    uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace

TEST(VulkanBackend, DevicesAreDescribed) {
    VULKAN_OR_SKIP(api);
    for (int32_t d = 0; d < api->device_count(); ++d) {
        mnemo_device_info info{};
        ASSERT_EQ(api->device_info(d, &info), MNEMO_OK);
        EXPECT_GT(std::strlen(info.name), 0u);
        const std::string desc = info.description;
        EXPECT_NE(desc.find("Vulkan 1."), std::string::npos) << desc;
        EXPECT_NE(desc.find("subgroup"), std::string::npos) << desc;
        EXPECT_NE(desc.find("uuid"), std::string::npos) << desc;
        EXPECT_TRUE(info.caps & MNEMO_CAP_F16);
        EXPECT_TRUE(info.caps & MNEMO_CAP_QUANT);
    }
    // Device 0 is the automatic choice: never a CPU implementation while a GPU is listed.
    bool any_gpu = false;
    for (int32_t d = 0; d < api->device_count(); ++d) {
        mnemo_device_info info{};
        api->device_info(d, &info);
        any_gpu = any_gpu || info.type == MNEMO_DEVICE_GPU || info.type == MNEMO_DEVICE_IGPU;
    }
    mnemo_device_info first{};
    api->device_info(0, &first);
    if (any_gpu) {
        EXPECT_NE(first.type, MNEMO_DEVICE_CPU);
    }
    mnemo_device_info none{};
    EXPECT_NE(api->device_info(api->device_count(), &none), MNEMO_OK);
}

TEST(VulkanBackend, OpeningAMissingDeviceFailsWithAMessage) {
    VULKAN_OR_SKIP(api);
    void* ctx = nullptr;
    mnemo_error err{};
    mnemo_backend_config cfg{};
    EXPECT_NE(api->open(api->device_count() + 3, &cfg, &ctx, &err), MNEMO_OK);
    EXPECT_NE(std::string(err.message).find("does not exist"), std::string::npos) << err.message;
}

TEST(VulkanBackend, BuffersRoundTripMapped) {
    VULKAN_OR_SKIP(api);
    ScopedEnv env("MNEMO_VK_FORCE_STAGING", nullptr);
    round_trip(api);
}

TEST(VulkanBackend, BuffersRoundTripThroughStaging) {
    VULKAN_OR_SKIP(api);
    ScopedEnv env("MNEMO_VK_FORCE_STAGING", "1");
    round_trip(api);
}

// y = (a + b) * b; z = y + a; then a = z * b overwrites an input read earlier (write after
// read), all in one graph: only correct when barriers separate the dependent dispatches.
TEST(VulkanBackend, DependentNodesInOneGraph) {
    VULKAN_OR_SKIP(api);
    for (const char* staging : {"0", "1"}) {
        ScopedEnv env("MNEMO_VK_FORCE_STAGING", staging);
        Ctx ctx(api);
        ASSERT_NE(ctx.get(), nullptr) << ctx.error();
        const int64_t n = 100003;
        void* buf = ctx.buffer(static_cast<uint64_t>(n) * 4 * 4 + 1024);
        const mnemo_tensor a = f32_tensor(buf, 0, n), b = f32_tensor(buf, n * 4, n), y = f32_tensor(buf, 2 * n * 4 + 256, n),
                           z = f32_tensor(buf, 3 * n * 4 + 512, n);
        std::vector<float> ha(static_cast<size_t>(n)), hb(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) ha[i] = 0.001f * static_cast<float>(i % 977), hb[i] = 1.0f + 0.0001f * static_cast<float>(i % 313);
        mnemo_error err{};
        ASSERT_EQ(api->buffer_write(ctx.get(), buf, 0, ha.data(), n * 4, &err), MNEMO_OK);
        ASSERT_EQ(api->buffer_write(ctx.get(), buf, n * 4, hb.data(), n * 4, &err), MNEMO_OK);
        const mnemo_node nodes[4] = {binary(MNEMO_OP_ADD, a, b, y), binary(MNEMO_OP_MUL, y, b, y),
                                     binary(MNEMO_OP_ADD, y, a, z), binary(MNEMO_OP_MUL, z, b, a)};
        void* graph = nullptr;
        ASSERT_EQ(api->graph_prepare(ctx.get(), nodes, 4, &graph, &err), MNEMO_OK) << err.message;
        std::vector<uint64_t> timings(4, 0);
        ASSERT_EQ(api->graph_run(ctx.get(), graph, timings.data(), &err), MNEMO_OK) << err.message;
        std::vector<float> out(static_cast<size_t>(n));
        ASSERT_EQ(api->buffer_read(ctx.get(), buf, 0, out.data(), n * 4, &err), MNEMO_OK);
        for (int64_t i = 0; i < n; i += 997) {
            const float yy = (ha[i] + hb[i]) * hb[i];
            EXPECT_FLOAT_EQ(out[i], (yy + ha[i]) * hb[i]) << "element " << i << " staging=" << staging;
        }
        mnemo_device_info info{};
        api->device_info(0, &info);
        if (info.caps & MNEMO_CAP_PROFILE) {
            EXPECT_GT(std::accumulate(timings.begin(), timings.end(), uint64_t{0}), 0u) << "per-node timestamps were not filled";
        }
        api->graph_release(ctx.get(), graph);
    }
}

TEST(VulkanBackend, PipelineCacheIsSavedAndABadFileIsIgnored) {
    VULKAN_OR_SKIP(api);
    const fs::path dir = fs::temp_directory_path() / ("mnemo-vk-cache-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    ScopedEnv env("MNEMO_VK_CACHE_DIR", dir.c_str());
    auto run_add = [&] {
        Ctx ctx(api);
        ASSERT_NE(ctx.get(), nullptr) << ctx.error();
        void* buf = ctx.buffer(3 * 64 * 4);
        const mnemo_node node = binary(MNEMO_OP_ADD, f32_tensor(buf, 0, 64), f32_tensor(buf, 256, 64), f32_tensor(buf, 512, 64));
        std::vector<float> ones(128, 1.0f);
        mnemo_error err{};
        ASSERT_EQ(api->buffer_write(ctx.get(), buf, 0, ones.data(), 512, &err), MNEMO_OK);
        void* graph = nullptr;
        ASSERT_EQ(api->graph_prepare(ctx.get(), &node, 1, &graph, &err), MNEMO_OK) << err.message;
        ASSERT_EQ(api->graph_run(ctx.get(), graph, nullptr, &err), MNEMO_OK) << err.message;
        float two = 0.0f;
        ASSERT_EQ(api->buffer_read(ctx.get(), buf, 512 + 63 * 4, &two, 4, &err), MNEMO_OK);
        EXPECT_EQ(two, 2.0f);
        api->graph_release(ctx.get(), graph);
    };
    run_add();
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
    ASSERT_EQ(files.size(), 1u) << "expected one cache file in " << dir;
    EXPECT_NE(files[0].filename().string().find("vulkan-pipelines-"), std::string::npos);
    EXPECT_GT(fs::file_size(files[0]), 0u);
    // A damaged cache (truncated, garbage) must not stop the backend: the driver ignores it.
    {
        std::ofstream f(files[0], std::ios::binary | std::ios::trunc);
        f << "not a pipeline cache";
    }
    run_add();
    fs::remove_all(dir);
}

TEST(VulkanBackend, VisibleDevicesFilter) {
    VULKAN_OR_SKIP(api);
    // The filter applies when the instance is created (once per process): ask a fresh process.
    const std::string out = mnemo::testing::run_mnemo("devices", "/dev/null", "MNEMO_VK_VISIBLE_DEVICES=99 ").output;
    const size_t at = out.find("vulkan");
    ASSERT_NE(at, std::string::npos) << out;
    EXPECT_NE(out.find("no devices", at), std::string::npos) << out;
}

// Two imports of a read-only file mapping at offsets that are not page aligned and share a page:
// a kernel reads both in place (the device address and barrier range include the offset within
// the aligned import), buffer_read copies from them, and buffer_write is refused. With
// MNEMO_VK_FORCE_STAGING=1 (the discrete-GPU path) weights are not imported (no
// MNEMO_CAP_IMPORT_HOST), but host memory still maps where VK_EXT_external_memory_host exists
// (MNEMO_CAP_MAP_HOST: memory tables kept in host memory, --memory-tables host) and a kernel
// reads it the same.
TEST(VulkanBackend, ImportedHostMemoryIsReadInPlace) {
    VULKAN_OR_SKIP(api);
    const int64_t n = 3000;  // 12000 bytes: each import spans several pages, and they overlap
    const uint64_t off_a = 4100, off_b = 8;
    std::vector<float> pattern(5000);
    for (size_t k = 0; k < pattern.size(); ++k) pattern[k] = 0.5f * static_cast<float>(k % 101) + static_cast<float>(k % 7);
    std::vector<uint8_t> bytes(pattern.size() * 4);
    std::memcpy(bytes.data(), pattern.data(), bytes.size());
    const float* a = pattern.data() + off_a / 4;
    const float* b = pattern.data() + off_b / 4;
    ReadOnlyFile file(bytes);
    ASSERT_NE(file.data(), nullptr);

    {
        ScopedEnv env("MNEMO_VK_FORCE_STAGING", "1");
        EXPECT_FALSE(device0_imports(api));
        mnemo_device_info info{};
        ASSERT_EQ(api->device_info(0, &info), MNEMO_OK);
        Ctx ctx(api);
        ASSERT_NE(ctx.get(), nullptr) << ctx.error();
        void* h = nullptr;
        mnemo_error err{};
        if (!(info.caps & MNEMO_CAP_MAP_HOST)) {
            EXPECT_NE(api->buffer_from_host(ctx.get(), file.data() + off_a, n * 4, &h, &err), MNEMO_OK);
            EXPECT_GT(std::strlen(err.message), 0u);
        } else {
            ASSERT_EQ(api->buffer_from_host(ctx.get(), file.data() + off_a, n * 4, &h, &err), MNEMO_OK) << err.message;
            const std::vector<float> got = add_on_device(api, ctx, h, h, n);
            ASSERT_EQ(got.size(), static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], a[i] + a[i]) << "element " << i;
        }
    }

    ScopedEnv env("MNEMO_VK_FORCE_STAGING", nullptr);
    if (!device0_imports(api)) GTEST_SKIP() << "device 0 does not import host memory (discrete, or no VK_EXT_external_memory_host)";
    Ctx ctx(api);
    ASSERT_NE(ctx.get(), nullptr) << ctx.error();
    void *ha = nullptr, *hb = nullptr;
    mnemo_error err{};
    ASSERT_EQ(api->buffer_from_host(ctx.get(), file.data() + off_a, n * 4, &ha, &err), MNEMO_OK) << err.message;
    ASSERT_EQ(api->buffer_from_host(ctx.get(), file.data() + off_b, n * 4, &hb, &err), MNEMO_OK) << err.message;
    const std::vector<float> got = add_on_device(api, ctx, ha, hb, n);
    ASSERT_EQ(got.size(), static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], a[i] + b[i]) << "element " << i;
    float piece[3] = {};
    ASSERT_EQ(api->buffer_read(ctx.get(), ha, 40, piece, 12, &err), MNEMO_OK) << err.message;
    EXPECT_EQ(piece[0], a[10]);
    EXPECT_EQ(piece[2], a[12]);
    EXPECT_NE(api->buffer_write(ctx.get(), ha, 0, piece, 4, &err), MNEMO_OK);
    EXPECT_NE(std::string(err.message).find("imported"), std::string::npos) << err.message;
    api->buffer_free(ctx.get(), ha);
    api->buffer_free(ctx.get(), hb);
}

// A whole model: with imports its weights stay in the mmapped checkpoint (the session counts them
// as resident host memory) and give the same logits as the staged copies of the discrete-GPU path.
TEST(VulkanBackend, SessionWeightsImportedMatchStagedUpload) {
    VULKAN_OR_SKIP(api);
    for (const char* model : {"llama-tiny-f32", "llama-tiny-bf16"}) {
        const std::string dir = mnemo::test::model_dir(model);
        const std::vector<int32_t> ids = mnemo::test::read_ids(dir + "/golden_ids.txt");
        auto run = [&](const char* staging, mnemo::ModelSummary* summary) {
            ScopedEnv env("MNEMO_VK_FORCE_STAGING", staging);
            mnemo::SessionOptions o;
            o.model_dir = dir;
            o.backend = "vulkan";
            o.n_ctx = 64;
            o.backends = &mnemo::test::backends();
            o.plugins = &mnemo::test::plugins();
            auto session = mnemo::Session::open(o);
            std::vector<float> logits = session->append(0, ids, true);
            *summary = session->summary();
            return logits;
        };
        mnemo::ModelSummary imported, staged;
        const bool imports = device0_imports(api);
        const std::vector<float> a = run(nullptr, &imported);
        const std::vector<float> b = run("1", &staged);
        ASSERT_EQ(a.size(), b.size());
        ASSERT_FALSE(a.empty());
        // Same weights, same kernels: only where the weight bytes live differs.
        EXPECT_EQ(mnemo::test::max_rel_error(a, b), 0.0) << model;
        EXPECT_EQ(staged.device_host_bytes, 0u) << model;
        EXPECT_EQ(imported.device_bytes, staged.device_bytes) << model;
        const uint64_t want_host = imports ? imported.weight_bytes : 0;
        EXPECT_EQ(imported.device_host_bytes, want_host) << model << (imports ? ": weights were copied, not imported" : "");
    }
}
