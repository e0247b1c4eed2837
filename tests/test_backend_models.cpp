// Whole models across backends: every tiny checkpoint in tests/data/models (every architecture
// and weight type we load) runs its golden prompt (12 tokens) on the CPU and on each device of
// every other backend module in the build, through mnemo::compare_backends. The backend must give
// the CPU's prompt logits within a tolerance set by the weight type, and the same 32 greedy
// tokens. Test names read
//   Models/BackendModels.MatchCpu/pkm_tiny_f32__vulkan0
// Each model is also run as cpu0 against a second CPU session: that must be exact, and shows the
// harness itself passes on every model whatever other backends exist. A backend without devices
// is one skipped test per model that says so; a backend device that cannot run a model (an op it
// lacks) fails, as it does in the op conformance tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/compare_options.hpp"
#include "mnemo/io/safetensors.hpp"
#include "mnemo/session/compare.hpp"
#include "model_test_util.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using namespace mnemo::test;

namespace {

constexpr int32_t kGenerate = 32;

struct Case {
    std::string model;    // folder name under tests/data/models
    std::string backend;  // "" with skip set
    int32_t device = 0;
    std::string skip;     // why this case cannot run here
    std::string label;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.label; }

std::vector<Case> all_cases() {
    std::vector<Case> out;
    for (const std::string& m : tiny_model_folders()) {
        bool other = false;
        for (const BackendModule& b : backends().modules()) {
            const int32_t n = b.api->device_count();
            other = other || b.name != "cpu";
            if (n <= 0) {
                out.push_back({m, "", 0, "the " + b.name + " backend reports no devices (driver or hardware missing)",
                               param_name(m) + "__" + b.name + "_no_devices"});
                continue;
            }
            // The CPU is compared with itself once (device 0); other backends on every device.
            for (int32_t d = 0; d < (b.name == "cpu" ? 1 : n); ++d)
                out.push_back({m, b.name, d, "", param_name(m) + "__" + b.name + std::to_string(d)});
        }
        if (!other)
            out.push_back({m, "", 0, "no backend other than cpu is built or loaded (vulkan, cuda)",
                           param_name(m) + "__no_other_backend"});
    }
    return out;
}

// Largest |Δlogit| / largest |reference logit| the backend may show, from the least precise
// weight type in the checkpoint. Both backends read f16/bf16 weights exactly into f32 and
// accumulate in f32, so only the summation order and the accuracy of exp/rsqrt differ: ~1e-6
// relative on these models. 1e-4 (the golden-logit bar of test_session.cpp) leaves two orders of
// magnitude for that, while a real fault (a dropped tail of a dot product, a wrong row, an
// off-by-one in the causal mask) moves logits by percents. For f16/bf16 checkpoints a backend may
// also round activations to the weight type in a fast path: 4 unit roundoffs of that type
// (f16: 4 * 4.9e-4, bf16: 4 * 3.9e-3) cover one such rounding per matmul input through these few
// layers.
double tolerance(const std::string& dir, std::string* why) {
    bool f16 = false, bf16 = false;
    const Checkpoint ck = Checkpoint::open(dir);
    for (const TensorView& t : ck.tensors()) {
        f16 = f16 || t.dtype == DType::F16;
        bf16 = bf16 || t.dtype == DType::BF16;
    }
    if (bf16) {
        *why = "bf16 weights";
        return 1.6e-2;
    }
    if (f16) {
        *why = "f16 weights";
        return 2e-3;
    }
    *why = "f32 weights";
    return 1e-4;
}

class BackendModels : public ::testing::TestWithParam<Case> {};

TEST_P(BackendModels, MatchCpu) {
    const Case& c = GetParam();
    if (!c.skip.empty()) GTEST_SKIP() << c.skip;
    CompareOptions o = compare_options(c.model, {{"cpu", 0}, {c.backend, c.device}}, kGenerate);
    o.warmup = false;  // speed is not measured here
    const CompareResult r = compare_backends(o);
    const std::string name = o.backends[1].str();
    ASSERT_TRUE(r.runs[0].ok()) << "cpu: " << r.runs[0].error;
    ASSERT_TRUE(r.runs[1].ok()) << name << ": " << r.runs[1].error;
    const BackendRun& run = r.runs[1];
    ASSERT_EQ(run.step_max_abs_dlogit.size(), static_cast<size_t>(kGenerate));

    std::string why;
    const double tol = c.backend == "cpu" ? 0.0 : tolerance(o.model_dir, &why);
    // Step 0 is the prompt's logits (the prefill graph); steps 1.. are single-token decodes of
    // the CPU's tokens (teacher forcing), so each compares the same position of the same text.
    double worst = 0.0;
    int32_t worst_step = 0;
    for (int32_t s = 0; s < kGenerate; ++s) {
        const double rel = run.step_max_abs_dlogit[static_cast<size_t>(s)] / r.ref_step_max_abs_logit[static_cast<size_t>(s)];
        if (!(rel <= worst)) {  // NaN and inf count as worst
            worst = rel;
            worst_step = s;
        }
    }
    const double prompt_rel = run.step_max_abs_dlogit[0] / r.ref_step_max_abs_logit[0];
    std::ostringstream rel_text;
    rel_text << std::scientific << worst;
    RecordProperty("max_rel_dlogit", rel_text.str());
    if (c.backend == "cpu") {
        EXPECT_EQ(run.max_abs_dlogit, 0.0) << "two CPU sessions of the same model must agree bit for bit";
    } else {
        EXPECT_LE(prompt_rel, tol) << name << ": prompt logits differ from the CPU's by " << prompt_rel
                                   << " of the logit scale (" << why << ", tolerance " << tol << ")";
        EXPECT_LE(worst, tol) << name << ": logits of step " << worst_step << " differ from the CPU's by " << worst
                              << " of the logit scale (" << why << ", tolerance " << tol << ")";
    }
    // Fed the CPU's tokens, the backend picks the CPU's token at every step: exactly when its own
    // greedy generation would give the same 32 tokens.
    if (run.first_divergence >= 0) {
        const size_t s = static_cast<size_t>(run.first_divergence);
        ADD_FAILURE() << name << ": greedy token " << s << " is " << run.tokens[s] << ", the CPU's is "
                      << r.runs[0].tokens[s] << " (the CPU's logits put them " << run.divergence_margin
                      << " apart; |dlogit| there is " << run.step_max_abs_dlogit[s] << ")";
    }
    EXPECT_EQ(run.tokens, r.runs[0].tokens);
}

INSTANTIATE_TEST_SUITE_P(Models, BackendModels, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.label; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BackendModels);

// The list above is built from what is on disk; an empty or partial list would pass silently.
TEST(BackendModels, EveryArchitectureHasATinyModel) {
    std::vector<std::string> types;
    for (const std::string& m : tiny_model_folders()) {
        const auto s = open_model(model_dir(m), 16);
        types.push_back(s->summary().model_type);
    }
    for (const char* t : {"llama", "qwen2", "olmo2", "pkm", "memory_plus", "ultramem", "ultramem_v2", "midus_hml", "moe",
                          "mixtral", "olmoe"})
        EXPECT_NE(std::find(types.begin(), types.end(), t), types.end()) << "no tiny model of type " << t;
}

}  // namespace
