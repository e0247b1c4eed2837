// The moe plugin (OLMoE, Mixtral, generic moe) beyond its goldens (those are in
// test_memory_models.cpp): batched sequences decode as each alone (MOE_FFN groups tokens by
// expert and must not mix them), the router options and model types agree where the maths says
// they must, and every bad config or checkpoint is refused at load with a message naming the
// field or tensor.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "fixtures/batched_decoding.hpp"
#include "fixtures/golden_logits.hpp"
#include "fixtures/load_errors.hpp"
#include "mnemo/io/safetensors.hpp"
#include "model_test_util.hpp"

using namespace mnemo;
using namespace mnemo::test;

namespace {

// A scratch copy of `model` with config fields changed gives the model's own golden logits (within
// 1e-4: the maths is the same) or not (changed by more than 1e-2).
void expect_same_logits(const ModelCopy& copy, const std::string& model) {
    const Golden g = load_golden(model_dir(model));
    EXPECT_LT(max_rel_error(prompt_logits(copy.dir(), g.ids), g.logits.as_f32()), 1e-4) << model;
}
void expect_other_logits(const ModelCopy& copy, const std::string& model) {
    const Golden g = load_golden(model_dir(model));
    EXPECT_GT(max_rel_error(prompt_logits(copy.dir(), g.ids), g.logits.as_f32()), 1e-2) << model;
}

// The load error of a scratch copy of `model` without tensor `name`.
std::string error_without(const std::string& model, const std::string& name) {
    ModelCopy m(model_dir(model));
    m.drop_tensor(name);
    return open_error(m.dir());
}

}  // namespace

// ------------------------------------------------------------------ what loads

TEST(MoePlugin, ArchitectureNamesTheExpertsAndTheRouter) {
    const std::string olmoe = open_model(model_dir("olmoe-tiny-f32"))->summary().architecture;
    EXPECT_MENTIONS(olmoe, "olmoe (");
    EXPECT_MENTIONS(olmoe, "8 experts, top 2");
    EXPECT_MENTIONS(olmoe, "softmax then top-k");
    EXPECT_MENTIONS(olmoe, "QK-norm");
    const std::string mixtral = open_model(model_dir("mixtral-tiny-f32"))->summary().architecture;
    EXPECT_MENTIONS(mixtral, "8 experts, top 2, router top-k then softmax");
    const std::string generic = open_model(model_dir("moe-tiny-f32"))->summary().architecture;
    EXPECT_MENTIONS(generic, "6 experts, top 3, router softmax then top-k renormalised");
    EXPECT_EQ(open_model(model_dir("moe-tiny-f32"))->summary().plugin, "moe");
}

// Several sequences in one batch (mixed prefill, then one decode row each) give the logits each
// gets alone: the experts MOE_FFN groups tokens by must keep every token's rows apart.
TEST(MoePlugin, BatchedSequencesDecodeAsEachAlone) {
    for (const char* model : {"olmoe-tiny-f32", "mixtral-tiny-f32", "moe-tiny-f32"})
        expect_batched_equals_alone(
            model_dir(model),
            {{{1, 17, 99, 4, 56, 23}, {7, 7, 7}, {120, 3}, {64}}, {30, 41, 52, 63}, /*all_rows=*/true});
}

// ------------------------------------------------------------------ router semantics

// Renormalised OLMoE weights p_i / Σ_chosen p are a softmax over the chosen logits, which is
// Mixtral's router: the generic type's two router styles agree when norm_topk_prob is set.
TEST(MoePlugin, RenormalisedSoftmaxTopkEqualsTopkSoftmax) {
    ModelCopy m(model_dir("moe-tiny-f32"));
    m.set_config("router", "\"topk_softmax\"");
    expect_same_logits(m, "moe-tiny-f32");
}

// norm_topk_prob must change the weights (OLMoE's chosen probabilities sum to less than 1).
TEST(MoePlugin, NormTopkProbChangesOlmoe) {
    ModelCopy m(model_dir("olmoe-tiny-f32"));
    m.set_config("norm_topk_prob", "true");
    expect_other_logits(m, "olmoe-tiny-f32");
}

// The generic type with qk_norm is OLMoE (same tensor names, same router).
TEST(MoePlugin, GenericTypeWithQkNormIsOlmoe) {
    ModelCopy m(model_dir("olmoe-tiny-f32"));
    m.set_config("model_type", "\"moe\"");
    m.set_config("qk_norm", "true");
    expect_same_logits(m, "olmoe-tiny-f32");
}

