// Cross-backend conformance: every case of tests/conformance/op_cases*.hpp on every device of every
// backend module found in the build folder (and $MNEMO_BACKEND_PATH), compared with the naive
// reference (engine/src/ops/reference_<family>.cpp) by the shared harness (tests/conformance/harness.hpp).
// Test names read
//   Conformance/BackendOps.Run/cpu0_matmul_N1_K4096_M256_f16
// A backend with no device is one skipped test that says so. The CPU and Vulkan backends must
// run every case, block-quantized weights and q8_0 KV caches included; an unsupported case there
// is a failure (other backends skip it with a reason).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "conformance/harness.hpp"
#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/modules/registry.hpp"

namespace {

using mnemo::DType;
using mnemo::TensorShape;
using mnemo::conformance::Comparison;
using mnemo::conformance::OpCase;
using mnemo::conformance::Outcome;
using mnemo::conformance::all_op_cases;
using mnemo::conformance::compare_exact_i32;

constexpr size_t kNoCase = std::numeric_limits<size_t>::max();

mnemo::BackendRegistry& registry() { return mnemo::conformance::harness_registry(MNEMO_BUILD_BIN); }

Comparison compare(const std::vector<float>& got, const std::vector<float>& want, double max_nmse) {
    return mnemo::conformance::compare_floats(got, want, max_nmse);
}

bool must_support_everything(const std::string& backend) { return backend == "cpu" || backend == "vulkan"; }

// ------------------------------------------------------------------ parameters

struct Param {
    std::string backend;
    int32_t device = -1;        // -1: the backend reports no device
    size_t case_index = kNoCase;
    std::string label;          // test name suffix
};

// Readable parameter text for test listings (gtest would dump the struct's bytes otherwise).
void PrintTo(const Param& p, std::ostream* os) { *os << p.label; }

std::vector<Param> all_params() {
    std::vector<Param> out;
    const auto& cases = all_op_cases();
    for (const mnemo::BackendModule& m : registry().modules()) {
        const int32_t n = m.api->device_count();
        if (n <= 0) {
            out.push_back({m.name, -1, kNoCase, m.name + "_no_devices"});
            continue;
        }
        for (int32_t d = 0; d < n; ++d)
            for (size_t i = 0; i < cases.size(); ++i)
                out.push_back({m.name, d, i, m.name + std::to_string(d) + "_" + cases[i].name});
    }
    return out;
}

// ------------------------------------------------------------------ the test

class BackendOps : public testing::TestWithParam<Param> {};

TEST_P(BackendOps, Run) {
    const Param& p = GetParam();
    const mnemo::BackendModule* module = registry().find(p.backend);
    ASSERT_NE(module, nullptr);
    if (p.device < 0) {
        const char* why = module->api->unavailable_reason ? module->api->unavailable_reason() : nullptr;
        GTEST_SKIP() << p.backend << ": the backend reports no devices (" << (why && *why ? why : "driver or hardware missing") << ")";
    }
    const OpCase& c = all_op_cases()[p.case_index];
    void* ctx = mnemo::conformance::open_context(module->api, p.device);
    const mnemo::conformance::CaseResult r = mnemo::conformance::run_case(module->api, ctx, c);
    if (r.outcome == Outcome::Unsupported) {
        if (must_support_everything(p.backend))
            FAIL() << c.name << ": the " << p.backend << " backend must run every op, but it does not support this case ("
                   << r.unsupported << ")";
        GTEST_SKIP() << p.backend << ": not supported: " << r.unsupported;
    }
    for (const std::string& f : r.failures) ADD_FAILURE() << c.name << " on " << p.backend << p.device << ": " << f;
    std::ostringstream nmse_text;
    nmse_text << std::scientific << r.nmse;
    RecordProperty("nmse", nmse_text.str());  // in --gtest_output=xml, to see each case's margin
}

INSTANTIATE_TEST_SUITE_P(Conformance, BackendOps, testing::ValuesIn(all_params()),
                         [](const testing::TestParamInfo<Param>& info) { return info.param.label; });
// With no module at all the list is empty; BackendModules.AtLeastOneLoads reports that instead.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BackendOps);

// ------------------------------------------------------------------ the harness itself

TEST(BackendModules, AtLeastOneLoadsAndNoneFails) {
    std::ostringstream errors;
    for (const mnemo::LoadError& e : registry().load_errors()) errors << "\n  " << e.path << ": " << e.reason;
    EXPECT_TRUE(registry().load_errors().empty()) << "backend modules failed to load:" << errors.str();
    EXPECT_FALSE(registry().modules().empty()) << "no backend module found in " << MNEMO_BUILD_BIN
                                               << " or $MNEMO_BACKEND_PATH (is mnemo_backend_cpu built?)";
}

TEST(ConformanceCases, EveryOpHasAtLeastOneCase) {
    std::map<int32_t, int> count;
    for (const OpCase& c : all_op_cases()) ++count[c.op];
    for (int32_t op = 1; op < MNEMO_OP_COUNT_; ++op)
        EXPECT_GT(count[op], 0) << "op " << mnemo::op_info(op).name << " has no conformance case in tests/conformance/op_cases.hpp";
}

TEST(ConformanceCases, NamesAreUniqueAndUsableAsTestNames) {
    std::set<std::string> seen;
    for (const OpCase& c : all_op_cases()) {
        EXPECT_TRUE(seen.insert(c.name).second) << "duplicate case name " << c.name;
        for (char ch : c.name)
            EXPECT_TRUE((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_') << "case name " << c.name;
    }
}

TEST(ConformanceCases, EveryCasePassesTheShapeRules) {
    for (const OpCase& c : all_op_cases()) {
        EXPECT_NO_THROW(mnemo::conformance::case_output_shape(c)) << c.name;
        EXPECT_GT(c.max_nmse, 0.0) << c.name;
    }
}

TEST(ConformanceCases, IntegerOutputsMustMatchExactly) {
    auto bytes = [](std::vector<int32_t> v) {
        std::vector<uint8_t> b(v.size() * 4);
        std::memcpy(b.data(), v.data(), b.size());
        return b;
    };
    EXPECT_TRUE(compare_exact_i32(bytes({3, 1, 2}), bytes({3, 1, 2})).empty());
    EXPECT_NE(compare_exact_i32(bytes({3, 2, 1}), bytes({3, 1, 2})).find("i32 element 1 of 3 is 2, reference 1"),
              std::string::npos);
    // An unwritten output (the harness fills it with 0xFF bytes) reads as -1, never a valid index.
    EXPECT_FALSE(compare_exact_i32(bytes({-1}), bytes({0})).empty());
    EXPECT_FALSE(compare_exact_i32(bytes({1, 2}), bytes({1})).empty());
}

TEST(ConformanceCases, ComparisonCatchesNanInfAndError) {
    const std::vector<float> ref = {1.0f, -2.0f, 3.0f};
    EXPECT_TRUE(compare(ref, ref, 1e-7).failure.empty());
    EXPECT_NE(compare({1.0f, NAN, 3.0f}, ref, 1e-7).failure.find("NaN at element 1"), std::string::npos);
    EXPECT_NE(compare({1.0f, INFINITY, 3.0f}, ref, 1e-7).failure.find("infinity mismatch"), std::string::npos);
    EXPECT_NE(compare({1.0f, -2.0f, 3.01f}, ref, 1e-7).failure.find("NMSE"), std::string::npos);
    EXPECT_TRUE(compare({INFINITY}, {INFINITY}, 1e-7).failure.empty());
    EXPECT_FALSE(compare({-INFINITY}, {INFINITY}, 1e-7).failure.empty());
    EXPECT_FALSE(compare({1e-30f}, {0.0f}, 1e-7).failure.empty());
    // One wrong element in a large tensor: small NMSE, but caught by the per-element bound.
    std::vector<float> big(1000000, 1.0f), off = big;
    off[123456] = 1.05f;
    const Comparison c = compare(off, big, 1e-7);
    EXPECT_LT(c.nmse, 1e-7);
    EXPECT_NE(c.failure.find("element error"), std::string::npos) << c.failure;
    EXPECT_NE(c.failure.find("element 123456"), std::string::npos) << c.failure;
}

}  // namespace
