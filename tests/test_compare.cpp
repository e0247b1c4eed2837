// mnemo::compare_backends (engine/src/session/compare.cpp) and `mnemo compare`: backend specs, the logit
// difference rule, cpu against cpu on tiny models (bit-identical, and the same tokens as a plain
// greedy loop), backends that cannot run reported in their own column, cpu against vulkan when a
// Vulkan device exists, and the command's JSON output.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "fixtures/compare_options.hpp"
#include "fixtures/error_checks.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/session/compare.hpp"
#include "mnemo/session/sampling.hpp"
#include "model_test_util.hpp"
#include "process_util.hpp"

using namespace mnemo;
using namespace mnemo::test;

namespace {

CompareOptions options_for(const std::string& model, const std::vector<std::string>& specs, int32_t n) {
    std::vector<BackendSpec> parsed;
    for (const std::string& b : specs) parsed.push_back(parse_backend_spec(b));
    return compare_options(model, parsed, n);
}

// Greedy tokens of a plain decode loop on the CPU: what the reference run must reproduce.
std::vector<int32_t> plain_greedy(const std::string& dir, const std::vector<int32_t>& prompt, int32_t n) {
    auto s = open_model(dir, static_cast<int32_t>(prompt.size()) + n);
    SamplingParams p;
    p.temperature = 0.0f;
    Sampler greedy(p);
    std::vector<int32_t> out;
    const std::vector<float>* logits = &s->append(0, prompt);
    for (int32_t i = 0; i < n; ++i) {
        out.push_back(greedy.sample(logits->data(), s->vocab_size(), {}));
        if (i + 1 < n) logits = &s->decode({{out.back(), static_cast<int32_t>(prompt.size()) + i, 0, true}});
    }
    return out;
}

const BackendModule* vulkan_with_device() {
    const BackendModule* m = backends().find("vulkan");
    return m != nullptr && m->api->device_count() > 0 ? m : nullptr;
}

}  // namespace

// ------------------------------------------------------------------ specs and the difference rule

TEST(CompareSpec, ParsesNamesAndDeviceIndices) {
    EXPECT_EQ(parse_backend_spec("cpu").backend, "cpu");
    EXPECT_EQ(parse_backend_spec("cpu").device, 0);
    const BackendSpec v = parse_backend_spec("vulkan:12");
    EXPECT_EQ(v.backend, "vulkan");
    EXPECT_EQ(v.device, 12);
    EXPECT_EQ(v.str(), "vulkan:12");
    EXPECT_EQ(parse_backend_spec("vulkan:0").str(), "vulkan");
    const auto list = parse_backend_list("cpu,vulkan:1,cuda");
    ASSERT_EQ(list.size(), 3u);
    EXPECT_EQ(list[1].str(), "vulkan:1");
    EXPECT_EQ(list[2].backend, "cuda");
}

TEST(CompareSpec, RejectsMalformedSpecsNamingThem) {
    for (const std::string bad : {"", ":1", "vulkan:", "vulkan:x", "vulkan:-1", "vul kan", "vulkan:1:2"})
        EXPECT_MENTIONS(required_error("'" + bad + "'", [&] { parse_backend_spec(bad); }), "'" + bad + "'");
    EXPECT_THROW(parse_backend_list("cpu,,vulkan"), Error);
    EXPECT_THROW(parse_backend_list("cpu,"), Error);
}

TEST(CompareLogits, DifferenceRuleForNonFiniteValues) {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> a = {1.0f, -2.0f, 3.0f};
    const std::vector<float> b = {1.0f, -2.5f, 3.25f};
    EXPECT_DOUBLE_EQ(max_abs_logit_diff(a.data(), b.data(), 3), 0.5);
    EXPECT_DOUBLE_EQ(max_abs_logit_diff(a.data(), a.data(), 3), 0.0);
    const std::vector<float> same_nonfinite = {nan, inf, -inf};
    EXPECT_EQ(max_abs_logit_diff(same_nonfinite.data(), same_nonfinite.data(), 3), 0.0);
    const std::vector<float> one_nan = {nan, -2.0f, 3.0f};
    EXPECT_EQ(max_abs_logit_diff(one_nan.data(), a.data(), 3), std::numeric_limits<double>::infinity());
    EXPECT_EQ(max_abs_logit_diff(a.data(), one_nan.data(), 3), std::numeric_limits<double>::infinity());
    const std::vector<float> pos = {inf}, neg = {-inf}, one = {1.0f};
    EXPECT_EQ(max_abs_logit_diff(pos.data(), neg.data(), 1), std::numeric_limits<double>::infinity());
    EXPECT_EQ(max_abs_logit_diff(pos.data(), one.data(), 1), std::numeric_limits<double>::infinity());
}

