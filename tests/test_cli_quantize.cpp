// `mnemo quantize IN OUT --type T` run as a separate process: the GGUF it writes loads with
// `-m FILE.gguf` and gives the folder's logits (f32) or close ones (q8_0); K-quant names and
// usage mistakes are refused with the reason, and a failed run leaves no OUT behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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

    fs::path dir_;
};

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
    EXPECT_TRUE(exited_with(quantize(shell_quote(folder) + " " + shell_quote(out) + " --type q4_k_m"), 1,
                            {"--type q4_k_m", "does not write them yet", "llama-quantize"}));
    EXPECT_TRUE(exited_with(quantize(shell_quote(folder) + " " + shell_quote(out) + " --type q3"), 2, {"--type 'q3'"}));
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
}
