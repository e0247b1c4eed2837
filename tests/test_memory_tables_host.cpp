// Memory tables in host memory (SessionOptions::MemoryTables::Host, `--memory-tables host`): the
// memory layers' value tables stay in the mmapped checkpoint and the device reads the rows a step
// selects in place. On every backend with a device, a memory-layer model gives exactly the logits
// it gives with its tables on the device (same kernels, same bytes), and says how many bytes stay
// in host memory. On Vulkan the discrete-GPU path is taken too (MNEMO_VK_FORCE_STAGING=1: every
// other weight is copied into device buffers, the tables are imported through
// VK_EXT_external_memory_host), and NVIDIA's (MNEMO_VK_COPY_HOST_MEMORY=1: the tables copied once
// into host-visible memory, since that driver refuses imports of file pages). A model without
// tables keeps everything on the device, with a warning.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "model_test_util.hpp"
#include "mnemo/session/session.hpp"
#include "process_util.hpp"
#include "scoped_env.hpp"

using namespace mnemo;

namespace {

std::unique_ptr<Session> open_on(const std::string& model, const std::string& backend, SessionOptions::MemoryTables where,
                                 std::vector<std::string>* warnings = nullptr) {
    SessionOptions o;
    o.model_dir = test::model_dir(model);
    o.backend = backend;
    o.n_ctx = 64;
    o.n_threads = 2;
    o.memory_tables = where;
    o.backends = &test::backends();
    o.plugins = &test::plugins();
    if (warnings) o.warn = [warnings](const std::string& m) { warnings->push_back(m); };
    return Session::open(o);
}

bool has_device(const std::string& backend) {
    const BackendModule* b = test::backends().find(backend);
    return b && b->api->device_count() > 0;
}

struct Case {
    std::string backend, model;
    const char* force_staging;  // MNEMO_VK_FORCE_STAGING for the run (nullptr: unset)
    const char* copy_host;      // MNEMO_VK_COPY_HOST_MEMORY: tables copied into host-visible memory, as on NVIDIA
    uint64_t table_bytes;       // f32 bytes of the model's tables (EMBEDDING_BAG / PEER_GATE / HIVE)
};

class MemoryTablesHost : public ::testing::TestWithParam<Case> {};

TEST_P(MemoryTablesHost, GiveTheLogitsOfTablesOnTheDevice) {
    const Case& c = GetParam();
    if (!has_device(c.backend)) GTEST_SKIP() << c.backend << ": no device";
    test::ScopedEnv staging("MNEMO_VK_FORCE_STAGING", c.force_staging);
    test::ScopedEnv copy_host("MNEMO_VK_COPY_HOST_MEMORY", c.copy_host);
    const std::vector<int32_t> ids = test::read_ids(test::model_dir(c.model) + "/golden_ids.txt");
    auto on_device = open_on(c.model, c.backend, SessionOptions::MemoryTables::Device);
    auto in_host = open_on(c.model, c.backend, SessionOptions::MemoryTables::Host);
    EXPECT_FALSE(on_device->summary().memory_tables_in_host);
    ASSERT_TRUE(in_host->summary().memory_tables_in_host);
    EXPECT_EQ(in_host->summary().memory_table_bytes, c.table_bytes);
    EXPECT_GE(in_host->summary().device_host_bytes, c.table_bytes) << "the tables are host memory used in place";
    const std::vector<float> a = on_device->append(0, ids, /*all_logits=*/true);
    const std::vector<float> b = in_host->append(0, ids, /*all_logits=*/true);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(a, b) << "the same kernels on the same bytes, wherever the bytes live";
    // Decode steps read the tables too (the rows of new tokens).
    EXPECT_EQ(on_device->decode({{ids[1], static_cast<int32_t>(ids.size()), 0, true}}),
              in_host->decode({{ids[1], static_cast<int32_t>(ids.size()), 0, true}}));
}

// Table bytes, all f32: ultramem_v2-tiny's values and pre-values (64 x 8 each), pkm-tiny's two
// memories' values (EMBEDDING_BAG: 8^2 x dim 32 each), memory_plus_peer-tiny's two PEER tables
// (PEER_GATE: 16^2 x 32 each).
std::vector<Case> cases() {
    std::vector<Case> out;
    for (const std::string model : {"ultramem_v2-tiny-f32", "pkm-tiny-f32", "memory_plus_peer-tiny-f32"}) {
        const uint64_t bytes = model == "ultramem_v2-tiny-f32" ? 2 * 64 * 8 * 4 : model == "pkm-tiny-f32" ? 2 * 8 * 8 * 32 * 4 : 2 * 16 * 16 * 32 * 4;
        out.push_back({"cpu", model, nullptr, nullptr, bytes});
        out.push_back({"vulkan", model, nullptr, nullptr, bytes});
        out.push_back({"vulkan", model, "1", nullptr, bytes});
        out.push_back({"vulkan", model, "1", "1", bytes});
        out.push_back({"cuda", model, nullptr, nullptr, bytes});
    }
    return out;
}

INSTANTIATE_TEST_SUITE_P(Backends, MemoryTablesHost, ::testing::ValuesIn(cases()), [](const auto& info) {
    return test::param_name(info.param.backend + (info.param.force_staging ? "_staging_" : "_") +
                            (info.param.copy_host ? "copied_" : "") + info.param.model);
});

TEST(MemoryTablesHostModel, WithoutTablesWarnsAndKeepsTheWeightsOnTheDevice) {
    std::vector<std::string> warnings;
    auto s = open_on("llama-tiny-f32", "cpu", SessionOptions::MemoryTables::Host, &warnings);
    EXPECT_FALSE(s->summary().memory_tables_in_host);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("has no memory-layer tables"), std::string::npos) << warnings[0];
}

// The CLI: every model-loading command takes the flag; `mnemo info` says what stayed in host
// memory; another value is a usage error naming the two places.
TEST(MemoryTablesHostCli, InfoSaysWhatStaysInHostMemoryAndABadValueIsAUsageError) {
    const std::string model = mnemo::testing::shell_quote(test::model_dir("ultramem_v2-tiny-f32"));
    EXPECT_TRUE(mnemo::testing::exited_with(mnemo::testing::run_mnemo("info -m " + model + " --memory-tables host"), 0,
                                            {"memory tables:  4096 bytes (4.00 KiB) in host memory"}));
    const auto quiet = mnemo::testing::run_mnemo("info -m " + model);
    EXPECT_TRUE(mnemo::testing::exited_with(quiet, 0));
    EXPECT_EQ(quiet.output.find("memory tables:"), std::string::npos) << quiet.output;
    EXPECT_TRUE(mnemo::testing::exited_with(mnemo::testing::run_mnemo("run -m " + model + " -p hi -n 1 --memory-tables gpu"), 2,
                                            {"--memory-tables: 'gpu' is not a place; expected device or host"}));
}

}  // namespace