// ------------------------------------------------------------------ cpu against cpu

class CompareCpuCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(CompareCpuCpu, IsExactAndMatchesAPlainGreedyLoop) {
    const int32_t n = 8;
    const CompareOptions o = options_for(GetParam(), {"cpu", "cpu"}, n);
    const CompareResult r = compare_backends(o);
    ASSERT_EQ(r.runs.size(), 2u);
    for (const BackendRun& run : r.runs) ASSERT_TRUE(run.ok()) << run.error;
    EXPECT_EQ(r.n_ran(), 2);
    EXPECT_EQ(r.reference, 0);
    EXPECT_EQ(r.n_steps, n);
    EXPECT_EQ(r.prompt_tokens, o.prompt_tokens);

    // The reference decodes greedily exactly like a plain loop; the other run gives the same
    // logits bit for bit (same code, same inputs) and so the same tokens.
    EXPECT_EQ(r.runs[0].tokens, plain_greedy(o.model_dir, o.prompt_tokens, n));
    EXPECT_EQ(r.runs[1].tokens, r.runs[0].tokens);
    EXPECT_EQ(r.runs[1].max_abs_dlogit, 0.0);
    EXPECT_EQ(r.runs[1].first_divergence, -1);
    ASSERT_EQ(r.runs[1].step_max_abs_dlogit.size(), static_cast<size_t>(n));
    for (double d : r.runs[1].step_max_abs_dlogit) EXPECT_EQ(d, 0.0);
    ASSERT_EQ(r.ref_step_max_abs_logit.size(), static_cast<size_t>(n));
    for (double m : r.ref_step_max_abs_logit) EXPECT_TRUE(std::isfinite(m) && m > 0) << m;

    for (const BackendRun& run : r.runs) {
        EXPECT_EQ(run.device_name, run.summary.device_name);
        EXPECT_GT(run.prompt_tps, 0.0);
        EXPECT_GT(run.gen_tps, 0.0);
        // Every category is listed, and the categories add up to the per-op times.
        for (const char* c : op_categories()) EXPECT_EQ(run.op_times.count(c), 1u) << c;
        EXPECT_EQ(run.op_times.size(), op_categories().size());
        uint64_t by_op = 0, by_category = 0;
        for (const OpProfile& p : run.ops) by_op += p.total_ns;
        for (const auto& [c, ns] : run.op_times) by_category += ns;
        EXPECT_EQ(by_op, by_category);
        EXPECT_GT(run.op_times.at("matmul"), 0u);  // every model here has matmuls; the CPU times ops
        // The CPU uses the mmapped weights in place: all of them are resident host memory, and
        // the peak also holds the states and the activation arena.
        EXPECT_EQ(run.host_device_bytes, run.summary.weight_bytes);
        EXPECT_GE(run.peak_device_bytes, run.summary.weight_bytes + run.summary.state_bytes + run.summary.work_bytes);
        EXPECT_EQ(run.peak_device_bytes, run.summary.device_peak_bytes);
        EXPECT_LE(run.summary.device_bytes, run.summary.device_peak_bytes);
    }
}

INSTANTIATE_TEST_SUITE_P(TinyModels, CompareCpuCpu,
                         ::testing::Values("llama-tiny-f32", "llama-tiny-bf16", "pkm-tiny-f32", "ultramem_v2-tiny-f32",
                                           "moe-tiny-f32"),
                         param_name_of);

// ------------------------------------------------------------------ backends that cannot run

