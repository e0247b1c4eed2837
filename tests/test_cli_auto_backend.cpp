// `--backend auto` (app/cli/backend/auto_backend.cpp): the fastest kind of device that opens the model,
// the others skipped with their reasons; a named backend never falls back.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <string>

#include "mnemo/io/json.hpp"

#include "process_util.hpp"

using namespace mnemo::testing;

namespace {

// A discrete GPU that refuses to open (tests/modules/mnemo-backend-brokengpu.c), beside the
// build's own modules (the programs' folder is always searched too).
const std::string kBrokenGpu =
    "MNEMO_BACKEND_PATH=" + shell_quote(std::string(MNEMO_BUILD_BIN) + "/../test-modules/mnemo-backend-brokengpu") + " ";

}  // namespace

TEST(CliAutoBackend, SkipsAGpuThatFailsAndSaysWhy) {
    const ProcessResult r = run_mnemo("run --backend auto -p \"Where was Tour Hujert born?\" -n 2 --seed 1", "/dev/null", kBrokenGpu);
    // The broken GPU ranks first (discrete), fails, and the CPU backend runs the model; a
    // software Vulkan device (lavapipe, CPU type) would rank after the CPU backend.
    EXPECT_TRUE(exited_with(r, 0, {"backend auto: cpu:0", "skipped brokengpu:0 (Simulated GPU)", "lacks 16-bit storage"}));
}

TEST(CliAutoBackend, ANamedBackendDoesNotFallBack) {
    const ProcessResult r = run_mnemo("run --backend brokengpu -p Hi -n 2", "/dev/null", kBrokenGpu);
    EXPECT_NE(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("lacks 16-bit storage"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("backend auto"), std::string::npos) << r.output;
}

TEST(CliAutoBackend, EvalReportsTheBackendItChose) {
    const std::string report = ::testing::TempDir() + "mnemo-auto-eval-" + std::to_string(::getpid()) + ".json";
    const ProcessResult r = run_mnemo("eval --backend auto --questions " +
                                          shell_quote(std::string(MNEMO_SOURCE_DIR) + "/assets/world/questions-practice.jsonl") +
                                          " --limit 2 --quiet --report " + shell_quote(report),
                                      "/dev/null", kBrokenGpu);
    ASSERT_TRUE(exited_with(r, 0, {"backend auto: cpu:0"}));
    EXPECT_EQ(mnemo::json::parse_file(report).find("backend")->as_string(), "cpu");
    std::remove(report.c_str());
}
