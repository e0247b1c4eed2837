// The moe plugin (OLMoE, Mixtral, generic moe) beyond its goldens (those are in
// test_memory_models.cpp): batched sequences decode as each alone (MOE_FFN groups tokens by
// expert and must not mix them), the router options and model types agree where the maths says
// they must, and every bad config or checkpoint is refused at load with a message naming the
// field or tensor.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "mnemo/error.hpp"
#include "mnemo/io/safetensors.hpp"
#include "mnemo/session/session.hpp"
#include "model_test_util.hpp"
#include "npy.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using namespace mnemo::test;

namespace {

// A scratch copy of a test model that a test may corrupt; removed afterwards.
// A scratch copy of a test model (tests/model_test_util.hpp ModelCopy).
class ScratchCopy : public ModelCopy {
public:
    explicit ScratchCopy(const std::string& model) : ModelCopy(model_dir(model)) {}
    // Rewrites model.safetensors with `edit` applied to every tensor (false drops it).
    void rewrite(const std::function<bool(TensorToWrite&)>& edit) const {
        rewrite_tensors([&](TensorToWrite& w, std::vector<uint8_t>&) { return edit(w); });
    }
};

std::string open_error(const std::string& dir) {
    try {
        open_model(dir);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

std::vector<float> golden_logits(const std::string& model) { return load_npy(model_dir(model) + "/golden_logits.npy").as_f32(); }

std::vector<float> all_logits(const std::string& dir, const std::string& ids_from) {
    return open_model(dir)->append(0, read_ids(model_dir(ids_from) + "/golden_ids.txt"), true);
}

const char* const kModels[] = {"olmoe-tiny-f32", "mixtral-tiny-f32", "moe-tiny-f32"};

}  // namespace

// ------------------------------------------------------------------ what loads

TEST(MoePlugin, ArchitectureNamesTheExpertsAndTheRouter) {
    const std::string olmoe = open_model(model_dir("olmoe-tiny-f32"))->summary().architecture;
    EXPECT_NE(olmoe.find("olmoe ("), std::string::npos) << olmoe;
    EXPECT_NE(olmoe.find("8 experts, top 2"), std::string::npos) << olmoe;
    EXPECT_NE(olmoe.find("softmax then top-k"), std::string::npos) << olmoe;
    EXPECT_NE(olmoe.find("QK-norm"), std::string::npos) << olmoe;
    const std::string mixtral = open_model(model_dir("mixtral-tiny-f32"))->summary().architecture;
    EXPECT_NE(mixtral.find("8 experts, top 2, router top-k then softmax"), std::string::npos) << mixtral;
    const std::string generic = open_model(model_dir("moe-tiny-f32"))->summary().architecture;
    EXPECT_NE(generic.find("6 experts, top 3, router softmax then top-k renormalised"), std::string::npos) << generic;
    EXPECT_EQ(open_model(model_dir("moe-tiny-f32"))->summary().plugin, "moe");
}

// Several sequences in one batch (mixed prefill, then one decode row each) give the logits each
// gets alone: the experts MOE_FFN groups tokens by must keep every token's rows apart.
TEST(MoePlugin, BatchedSequencesDecodeAsEachAlone) {
    const std::vector<std::vector<int32_t>> prompts = {{1, 17, 99, 4, 56, 23}, {7, 7, 7}, {120, 3}, {64}};
    const int32_t n = static_cast<int32_t>(prompts.size());
    for (const char* model : kModels) {
        auto batched = open_model(model_dir(model), 32, n);
        std::vector<BatchToken> batch;
        for (int32_t s = 0; s < n; ++s)
            for (size_t i = 0; i < prompts[s].size(); ++i)
                batch.push_back({prompts[s][i], static_cast<int32_t>(i), s, true});
        const std::vector<float> first = batched->decode(batch);
        std::vector<BatchToken> step;
        for (int32_t s = 0; s < n; ++s) step.push_back({static_cast<int32_t>(30 + 11 * s), static_cast<int32_t>(prompts[s].size()), s, true});
        const std::vector<float> second = batched->decode(step);

        const size_t vocab = static_cast<size_t>(batched->vocab_size());
        size_t row = 0;
        for (int32_t s = 0; s < n; ++s) {
            auto single = open_model(model_dir(model), 32, 1);
            const std::vector<float> a = single->append(0, prompts[s], true);
            const std::vector<float> b = single->append(0, {static_cast<int32_t>(30 + 11 * s)});
            const std::vector<float> fa(first.begin() + static_cast<long>(row * vocab),
                                        first.begin() + static_cast<long>((row + prompts[s].size()) * vocab));
            const std::vector<float> fb(second.begin() + static_cast<long>(s * vocab),
                                        second.begin() + static_cast<long>((s + 1) * vocab));
            row += prompts[s].size();
            EXPECT_LT(max_rel_error(fa, a), 1e-5) << model << " sequence " << s << " prefill";
            EXPECT_LT(max_rel_error(fb, b), 1e-5) << model << " sequence " << s << " decode";
        }
    }
}

// ------------------------------------------------------------------ router semantics

// Renormalised OLMoE weights p_i / Σ_chosen p are a softmax over the chosen logits, which is
// Mixtral's router: the generic type's two router styles agree when norm_topk_prob is set.
TEST(MoePlugin, RenormalisedSoftmaxTopkEqualsTopkSoftmax) {
    ScratchCopy m("moe-tiny-f32");
    m.set_config("router", "\"topk_softmax\"");
    EXPECT_LT(max_rel_error(all_logits(m.dir(), "moe-tiny-f32"), golden_logits("moe-tiny-f32")), 1e-4);
}

// norm_topk_prob must change the weights (OLMoE's chosen probabilities sum to less than 1).
TEST(MoePlugin, NormTopkProbChangesOlmoe) {
    ScratchCopy m("olmoe-tiny-f32");
    m.set_config("norm_topk_prob", "true");
    EXPECT_GT(max_rel_error(all_logits(m.dir(), "olmoe-tiny-f32"), golden_logits("olmoe-tiny-f32")), 1e-2);
}

// The generic type with qk_norm is OLMoE (same tensor names, same router).
TEST(MoePlugin, GenericTypeWithQkNormIsOlmoe) {
    ScratchCopy m("olmoe-tiny-f32");
    m.set_config("model_type", "\"moe\"");
    m.set_config("qk_norm", "true");
    EXPECT_LT(max_rel_error(all_logits(m.dir(), "olmoe-tiny-f32"), golden_logits("olmoe-tiny-f32")), 1e-4);
}

// Mixtral's tensors renamed to the generic names, with router topk_softmax, are Mixtral.
TEST(MoePlugin, GenericTypeWithTopkSoftmaxIsMixtral) {
    ScratchCopy m("mixtral-tiny-f32");
    m.set_config("model_type", "\"moe\"");
    m.set_config("router", "\"topk_softmax\"");
    m.set_config("num_experts", "8");
    m.rewrite([](TensorToWrite& t) {
        for (auto [from, to] : {std::pair{".block_sparse_moe.", ".mlp."}, {".w1.", ".gate_proj."}, {".w3.", ".up_proj."},
                                {".w2.", ".down_proj."}}) {
            const size_t at = t.name.find(from);
            if (at != std::string::npos) t.name.replace(at, std::string(from).size(), to);
        }
        return true;
    });
    EXPECT_LT(max_rel_error(all_logits(m.dir(), "mixtral-tiny-f32"), golden_logits("mixtral-tiny-f32")), 1e-4);
}

// ------------------------------------------------------------------ load errors

TEST(MoePluginErrors, TopKAboveTheExpertCount) {
    ScratchCopy o("olmoe-tiny-f32");
    o.set_config("num_experts_per_tok", "9");
    std::string e = open_error(o.dir());
    EXPECT_NE(e.find("num_experts_per_tok (9) must be between 1 and num_experts (8)"), std::string::npos) << e;

    ScratchCopy x("mixtral-tiny-f32");
    x.set_config("num_experts_per_tok", "0");
    e = open_error(x.dir());
    EXPECT_NE(e.find("num_experts_per_tok (0) must be between 1 and num_local_experts (8)"), std::string::npos) << e;
}

TEST(MoePluginErrors, MissingExpertTensorIsNamed) {
    ScratchCopy o("olmoe-tiny-f32");
    o.rewrite([](TensorToWrite& t) { return t.name != "model.layers.1.mlp.experts.5.up_proj.weight"; });
    std::string e = open_error(o.dir());
    EXPECT_NE(e.find("'model.layers.1.mlp.experts.5.up_proj.weight' is missing"), std::string::npos) << e;

    ScratchCopy x("mixtral-tiny-f32");
    x.rewrite([](TensorToWrite& t) { return t.name != "model.layers.0.block_sparse_moe.experts.7.w2.weight"; });
    e = open_error(x.dir());
    EXPECT_NE(e.find("'model.layers.0.block_sparse_moe.experts.7.w2.weight' is missing"), std::string::npos) << e;

    ScratchCopy r("moe-tiny-f32");
    r.rewrite([](TensorToWrite& t) { return t.name != "model.layers.1.mlp.gate.weight"; });
    e = open_error(r.dir());
    EXPECT_NE(e.find("'model.layers.1.mlp.gate.weight' is missing"), std::string::npos) << e;
}

TEST(MoePluginErrors, WrongExpertShapeIsNamed) {
    ScratchCopy o("olmoe-tiny-f32");
    o.set_config("intermediate_size", "32");
    const std::string e = open_error(o.dir());
    EXPECT_NE(e.find("'model.layers.0.mlp.experts.0.gate_proj.weight' has shape [24, 32], expected [32, 32]"),
              std::string::npos)
        << e;
}

TEST(MoePluginErrors, CheckpointWithMoreExpertsThanTheConfig) {
    ScratchCopy o("olmoe-tiny-f32");
    o.set_config("num_experts", "7");
    const std::string e = open_error(o.dir());
    EXPECT_NE(e.find("holds 'model.layers.0.mlp.experts.7.gate_proj.weight'"), std::string::npos) << e;
    EXPECT_NE(e.find("7 experts per layer"), std::string::npos) << e;
}

TEST(MoePluginErrors, UnknownRouterStyle) {
    ScratchCopy m("moe-tiny-f32");
    m.set_config("router", "\"expert_choice\"");
    const std::string e = open_error(m.dir());
    EXPECT_NE(e.find("router 'expert_choice' is not supported"), std::string::npos) << e;
    EXPECT_NE(e.find("softmax_topk"), std::string::npos) << e;
}

TEST(MoePluginErrors, GenericTypeNeedsTheExpertCount) {
    ScratchCopy m("moe-tiny-f32");
    m.set_config("num_experts", "null");
    const std::string e = open_error(m.dir());
    EXPECT_NE(e.find("num_experts"), std::string::npos) << e;
}

TEST(MoePluginErrors, UnsupportedOptionsAreRefused) {
    ScratchCopy clip("olmoe-tiny-f32");
    clip.set_config("clip_qkv", "8.0");
    std::string e = open_error(clip.dir());
    EXPECT_NE(e.find("clip_qkv is not supported"), std::string::npos) << e;

    ScratchCopy act("mixtral-tiny-f32");
    act.set_config("hidden_act", "\"gelu\"");
    e = open_error(act.dir());
    EXPECT_NE(e.find("hidden_act 'gelu' is not supported"), std::string::npos) << e;

    ScratchCopy bias("moe-tiny-f32");
    bias.set_config("mlp_bias", "true");
    e = open_error(bias.dir());
    EXPECT_NE(e.find("mlp_bias is not supported"), std::string::npos) << e;
}

// Mixtral's sliding window is only accepted when it covers the whole context (then it changes
// nothing); open_model uses a 64-position context.
TEST(MoePluginErrors, SlidingWindowShorterThanTheContext) {
    ScratchCopy short_window("mixtral-tiny-f32");
    short_window.set_config("sliding_window", "32");
    const std::string e = open_error(short_window.dir());
    EXPECT_NE(e.find("sliding_window 32 is shorter than the context of 64 positions"), std::string::npos) << e;

    ScratchCopy long_window("mixtral-tiny-f32");
    long_window.set_config("sliding_window", "64");
    EXPECT_LT(max_rel_error(all_logits(long_window.dir(), "mixtral-tiny-f32"), golden_logits("mixtral-tiny-f32")), 1e-4);
}