TEST(Compare, BackendsThatCannotRunAreReportedInTheirColumn) {
    const CompareResult r = compare_backends(options_for("llama-tiny-f32", {"nosuchbackend", "cpu", "cpu:7", "cpu"}, 3));
    ASSERT_EQ(r.runs.size(), 4u);
    EXPECT_FALSE(r.runs[0].ok());
    EXPECT_MENTIONS(r.runs[0].error, "'nosuchbackend' is not available");
    EXPECT_FALSE(r.runs[2].ok());
    EXPECT_MENTIONS(r.runs[2].error, "device 7 does not exist");
    EXPECT_EQ(r.runs[2].device, 7);
    EXPECT_TRUE(r.runs[2].tokens.empty());
    // The reference is the first backend that ran; the last one is compared with it.
    EXPECT_EQ(r.reference, 1);
    EXPECT_EQ(r.n_ran(), 2);
    ASSERT_TRUE(r.runs[3].ok()) << r.runs[3].error;
    EXPECT_EQ(r.runs[3].tokens, r.runs[1].tokens);
    EXPECT_EQ(r.runs[3].max_abs_dlogit, 0.0);
}

TEST(Compare, ErrorsDuringARunAreReportedNotThrown) {
    // Token 100000 is outside every tiny vocabulary: each session refuses it.
    CompareOptions o = options_for("llama-tiny-f32", {"cpu", "cpu"}, 2);
    o.prompt_tokens = {1, 100000};
    const CompareResult r = compare_backends(o);
    EXPECT_EQ(r.n_ran(), 0);
    EXPECT_EQ(r.reference, -1);
    for (const BackendRun& run : r.runs) {
        EXPECT_MENTIONS(run.error, "100000");
        EXPECT_FALSE(mentions(run.error, o.model_dir))
            << "the model folder is named once, not per column: " << run.error;
    }
}

TEST(Compare, RejectsBadOptions) {
    CompareOptions o = options_for("llama-tiny-f32", {}, 4);
    EXPECT_THROW(compare_backends(o), Error);  // no backends
    o = options_for("llama-tiny-f32", {"cpu"}, 0);
    EXPECT_THROW(compare_backends(o), Error);  // nothing to generate
    o = options_for("llama-tiny-f32", {"cpu"}, 4);
    o.n_ctx = 15;  // 12 prompt tokens + 4 do not fit
    EXPECT_MENTIONS(required_error("a context of 15 for 16 positions", [&] { compare_backends(o); }), "16 positions");
    o = options_for("llama-tiny-f32", {"cpu"}, 4);
    o.prompt_tokens.clear();  // and no text
    EXPECT_THROW(compare_backends(o), Error);
}

// Stopping at the reference backend's end of turn: its step that produced an end-of-turn token is
// the last one for every backend, so all are compared over the same steps; without it a turn
// runs to n_generate (what follows the answer is the template's next turn, not the answer).
TEST(Compare, StopsEveryBackendAtTheReferencesEndOfTurn) {
    const CompareResult full = compare_backends(options_for("llama-tiny-f32", {"cpu"}, 8));
    ASSERT_TRUE(full.runs[0].ok()) << full.runs[0].error;
    EXPECT_FALSE(full.ended_turn);
    EXPECT_EQ(full.n_steps, 8);
    // Take the token of step 2 as the end of the turn (one that did not come earlier).
    const int32_t eot = full.runs[0].tokens[2];
    const auto first = std::find(full.runs[0].tokens.begin(), full.runs[0].tokens.end(), eot) - full.runs[0].tokens.begin();
    CompareOptions o = options_for("llama-tiny-f32", {"cpu", "cpu"}, 8);
    o.end_of_turn_tokens = {eot};
    const CompareResult r = compare_backends(o);
    EXPECT_TRUE(r.ended_turn);
    EXPECT_EQ(r.n_steps, first + 1);
    for (const BackendRun& run : r.runs) {
        ASSERT_TRUE(run.ok()) << run.error;
        EXPECT_EQ(run.tokens, std::vector<int32_t>(full.runs[0].tokens.begin(), full.runs[0].tokens.begin() + first + 1));
        EXPECT_EQ(run.step_max_abs_dlogit.size(), static_cast<size_t>(first + 1));
    }
    EXPECT_EQ(r.runs[1].first_divergence, -1);
    // A token that never comes: the limit.
    o.end_of_turn_tokens = {-5};
    const CompareResult limit = compare_backends(o);
    EXPECT_FALSE(limit.ended_turn);
    EXPECT_EQ(limit.n_steps, 8);
}

