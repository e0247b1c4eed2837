// Loading backend and plugin modules: the real ones from the build folder, and deliberately
// broken ones (tests/modules/) for each failure the loaders must report clearly.
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>

#include "fixtures/error_checks.hpp"
#include "mnemo/error.hpp"
#include "mnemo/modules/registry.hpp"
#include "session/device.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using mnemo::test::required_error;

namespace {

std::string test_module_dir(const std::string& stem) {
    return (fs::path(MNEMO_BUILD_BIN) / ".." / "test-modules" / stem).lexically_normal().string();
}

std::string all_errors(const std::vector<LoadError>& errors) {
    std::string s;
    for (const LoadError& e : errors) s += e.path + ": " + e.reason + "\n";
    return s;
}

}  // namespace

TEST(Registry, FindsTheCpuBackendNextToTheExecutable) {
    BackendRegistry reg({MNEMO_BUILD_BIN});
    const BackendModule* cpu = reg.find("cpu");
    ASSERT_NE(cpu, nullptr) << all_errors(reg.load_errors());
    EXPECT_EQ(cpu->api->abi_version, MNEMO_ABI_VERSION);
    const auto devices = reg.devices();
    ASSERT_FALSE(devices.empty());
    EXPECT_EQ(devices[0].backend, "cpu");
    EXPECT_EQ(devices[0].info.type, MNEMO_DEVICE_CPU);
    EXPECT_GT(std::string(devices[0].info.name).size(), 0u);
}

TEST(Registry, FindsTheLlamaPluginAndItsModelTypes) {
    PluginRegistry reg({MNEMO_BUILD_BIN});
    for (const char* type : {"llama", "qwen2", "olmo2"}) {
        const PluginModule& p = reg.for_model_type(type);
        EXPECT_EQ(p.name, "llama");
    }
}

TEST(Registry, UnknownModelTypeListsTheKnownOnes) {
    PluginRegistry reg({MNEMO_BUILD_BIN});
    const std::string m = required_error("an unknown model type", [&] { reg.for_model_type("gpt_neox"); });
    EXPECT_MENTIONS(m, "gpt_neox");
    EXPECT_MENTIONS(m, "llama");
}

TEST(Registry, MissingBackendIsAClearError) {
    BackendRegistry reg({MNEMO_BUILD_BIN});
    const std::string m = required_error("a missing backend", [&] { reg.require("metal"); });
    EXPECT_MENTIONS(m, "'metal' is not available");
    EXPECT_MENTIONS(m, "cpu");
}

TEST(Registry, EmptySearchPathFindsNothingAndSaysSo) {
    PluginRegistry reg({"/nonexistent/mnemo/plugins"});
    EXPECT_TRUE(reg.modules().empty());
    EXPECT_MENTIONS(required_error("a model type without plugins", [&] { reg.for_model_type("llama"); }),
                    "MNEMO_PLUGIN_PATH");
}

TEST(Registry, WrongAbiVersionIsRefusedWithTheReason) {
    PluginRegistry plugins({test_module_dir("mnemo-plugin-wrongabi")});
    EXPECT_TRUE(plugins.modules().empty());
    ASSERT_EQ(plugins.load_errors().size(), 1u);
    EXPECT_MENTIONS(plugins.load_errors()[0].reason, "ABI version 999");

    BackendRegistry backends({test_module_dir("mnemo-backend-wrongabi")});
    EXPECT_TRUE(backends.modules().empty());
    ASSERT_EQ(backends.load_errors().size(), 1u);
    EXPECT_MENTIONS(backends.load_errors()[0].reason, "ABI version 0");
}

TEST(Registry, ModuleWithoutEntryPointIsReported) {
    PluginRegistry reg({test_module_dir("mnemo-plugin-noentry")});
    EXPECT_TRUE(reg.modules().empty());
    ASSERT_EQ(reg.load_errors().size(), 1u);
    EXPECT_MENTIONS(reg.load_errors()[0].reason, "mnemo_plugin_entry");
}

TEST(Registry, TwoPluginsClaimingOneTypeNameBoth) {
    PluginRegistry reg({MNEMO_BUILD_BIN, test_module_dir("mnemo-plugin-dupllama")});
    // The build's own plugins plus the duplicate; the duplicate must have loaded.
    ASSERT_TRUE(std::any_of(reg.modules().begin(), reg.modules().end(),
                            [](const auto& m) { return m.name == "dupllama"; }))
        << all_errors(reg.load_errors());
    const std::string m = required_error("a type claimed twice", [&] { reg.for_model_type("llama"); });
    EXPECT_MENTIONS(m, "more than one plugin");
    EXPECT_MENTIONS(m, "dupllama");
    EXPECT_MENTIONS(m, "llama (");
    // Types claimed once still resolve.
    EXPECT_EQ(reg.for_model_type("qwen2").name, "llama");
}

TEST(Registry, BackendWithoutDriverReportsZeroDevices) {
    BackendRegistry reg({test_module_dir("mnemo-backend-nodevice")});
    ASSERT_NE(reg.find("nodevice"), nullptr) << all_errors(reg.load_errors());
    EXPECT_EQ(reg.find("nodevice")->api->device_count(), 0);
    ASSERT_NE(reg.find("nodevice")->api->unavailable_reason, nullptr);
    EXPECT_STREQ(reg.find("nodevice")->api->unavailable_reason(), "simulated: no hardware");
    EXPECT_TRUE(reg.devices().empty());
}

// Opening a device of a backend that has none says why (the module's reason: no driver, or every
// device lacks a feature Mnemo needs), not only that there are 0 devices.
TEST(Registry, OpeningABackendWithoutDevicesSaysWhy) {
    BackendRegistry reg({test_module_dir("mnemo-backend-nodevice")});
    const BackendModule* m = reg.find("nodevice");
    ASSERT_NE(m, nullptr) << all_errors(reg.load_errors());
    const std::string e = required_error("opening device 0", [&] { session_detail::Device d(*m, 0, 1); });
    EXPECT_MENTIONS(e, "backend 'nodevice' has no usable device: simulated: no hardware");
    EXPECT_MENTIONS(e, "mnemo devices");
}

TEST(Registry, NamedModuleFileIsLoadedWhateverItsFolder) {
    const std::string file = test_module_dir("mnemo-plugin-dupllama") + "/libmnemo-plugin-dupllama.so";
    PluginRegistry reg({file});
    ASSERT_EQ(reg.modules().size(), 1u) << all_errors(reg.load_errors());
    EXPECT_EQ(reg.modules()[0].name, "dupllama");
}
