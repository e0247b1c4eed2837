// Loading backend and plugin modules: the real ones from the build folder, and deliberately
// broken ones (tests/modules/) for each failure the loaders must report clearly.
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>

#include "mnemo/error.hpp"
#include "mnemo/modules/registry.hpp"

namespace fs = std::filesystem;
using namespace mnemo;

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
    try {
        reg.for_model_type("gpt_neox");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("gpt_neox"), std::string::npos) << m;
        EXPECT_NE(m.find("llama"), std::string::npos) << m;
    }
}

TEST(Registry, MissingBackendIsAClearError) {
    BackendRegistry reg({MNEMO_BUILD_BIN});
    try {
        reg.require("metal");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("'metal' is not available"), std::string::npos) << m;
        EXPECT_NE(m.find("cpu"), std::string::npos) << m;
    }
}

TEST(Registry, EmptySearchPathFindsNothingAndSaysSo) {
    PluginRegistry reg({"/nonexistent/mnemo/plugins"});
    EXPECT_TRUE(reg.modules().empty());
    try {
        reg.for_model_type("llama");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("MNEMO_PLUGIN_PATH"), std::string::npos) << e.what();
    }
}

TEST(Registry, WrongAbiVersionIsRefusedWithTheReason) {
    PluginRegistry plugins({test_module_dir("mnemo-plugin-wrongabi")});
    EXPECT_TRUE(plugins.modules().empty());
    ASSERT_EQ(plugins.load_errors().size(), 1u);
    EXPECT_NE(plugins.load_errors()[0].reason.find("ABI version 999"), std::string::npos) << plugins.load_errors()[0].reason;

    BackendRegistry backends({test_module_dir("mnemo-backend-wrongabi")});
    EXPECT_TRUE(backends.modules().empty());
    ASSERT_EQ(backends.load_errors().size(), 1u);
    EXPECT_NE(backends.load_errors()[0].reason.find("ABI version 0"), std::string::npos);
}

TEST(Registry, ModuleWithoutEntryPointIsReported) {
    PluginRegistry reg({test_module_dir("mnemo-plugin-noentry")});
    EXPECT_TRUE(reg.modules().empty());
    ASSERT_EQ(reg.load_errors().size(), 1u);
    EXPECT_NE(reg.load_errors()[0].reason.find("mnemo_plugin_entry"), std::string::npos);
}

TEST(Registry, TwoPluginsClaimingOneTypeNameBoth) {
    PluginRegistry reg({MNEMO_BUILD_BIN, test_module_dir("mnemo-plugin-dupllama")});
    // The build's own plugins plus the duplicate; the duplicate must have loaded.
    ASSERT_TRUE(std::any_of(reg.modules().begin(), reg.modules().end(),
                            [](const auto& m) { return m.name == "dupllama"; }))
        << all_errors(reg.load_errors());
    try {
        reg.for_model_type("llama");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("more than one plugin"), std::string::npos) << m;
        EXPECT_NE(m.find("dupllama"), std::string::npos) << m;
        EXPECT_NE(m.find("llama ("), std::string::npos) << m;
    }
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

TEST(Registry, NamedModuleFileIsLoadedWhateverItsFolder) {
    const std::string file = test_module_dir("mnemo-plugin-dupllama") + "/libmnemo-plugin-dupllama.so";
    PluginRegistry reg({file});
    ASSERT_EQ(reg.modules().size(), 1u) << all_errors(reg.load_errors());
    EXPECT_EQ(reg.modules()[0].name, "dupllama");
}