// Mixtral's tensors renamed to the generic names, with router topk_softmax, are Mixtral.
TEST(MoePlugin, GenericTypeWithTopkSoftmaxIsMixtral) {
    ModelCopy m(model_dir("mixtral-tiny-f32"));
    m.set_config("model_type", "\"moe\"");
    m.set_config("router", "\"topk_softmax\"");
    m.set_config("num_experts", "8");
    m.rewrite_tensors([](TensorToWrite& t, std::vector<uint8_t>&) {
        for (auto [from, to] : {std::pair{".block_sparse_moe.", ".mlp."}, {".w1.", ".gate_proj."}, {".w3.", ".up_proj."},
                                {".w2.", ".down_proj."}}) {
            const size_t at = t.name.find(from);
            if (at != std::string::npos) t.name.replace(at, std::string(from).size(), to);
        }
        return true;
    });
    expect_same_logits(m, "mixtral-tiny-f32");
}

// ------------------------------------------------------------------ load errors

// Config edits refused at load time with a message naming the field or tensor:
// MoePlugin/MoeBadConfig.IsRefused/<case>.
class MoeBadConfig : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(MoeBadConfig, IsRefused) { expect_refused(GetParam()); }

const RefusalCase kBadConfigs[] = {
    {"TopKAboveTheExpertCount",
     {{"olmoe-tiny-f32", "num_experts_per_tok", "9", {"num_experts_per_tok (9) must be between 1 and num_experts (8)"}},
      {"mixtral-tiny-f32", "num_experts_per_tok", "0",
       {"num_experts_per_tok (0) must be between 1 and num_local_experts (8)"}}}},
    {"WrongExpertShapeIsNamed",
     {{"olmoe-tiny-f32", "intermediate_size", "32",
       {"'model.layers.0.mlp.experts.0.gate_proj.weight' has shape [24, 32], expected [32, 32]"}}}},
    {"CheckpointWithMoreExpertsThanTheConfig",
     {{"olmoe-tiny-f32", "num_experts", "7",
       {"holds 'model.layers.0.mlp.experts.7.gate_proj.weight'", "7 experts per layer"}}}},
    {"UnknownRouterStyle",
     {{"moe-tiny-f32", "router", "\"expert_choice\"", {"router 'expert_choice' is not supported", "softmax_topk"}}}},
    {"GenericTypeNeedsTheExpertCount", {{"moe-tiny-f32", "num_experts", "null", {"num_experts"}}}},
    {"UnsupportedOptionsAreRefused",
     {{"olmoe-tiny-f32", "clip_qkv", "8.0", {"clip_qkv is not supported"}},
      {"mixtral-tiny-f32", "hidden_act", "\"gelu\"", {"hidden_act 'gelu' is not supported"}},
      {"moe-tiny-f32", "mlp_bias", "true", {"mlp_bias is not supported"}}}},
};

INSTANTIATE_TEST_SUITE_P(MoePlugin, MoeBadConfig, ::testing::ValuesIn(kBadConfigs), refusal_case_name);

TEST(MoePluginErrors, MissingExpertTensorIsNamed) {
    const std::pair<const char*, std::string> cases[] = {
        {"olmoe-tiny-f32", "model.layers.1.mlp.experts.5.up_proj.weight"},
        {"mixtral-tiny-f32", "model.layers.0.block_sparse_moe.experts.7.w2.weight"},
        {"moe-tiny-f32", "model.layers.1.mlp.gate.weight"}};
    for (const auto& [model, tensor] : cases)
        EXPECT_MENTIONS(error_without(model, tensor), "'" + tensor + "' is missing");
}

// Mixtral's sliding window is only accepted when it covers the whole context (then it changes
// nothing); open_model uses a 64-position context.
TEST(MoePluginErrors, SlidingWindowShorterThanTheContext) {
    expect_refused(Refusal{"mixtral-tiny-f32", "sliding_window", "32",
                           {"sliding_window 32 is shorter than the context of 64 positions"}});

    ModelCopy long_window(model_dir("mixtral-tiny-f32"));
    long_window.set_config("sliding_window", "64");
    expect_same_logits(long_window, "mixtral-tiny-f32");
}
