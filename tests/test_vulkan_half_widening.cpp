// Every one of the 65,536 f16 bit patterns widened to f32 by the Vulkan shaders (GET_ROWS of an
// f16 table) must equal the CPU's conversion bit for bit: zeros of both signs, subnormals,
// infinities, and NaN (any NaN for a NaN). It runs twice: as part of the Vulkan unit tests, with
// the built-in unpackHalf2x16, and as `vk_fallback.half_by_integer_ops` with
// MNEMO_VK_HALF_BY_INTEGER_OPS=1, the integer arithmetic that lavapipe on AArch64 needs
// (shaders/common.glsl; docs/edge.md). That run checks the device says it took that path, so it
// cannot pass on the built-in by mistake.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fixtures/node_runner.hpp"
#include "mnemo/ops/dtype.hpp"

namespace {

constexpr const char* kIntegerPathNote = "f16 widened by integer ops";

// The table [rows, cols] holds every pattern once, in order; GET_ROWS takes every row.
std::string widen_every_pattern(mnemo::test::NodeRunner& runner, int64_t cols) {
    const int64_t rows = 65536 / cols;
    std::vector<uint16_t> table(65536);
    for (uint32_t i = 0; i < 65536; ++i) table[i] = static_cast<uint16_t>(i);
    std::vector<int32_t> index(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) index[static_cast<size_t>(r)] = static_cast<int32_t>(r);
    std::vector<float> out(65536, 0.0f);
    mnemo_node n{};
    n.op = MNEMO_OP_GET_ROWS;
    n.n_inputs = 2;
    n.inputs[0] = {table.data(), 0, MNEMO_DTYPE_F16, 2, {rows, cols, 0, 0}};
    n.inputs[1] = {index.data(), 0, MNEMO_DTYPE_I32, 1, {rows, 0, 0, 0}};
    n.output = {out.data(), 0, MNEMO_DTYPE_F32, 2, {rows, cols, 0, 0}};
    const std::string message = runner.run(n);
    if (!message.empty()) return "get_rows failed: " + message;
    int bad = 0;
    std::string first;
    for (uint32_t i = 0; i < 65536; ++i) {
        const float want = mnemo::f16_to_f32(static_cast<uint16_t>(i));
        const float got = out[i];
        uint32_t wb = 0, gb = 0;
        std::memcpy(&wb, &want, 4);
        std::memcpy(&gb, &got, 4);
        const bool same = std::isnan(want) ? std::isnan(got) : wb == gb;
        if (!same && bad++ == 0) {
            char line[160];
            std::snprintf(line, sizeof line, "f16 0x%04x: want %g (0x%08x), got %g (0x%08x)", i, want, wb, got, gb);
            first = line;
        }
    }
    return bad == 0 ? "" : std::to_string(bad) + " of 65536 patterns differ; first " + first;
}

}  // namespace

TEST(VulkanHalfWidening, EveryF16PatternWidensExactly) {
    mnemo::test::NodeRunner runner("vulkan");
    if (!runner.available()) GTEST_SKIP() << "the Vulkan backend is not built or reports no device";
    const char* forced = std::getenv("MNEMO_VK_HALF_BY_INTEGER_OPS");
    if (forced && std::strcmp(forced, "1") == 0) {
        const std::string description = runner.device_description();
        ASSERT_NE(description.find(kIntegerPathNote), std::string::npos)
            << "MNEMO_VK_HALF_BY_INTEGER_OPS=1 but device 0 does not report the integer path: " << description;
    }
    // Four patterns per 16-byte load (the vector path) and one per row (the single-half path).
    EXPECT_EQ(widen_every_pattern(runner, 256), "");
    EXPECT_EQ(widen_every_pattern(runner, 1), "");
}
