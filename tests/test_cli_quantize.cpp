// `mnemo quantize IN OUT --type T` run as a separate process: the GGUF it writes loads with
// `-m FILE.gguf` and gives the folder's logits (f32) or close ones; each mix gives its tensors the
// types of docs/gguf.md's "Mixes" table (read back with Mnemo's GGUF reader); a GGUF IN works
// (a quantized one only with --allow-requantize); names Mnemo does not write and usage mistakes
// are refused with the reason, and a failed run leaves no OUT behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include "fixtures/error_checks.hpp"
#include "mnemo/io/gguf.hpp"
#include "model_test_util.hpp"
#include "npy.hpp"
#include "process_util.hpp"

namespace fs = std::filesystem;
using mnemo::testing::exited_with;
using mnemo::testing::run_mnemo;
using mnemo::testing::shell_quote;

namespace {

class CliQuantize : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("mnemo_cli_quantize_" + std::to_string(getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    // Logits of the golden prompt of llama-tiny-f32 from `model` (a folder or a GGUF file).
    std::vector<float> logits(const std::string& model, const std::vector<int32_t>& ids) {
        std::string list;
        for (const int32_t id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
        const std::string out = path("logits.npy");
        const auto r = run_mnemo("logits -m " + shell_quote(model) + " --ids " + list + " --out " + shell_quote(out));
        EXPECT_EQ(r.code, 0) << r.output;
        return mnemo::test::load_npy(out).as_f32();
    }

    std::string quantize(const std::string& in, const std::string& out, const std::string& type, const std::string& more = "") {
        const auto r = run_mnemo("quantize " + shell_quote(in) + " " + shell_quote(out) + " --type " + type + " --threads 2" + more);
        EXPECT_EQ(r.code, 0) << r.output;
        return r.output;
    }

    fs::path dir_;
};

// llama-tiny-f32 widened so that every weight's rows are whole blocks of 256 (hidden 256, 2 KV
// heads of 64, intermediate 512; 2 layers, vocab 320): the K-quants apply to every 2-D weight.
// Random weights (seeded), norms at 1.
class WideModel {
public:
    WideModel() : copy_(mnemo::test::model_dir("llama-tiny-f32")) {
        copy_.set_config("hidden_size", "256");
        copy_.set_config("intermediate_size", "512");
        copy_.set_config("head_dim", "64");
        std::mt19937 rng(11);
        std::normal_distribution<float> normal(0.0f, 0.05f);
        copy_.rewrite_tensors([&](mnemo::TensorToWrite& t, std::vector<uint8_t>& bytes) {
            for (int64_t& d : t.shape) d = d == 48 ? 256 : d == 24 ? 128 : d == 64 ? 512 : d;
            size_t n = 1;
            for (const int64_t d : t.shape) n *= static_cast<size_t>(d);
            std::vector<float> v(n);
            const bool norm = t.name.find("norm") != std::string::npos;
            for (float& x : v) x = norm ? 1.0f : normal(rng);
            bytes.resize(n * 4);
            std::memcpy(bytes.data(), v.data(), bytes.size());
            return true;
        });
    }
    const std::string& dir() const { return copy_.dir(); }

private:
    mnemo::test::ModelCopy copy_;
};

// The table of docs/gguf.md for this 2-layer model: the type each tensor must have in `mix`.
// use_more_bits(i, 2) holds for layer 1 only; q4_k_s lifts attn_v of layers < 4.
uint32_t expected_type(const std::string& mix, const std::string& name, size_t dims) {
    using namespace mnemo::ggml_type;
    const std::map<std::string, uint32_t> base = {{"q4_0", Q4_0}, {"q8_0", Q8_0}, {"q4_k_s", Q4_K}, {"q4_k_m", Q4_K},
                                                  {"q5_k_s", Q5_K}, {"q5_k_m", Q5_K}, {"q6_k", Q6_K}};
    if (dims < 2) return F32;
    if (name == "output.weight") return mix == "q8_0" ? Q8_0 : Q6_K;
    const bool m = mix == "q4_k_m" || mix == "q5_k_m";
    const bool v = name.ends_with("attn_v.weight"), down = name.ends_with("ffn_down.weight");
    if (m && (v || down) && name.starts_with("blk.1.")) return Q6_K;
    if (mix == "q4_k_s" && v) return Q5_K;
    return base.at(mix);
}

void expect_types_follow_the_table(const std::string& path, const std::string& mix, uint32_t file_type) {
    const mnemo::GgufFile f(path);
    EXPECT_EQ(f.get_int("general.file_type"), file_type) << mix;
    ASSERT_GT(f.header().tensors.size(), 18u);
    for (const mnemo::GgufTensorInfo& t : f.header().tensors)
        EXPECT_EQ(mnemo::ggml_type_label(t.type), mnemo::ggml_type_label(expected_type(mix, t.name, t.ne.size()))) << mix << " " << t.name;
}

}  // namespace

TEST_F(CliQuantize, TheFileItWritesRunsWithTheFoldersLogits) {
    const std::string folder = mnemo::test::model_dir("llama-tiny-f32");
    const std::vector<int32_t> ids = mnemo::test::read_ids(folder + "/golden_ids.txt");
    const std::vector<float> want = logits(folder, ids);
    for (const auto& [type, bound] : {std::pair{"f32", 1e-5}, std::pair{"q8_0", 0.01}}) {
        SCOPED_TRACE(type);
        const std::string out = path(std::string("tiny-") + type + ".gguf");
        const auto r = run_mnemo("quantize " + shell_quote(folder) + " " + shell_quote(out) + " --type " + type + " --threads 2");
        ASSERT_EQ(r.code, 0) << r.output;
        EXPECT_MENTIONS(r.output, "wrote " + out);
        ASSERT_TRUE(mnemo::looks_like_gguf(out));
        EXPECT_LT(mnemo::test::max_rel_error(logits(out, ids), want), bound);
    }
}

TEST_F(CliQuantize, WhatItCannotWriteIsRefusedWithTheReason) {
    const std::string folder = mnemo::test::model_dir("llama-tiny-f32");
    const std::string out = path("out.gguf");
    auto quantize = [&](const std::string& rest) { return run_mnemo("quantize " + rest); };
    EXPECT_TRUE(exited_with(quantize(shell_quote(folder) + " " + shell_quote(out) + " --type q3_k_m"), 2,
                            {"--type q3_k_m cannot be written", "llama-quantize", "accepted: f32, f16, bf16, q8_0, q4_0, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k"}));
    EXPECT_TRUE(exited_with(quantize(shell_quote(folder) + " " + shell_quote(out) + " --type q4_k"), 2, {"name the mix: q4_k_s / q4_k_m"}));
    EXPECT_TRUE(exited_with(quantize(shell_quote(folder) + " " + shell_quote(out) + " --type q3"), 2, {"--type 'q3'", "accepted: f32"}));
    EXPECT_TRUE(exited_with(quantize(shell_quote(folder) + " " + shell_quote(out)), 2, {"--type is required"}));
    EXPECT_TRUE(exited_with(quantize("--type q8_0"), 2, {"expected IN and OUT first"}));
    fs::create_directories(path("typeless"));
    std::ofstream(path("typeless/config.json")) << "{\"hidden_size\": 8}";
    EXPECT_TRUE(exited_with(quantize(shell_quote(path("typeless")) + " " + shell_quote(out) + " --type f16"), 1,
                            {"config.json: field 'model_type' is missing"}));
    EXPECT_TRUE(exited_with(quantize(shell_quote(path("missing")) + " " + shell_quote(out) + " --type f16"), 1, {"missing"}));
    EXPECT_FALSE(fs::exists(out)) << "a failed run left " << out;
    const auto help = quantize("--help");
    EXPECT_EQ(help.code, 0) << help.output;
    EXPECT_MENTIONS(help.output, "mnemo quantize IN OUT --type TYPE");
    EXPECT_MENTIONS(help.output, "q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k");
    EXPECT_MENTIONS(help.output, "--allow-requantize");
}

// Bounds: max |logit error| / max |logit| against the f32 folder, measured on this random model
// (q8_0 0.023, q6_k 0.062, q5_k_m 0.102, q5_k_s 0.103, q4_k_m 0.247, q4_k_s 0.227, q4_0 0.305: its
// untrained weights amplify every rounding) with about 1.4x margin; each K mix must also beat
// the mix below it in bits (q4_0 last).
TEST_F(CliQuantize, EachMixFollowsTheTableAndStaysCloseToTheF32Logits) {
    const WideModel wide;
    const std::vector<int32_t> ids = mnemo::test::read_ids(mnemo::test::model_dir("llama-tiny-f32") + "/golden_ids.txt");
    const std::vector<float> want = logits(wide.dir(), ids);
    struct Case {
        const char* mix;
        uint32_t file_type;
        double bound;
    };
    std::map<std::string, double> errs;
    for (const Case c : {Case{"q8_0", 7, 0.035}, Case{"q6_k", 18, 0.09}, Case{"q5_k_m", 17, 0.15}, Case{"q5_k_s", 16, 0.15},
                         Case{"q4_k_m", 15, 0.35}, Case{"q4_k_s", 14, 0.35}, Case{"q4_0", 2, 0.43}}) {
        SCOPED_TRACE(c.mix);
        const std::string out = path(std::string("wide-") + c.mix + ".gguf");
        quantize(wide.dir(), out, c.mix);
        expect_types_follow_the_table(out, c.mix, c.file_type);
        const double err = mnemo::test::max_rel_error(logits(out, ids), want);
        std::printf("%s: max relative logit error %.4g (bound %.3g)\n", c.mix, err, c.bound);
        EXPECT_LT(err, c.bound);
        errs[c.mix] = err;
    }
    EXPECT_LT(errs["q8_0"], errs["q6_k"]);
    EXPECT_LT(errs["q6_k"], std::min(errs["q5_k_m"], errs["q5_k_s"]));
    EXPECT_LT(std::max(errs["q5_k_m"], errs["q5_k_s"]), std::min(errs["q4_k_m"], errs["q4_k_s"]));
    EXPECT_LT(std::max(errs["q4_k_m"], errs["q4_k_s"]), errs["q4_0"]);
}

TEST_F(CliQuantize, AGgufInIsRewrittenInTheMix) {
    const WideModel wide;
    const std::vector<int32_t> ids = mnemo::test::read_ids(mnemo::test::model_dir("llama-tiny-f32") + "/golden_ids.txt");
    const std::vector<float> want = logits(wide.dir(), ids);
    const std::string f16 = path("wide-f16.gguf"), q4 = path("wide-q4_k_m.gguf"), q8 = path("wide-q8_0.gguf");
    quantize(wide.dir(), f16, "f16");
    quantize(f16, q4, "q4_k_m");
    expect_types_follow_the_table(q4, "q4_k_m", 15);
    EXPECT_LT(mnemo::test::max_rel_error(logits(q4, ids), want), 0.35);  // the folder's q4_k_m: 0.247
    {  // every key of the f16 file carried over, in order, the same but for general.file_type
        const mnemo::GgufFile a(f16), b(q4);
        ASSERT_EQ(a.header().metadata.size(), b.header().metadata.size());
        for (size_t i = 0; i < a.header().metadata.size(); ++i) {
            const auto& [ka, va] = a.header().metadata[i];
            const auto& [kb, vb] = b.header().metadata[i];
            EXPECT_EQ(ka, kb);
            if (ka == "general.file_type") continue;
            EXPECT_TRUE(va.type == vb.type && va.i == vb.i && va.f == vb.f && va.s == vb.s && va.count == vb.count && va.strings == vb.strings &&
                        va.ints == vb.ints && va.floats == vb.floats)
                << ka;
        }
    }
    // A quantized IN: refused without the flag (nothing written), a warning with it.
    EXPECT_TRUE(exited_with(run_mnemo("quantize " + shell_quote(q4) + " " + shell_quote(q8) + " --type q8_0"), 1,
                            {"requantizing", "loses quality", "--allow-requantize"}));
    EXPECT_FALSE(fs::exists(q8));
    const std::string output = quantize(q4, q8, "q8_0", " --allow-requantize");
    EXPECT_MENTIONS(output, "warning: requantizing");
    const mnemo::GgufFile f(q8);
    EXPECT_EQ(f.get_int("general.file_type"), 7);
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    EXPECT_EQ(mnemo::ggml_type_label(f.header().tensor("blk.0.attn_q.weight")->type), "Q8_0 (8)");
    EXPECT_LT(mnemo::test::max_rel_error(logits(q8, ids), want), 0.35);  // measured 0.274: q4_k_m's error stays
}
