// Memory-layer and MoE models (plugins pkm, memory_plus, ultramem, midus_hml, moe) against the
// goldens of their torch references (tools/reference/*_ref.py). Every folder under
// tests/data/models whose config.json names one of these model types and holds
// golden_logits.npy is a case, so a new tiny checkpoint is tested by adding its folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "fixtures/golden_logits.hpp"
#include "mnemo/io/json.hpp"
#include "model_test_util.hpp"

using namespace mnemo;
using namespace mnemo::test;

namespace {

const std::set<std::string>& memory_model_types() {
    static const std::set<std::string> t = {"pkm", "memory_plus", "ultramem", "ultramem_v2", "midus_hml",
                                            "moe", "olmoe", "mixtral"};
    return t;
}

std::vector<std::string> memory_model_folders() {
    std::vector<std::string> out;
    for (const std::string& m : tiny_model_folders()) {
        const std::string dir = model_dir(m);
        if (!std::filesystem::exists(dir + "/golden_logits.npy")) continue;
        const json::Value v = json::parse_file(dir + "/config.json");
        const json::Value* type = v.find_path("model_type");
        if (type && type->is_string() && memory_model_types().count(type->as_string())) out.push_back(m);
    }
    return out;
}

class MemoryModelGoldens : public ::testing::TestWithParam<std::string> {};

TEST_P(MemoryModelGoldens, MatchTheTorchReference) {
    const std::string dir = model_dir(GetParam());
    const Golden golden = load_golden(dir);
    ASSERT_NO_FATAL_FAILURE(expect_golden_logits(dir, golden));

    // Token by token (decode graphs, N = 1) must give the same logits as the prompt at once.
    auto d = open_model(dir);
    std::vector<float> stepwise;
    for (int32_t id : golden.ids) {
        const std::vector<float> l = d->append(0, {id}, true);
        stepwise.insert(stepwise.end(), l.begin(), l.end());
    }
    EXPECT_LT(max_rel_error(stepwise, golden.logits.as_f32()), 1e-4) << GetParam() << " decoded token by token";
}

// A memory or MoE model reads only the rows / experts a token selects: the activated parameters
// `mnemo info` reports must be a strict part of the total, and every weight byte counted as read
// must belong to a declared weight.
TEST_P(MemoryModelGoldens, ActivatedParametersArePartOfTheTotal) {
    auto s = open_model(model_dir(GetParam()));
    const ModelSummary& m = s->summary();
    EXPECT_GT(m.activated_params, 0);
    EXPECT_LT(m.activated_params, m.n_params) << GetParam();
    EXPECT_LT(m.decode_weight_bytes, m.weight_bytes) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Models, MemoryModelGoldens, ::testing::ValuesIn(memory_model_folders()), param_name_of);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MemoryModelGoldens);

}  // namespace