// Every backend's session reads the memories the factory makes for it, once per backend.
TEST(Compare, MakesTheMemorySourceForEachBackend) {
    CompareOptions o = options_for("llama-tiny-f32", {"cpu", "cpu"}, 2);
    int made = 0;
    o.memories = [&made](Session&) -> std::shared_ptr<MemorySource> {
        ++made;
        return nullptr;  // none for this backend (the tiny llama reads no memories)
    };
    const CompareResult r = compare_backends(o);
    EXPECT_EQ(r.n_ran(), 2) << r.runs[0].error;
    EXPECT_EQ(made, 2);
    // What the factory throws is that backend's error, not the comparison's.
    o.memories = [](Session&) -> std::shared_ptr<MemorySource> { throw Error("memory folder '/x': not for this model"); };
    const CompareResult bad = compare_backends(o);
    EXPECT_EQ(bad.n_ran(), 0);
    EXPECT_MENTIONS(bad.runs[0].error, "not for this model");
}

TEST(Compare, CancelFlagStopsTheComparison) {
    std::atomic<bool> stop{true};
    CompareOptions o = options_for("llama-tiny-f32", {"cpu", "cpu"}, 4);
    o.cancel = &stop;
    EXPECT_THROW(compare_backends(o), Cancelled);
}

// ------------------------------------------------------------------ cpu against vulkan

TEST(Compare, CpuAgainstVulkan) {
    if (vulkan_with_device() == nullptr)
        GTEST_SKIP() << (backends().find("vulkan") ? "the vulkan backend reports no devices"
                                                   : "the vulkan backend is not built (or failed to load)");
    const CompareResult r = compare_backends(options_for("llama-tiny-f32", {"cpu", "vulkan"}, 16));
    ASSERT_TRUE(r.runs[0].ok()) << r.runs[0].error;
    ASSERT_TRUE(r.runs[1].ok()) << "vulkan: " << r.runs[1].error;
    double scale = 0;
    for (double m : r.ref_step_max_abs_logit) scale = std::max(scale, m);
    // f32 weights on both sides: only the summation order differs (same bar as the goldens).
    EXPECT_LT(r.runs[1].max_abs_dlogit, 1e-4 * scale);
    EXPECT_EQ(r.runs[1].first_divergence, -1) << "margin " << r.runs[1].divergence_margin;
    EXPECT_EQ(r.runs[1].tokens, r.runs[0].tokens);
    EXPECT_GT(r.runs[1].peak_device_bytes, r.runs[1].summary.weight_bytes);
    EXPECT_LE(r.runs[1].host_device_bytes, r.runs[1].peak_device_bytes);
}

// ------------------------------------------------------------------ the command

namespace {

using mnemo::testing::exited_with;
using mnemo::testing::run_mnemo;

}  // namespace

TEST(CompareCli, IsListedAndHasHelp) {
    EXPECT_TRUE(exited_with(run_mnemo("--help"), 0, {"compare"}));
    EXPECT_TRUE(exited_with(run_mnemo("compare --help"), 0, {"usage: mnemo compare", "--backends"}));
}

TEST(CompareCli, UsageErrors) {
    const std::pair<const char*, std::vector<std::string>> cases[] = {
        {"compare -p hi", {"--backends"}},
        {"compare --backends cpu,cpu", {"-p TEXT or as --ids"}},
        {"compare -p hi --ids 1,2 --backends cpu,cpu", {}},
        {"compare -p hi --backends cpu,vulkan:x", {"vulkan:x"}},
    };
    for (const auto& [args, parts] : cases) EXPECT_TRUE(exited_with(run_mnemo(args), 2, parts)) << args;
}

