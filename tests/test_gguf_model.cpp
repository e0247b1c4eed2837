// Models read from GGUF files (engine/src/gguf/): a model folder written as GGUF by
// convert_to_gguf (what `mnemo quantize` runs) gives the folder's golden logits when the weights
// keep their precision (F32, F16), and close ones when quantized; what a GGUF model file can get
// wrong is an error naming the file and the key or tensor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fixtures/error_checks.hpp"
#include "fixtures/golden_logits.hpp"
#include "mnemo/io/gguf.hpp"
#include "mnemo/io/gguf_convert.hpp"
#include "model_test_util.hpp"

using namespace mnemo;
using namespace mnemo::test;
namespace fs = std::filesystem;

namespace {

class GgufModel : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("mnemo-gguf-model-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string convert(const std::string& model, uint32_t type) {
        const std::string out = (dir_ / (model + ".gguf")).string();
        GgufConvertOptions o;
        o.type = type;
        convert_to_gguf(model_dir(model), out, o);
        return out;
    }

    fs::path dir_;
};

}  // namespace

TEST_F(GgufModel, F32AndF16FilesGiveTheFoldersGoldenLogits) {
    for (const auto& [model, type] : {std::pair{"llama-tiny-f32", ggml_type::F32}, std::pair{"llama-tiny-f16", ggml_type::F16},
                                      std::pair{"qwen2-tiny-f32", ggml_type::F32}, std::pair{"llama3-tiny-f32", ggml_type::F32}}) {
        SCOPED_TRACE(model);
        const std::string gguf = convert(model, type);
        ASSERT_TRUE(looks_like_gguf(gguf));
        ASSERT_NO_FATAL_FAILURE(expect_golden_logits(gguf, load_golden(model_dir(model))));
    }
}

TEST_F(GgufModel, QuantizedFilesStayCloseToTheGoldenLogits) {
    const Golden g = load_golden(model_dir("llama-tiny-f32"));
    const std::vector<float> want = g.logits.as_f32();
    for (const auto& [type, bound] : {std::pair{ggml_type::Q8_0, 0.01}, std::pair{ggml_type::Q4_0, 0.15}}) {
        SCOPED_TRACE(ggml_type_label(type));
        const std::vector<float> got = prompt_logits(convert("llama-tiny-f32", type), g.ids);
        ASSERT_EQ(got.size(), want.size());
        EXPECT_TRUE(all_finite(got));
        const double err = max_rel_error(got, want);
        EXPECT_LT(err, bound);
        std::printf("%s: max relative error %.4g (bound %.3g)\n", ggml_type_label(type).c_str(), err, bound);
    }
}

TEST_F(GgufModel, WhatTheFileLacksIsNamed) {
    const std::string bad_arch = (dir_ / "bert.gguf").string();
    write_gguf(bad_arch, {{"general.architecture", gguf_string("bert")}}, {});
    EXPECT_MENTIONS(required_error("a bert file", [&] { open_model(bad_arch); }),
                    "key 'general.architecture' is 'bert': Mnemo reads the GGUF architectures llama, qwen2 and its own mnemo_<model_type>");
    const std::string no_layers = (dir_ / "nolayers.gguf").string();
    write_gguf(no_layers, {{"general.architecture", gguf_string("llama")}, {"llama.embedding_length", gguf_u32(64)}}, {});
    EXPECT_MENTIONS(required_error("a file without block_count", [&] { open_model(no_layers); }),
                    "key 'llama.block_count' is missing (expected an integer)");
    const std::string not_a_model = (dir_ / "notes.txt").string();
    std::ofstream(not_a_model) << "hello";
    EXPECT_MENTIONS(required_error("a text file", [&] { open_model(not_a_model); }), "is neither a model folder nor a GGUF file");
}

TEST_F(GgufModel, TensorTypesMnemoCannotReadAreNamed) {
    const std::string f = convert("llama-tiny-f32", ggml_type::F32);
    // Rewrite one tensor as IQ2_XXS (16): same block of 256, 66 bytes. The model is too small for
    // a 256-wide row, so write a file with a single such tensor next to the real ones' metadata.
    GgufFile src(f);
    GgufMetadata md = src.header().metadata;
    std::vector<uint8_t> junk(66, 0);
    const std::string iq = (dir_ / "iq.gguf").string();
    std::vector<GgufTensorToWrite> tensors;
    for (const GgufTensorInfo& t : src.header().tensors)
        tensors.push_back({t.name, t.type, t.shape(), src.tensor_data(t), t.nbytes});
    tensors.push_back({"blk.0.extra.weight", 16, {1, 256}, junk.data(), junk.size()});
    write_gguf(iq, md, tensors);
    EXPECT_MENTIONS(required_error("an IQ2_XXS tensor", [&] { open_model(iq); }),
                    "tensor 'blk.0.extra.weight' is IQ2_XXS (16), which Mnemo cannot read");
}

// Every tiny test model, Mnemo's own architectures included (mnemo_<model_type>: config.json
// whole, tensors under the plugin's names), gives its golden logits from an F32 GGUF.
TEST_F(GgufModel, EveryTestModelGivesItsGoldenLogitsFromAnF32File) {
    int checked = 0;
    for (const std::string& name : tiny_model_folders()) {
        const std::string folder = model_dir(name);
        if (!fs::exists(folder + "/golden_logits.npy")) continue;
        SCOPED_TRACE(name);
        const std::string out = (dir_ / (name + ".gguf")).string();
        GgufConvertOptions o;
        o.type = ggml_type::F32;
        try {
            convert_to_gguf(folder, out, o);
            expect_golden_logits(out, load_golden(folder));
            // Mnemo's own architectures keep the folder's config and, with F32 weights from an F32
            // folder, its fingerprint: memories made with the folder still fit.
            if (GgufFile(out).get_string("general.architecture").rfind("mnemo_", 0) == 0 && name.ends_with("-f32")) {
                EXPECT_EQ(open_model(out)->model_fingerprint(), open_model(folder)->model_fingerprint());
            }
        } catch (const std::exception& e) {
            ADD_FAILURE() << e.what();
        }
        ++checked;
    }
    EXPECT_GE(checked, 15);
}

TEST_F(GgufModel, AMnemoArchitectureMustCarryItsConfig) {
    const std::string f = (dir_ / "pkm.gguf").string();
    write_gguf(f, {{"general.architecture", gguf_string("mnemo_pkm")}}, {});
    EXPECT_MENTIONS(required_error("no config", [&] { open_model(f); }), "key 'mnemo.config_json' is missing");
    write_gguf(f, {{"general.architecture", gguf_string("mnemo_pkm")}, {"mnemo.config_json", gguf_string("{\"model_type\": \"moe\"}")}}, {});
    EXPECT_MENTIONS(required_error("another model_type", [&] { open_model(f); }), "model_type 'pkm'");
    write_gguf(f, {{"general.architecture", gguf_string("mnemo_pkm")}, {"mnemo.config_json", gguf_string("{\"model_type\": ")}}, {});
    EXPECT_MENTIONS(required_error("broken JSON", [&] { open_model(f); }), "key 'mnemo.config_json'");
}