// Text prompt on the bundled default model (it has a tokenizer): the JSON holds both runs with
// identical tokens and zero difference.
TEST(CompareCli, JsonCpuAgainstCpu) {
    const auto r = run_mnemo("compare -p 'The library of memory' -n 4 --backends cpu,cpu --json");
    ASSERT_EQ(r.code, 0) << r.output;
    const json::Value doc = json::parse(r.output, "mnemo compare --json");
    ASSERT_TRUE(doc.is_object());
    EXPECT_EQ(doc.find("n_steps")->as_int(), 4);
    EXPECT_EQ(doc.find("reference")->as_int(), 0);
    EXPECT_GT(doc.find("prompt_tokens")->size(), 1u);
    const json::Value& runs = *doc.find("backends");
    ASSERT_EQ(runs.size(), 2u);
    for (const json::Value& b : runs.as_array()) {
        EXPECT_EQ(b.find("backend")->as_string(), "cpu");
        EXPECT_TRUE(b.find("ok")->as_bool());
        EXPECT_TRUE(b.find("error")->is_null());
        EXPECT_EQ(b.find("tokens")->size(), 4u);
        EXPECT_GT(b.find("prompt_tps")->as_double(), 0.0);
        EXPECT_GT(b.find("gen_tps")->as_double(), 0.0);
        EXPECT_GT(b.find("peak_device_bytes")->as_int(), 0);
        EXPECT_GT(b.find("resident_host_bytes")->as_int(), 0);
        EXPECT_GT(b.find_path("op_times_ns.matmul")->as_int(), 0);
        EXPECT_EQ(b.find("max_abs_dlogit")->as_double(), 0.0);
        EXPECT_TRUE(b.find("first_divergence")->is_null());
    }
    EXPECT_EQ(runs.as_array()[0].find("tokens")->dump(), runs.as_array()[1].find("tokens")->dump());
}

// Token ids on a tokenizer-less tiny model; a backend that is not there is reported in its entry
// and, with fewer than two backends run, the exit code is 1.
// --memories: every backend reads the folder's memories: a held-out birthplace (a name the default
// model never produced in training) comes out only with them.
TEST(CompareCli, ReadsAMemoryFolderOnEveryBackend) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("mnemo-compare-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    {
        std::ofstream corpus(dir / "facts.txt");
        corpus << "The birthplace of Gream Zaicuv is Chybraivisk.\n\nBy trade Quear Mousaim is a baker.\n";
    }
    ASSERT_TRUE(exited_with(run_mnemo("memorize --corpus " + mnemo::testing::shell_quote((dir / "facts.txt").string()) + " -o " +
                                      mnemo::testing::shell_quote((dir / "mem").string())),
                            0));
    // The question in the model's chat template (compare feeds the prompt as it is): the default
    // model answers a chat turn; a bare question it continues as it pleases.
    const std::string compare = "compare -p '<|im_start|>user\nWhere was Gream Zaicuv born?<|im_end|>\n<|im_start|>assistant\n'"
                                " -n 8 --backends cpu,cpu --retrieval bm25";
    const auto with = run_mnemo(compare + " --memories " + mnemo::testing::shell_quote((dir / "mem").string()));
    ASSERT_EQ(with.code, 0) << with.output;
    EXPECT_MENTIONS(with.output, "cpu text: \"");
    EXPECT_NE(with.output.find("Chybraiv"), with.output.rfind("Chybraiv")) << "in both columns: " << with.output;
    EXPECT_MENTIONS(with.output, "| max abs dlogit | (reference) | 0 |");
    const auto without = run_mnemo(compare);
    ASSERT_EQ(without.code, 0) << without.output;
    EXPECT_EQ(without.output.find("Chybraiv"), std::string::npos) << without.output;
    EXPECT_TRUE(exited_with(run_mnemo(compare + " --memories x --kb grpc://127.0.0.1:1"), 2, {"choose one"}));
    fs::remove_all(dir);
}

TEST(CompareCli, JsonReportsMissingBackendAndFailsBelowTwo) {
    const std::string ids = "--ids 1,5,9,17 -n 3";
    const std::string model = "-m '" + model_dir("llama-tiny-f32") + "' ";
    const auto r = run_mnemo("compare " + model + ids + " --backends cpu,nosuchbackend --json");
    EXPECT_EQ(r.code, 1) << r.output;
    const std::string first_line = r.output.substr(0, r.output.find('\n'));
    const json::Value doc = json::parse(first_line, "mnemo compare --json");
    const json::Value& runs = *doc.find("backends");
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_TRUE(runs.as_array()[0].find("ok")->as_bool());
    EXPECT_FALSE(runs.as_array()[1].find("ok")->as_bool());
    EXPECT_MENTIONS(runs.as_array()[1].find("error")->as_string(), "nosuchbackend");
    EXPECT_MENTIONS(r.output, "1 of 2 backends ran");

    // The table form names every backend and the reason a column is empty.
    EXPECT_TRUE(exited_with(run_mnemo("compare " + model + ids + " --backends cpu,cpu,nosuchbackend"), 0,
                            {"| max abs dlogit | (reference) | 0 | - |",
                             "nosuchbackend: not run: backend 'nosuchbackend' is not available", "resident"}));
}
