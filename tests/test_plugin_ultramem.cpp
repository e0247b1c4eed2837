// The ultramem plugin's load-time checks: a copy of a tiny UltraMem / UltraMemV2 test model with one
// config field or tensor broken must fail Session::open with a message naming the problem (the
// configs the official code cannot run, and checkpoints whose buffers are damaged).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fixtures/load_errors.hpp"
#include "mnemo/io/safetensors.hpp"
#include "model_test_util.hpp"

using namespace mnemo;
using namespace mnemo::test;

namespace {

const char* const kV1 = "ultramem-tiny-f32";
const char* const kV2 = "ultramem_v2-tiny-f32";

int32_t* i32_data(std::vector<uint8_t>& bytes) { return reinterpret_cast<int32_t*>(bytes.data()); }

}  // namespace

TEST(UltraMemPlugin, TinyModelsOpenAndDescribeThemselves) {
    auto v1 = open_model(model_dir(kV1));
    EXPECT_MENTIONS(v1->summary().architecture, "UltraMem V1");
    EXPECT_MENTIONS(v1->summary().architecture, "0:2/3:3");
    auto v2 = open_model(model_dir(kV2));
    EXPECT_MENTIONS(v2->summary().architecture, "UltraMemV2");
    EXPECT_MENTIONS(v2->summary().architecture, "linear");
}

// ------------------------------------------------------------------ configs the official code cannot run

// Config edits the official code cannot run or the checkpoint does not match, each refused at load
// time by name: UltraMemPlugin/UltraMemBadConfig.IsRefused/<case>.
class UltraMemBadConfig : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(UltraMemBadConfig, IsRefused) { expect_refused(GetParam()); }

const RefusalCase kBadConfigs[] = {
    {"V1WithMoreThanTwoHeads", {{kV1, "mem_head", "3", {"mem_head = 3", "more than 2 heads"}}}},
    {"V2WithTooManyHeadsForItsQueryBlocks", {{kV2, "mem_head", "5", {"mem_head = 5", "at most 4 heads"}}}},
    {"V2WithoutQueriesPerTuckerRank",
     {{kV2, "mem_q_for_each_tucker_rank", "false", {"mem_q_for_each_tucker_rank is false"}}}},
    {"V2WithTuckerRankOtherThanTwo", {{kV2, "mem_tucker_rank", "3", {"mem_tucker_rank = 3"}}}},
    // Nk = 2 * knum = 8
    {"KnnLargerThanTheSubKeys", {{kV1, "mem_knn", "9", {"mem_knn = 9", "1..8"}}}},
    {"V2ValueExpansionNeitherOneNorKeyExpansionSquared",
     {{kV2, "mem_value_expand_time", "2", {"mem_value_expand_time = 2", "mem_key_expand_time^2 = 4"}}}},
    {"V2ShareRatioOutOfRange", {{kV2, "mem_share_ratio", "1.5", {"mem_share_ratio must be in (0, 1]"}}}},
    {"ValueWidthNotSplitByTheCores",
     {{kV1, "mem_tucker_multihead", "3", {"mem_vdim (8) must be a positive multiple of mem_tucker_multihead (3)"}}}},
    {"InsertWayPairsOutOfRangeOrOverlapping",
     {{kV1, "mem_insert_way", "\"0:4\"", {"mem_insert_way pair 0:4 needs a <= b < num_hidden_layers (4)"}},
      {kV1, "mem_insert_way", "\"0:2/1:3\"", {"pairs 0:2 and 1:3 overlap", "would be dropped"}},
      {kV1, "mem_insert_way", "\"2-5\"", {"\"2-5\" is not a pair"}}}},
    // 3 memory layers instead of 4 (skip-layer insertion) make the shared table 48 rows, not 64.
    {"SharedTableOfTheWrongSize",
     {{kV2, "mem_insert_way", "\"0:0/1:1/2:3\"", {"model.full_memory_layer.values_for_look_up", "[48, 8]"}}}},
    // Nk = 10 sub-keys per side expected, the checkpoint has 8.
    {"KeysOfTheWrongShape", {{kV1, "mem_knum", "5", {"model.mem_blocks.0.keys", "[4, 10, 8, 2]"}}}},
};

INSTANTIATE_TEST_SUITE_P(UltraMemPlugin, UltraMemBadConfig, ::testing::ValuesIn(kBadConfigs), refusal_case_name);

// ------------------------------------------------------------------ damaged tensors

TEST(UltraMemPlugin, MissingRankOneBuffer) {
    ModelCopy m(model_dir(kV1));
    m.drop_tensor("model.mem_blocks.1.tucker_core_v");
    const std::string e = open_error(m.dir());
    EXPECT_MENTIONS(e, "'model.mem_blocks.1.tucker_core_v' is missing");
    EXPECT_MENTIONS(e, "set by training");
}

TEST(UltraMemPlugin, AllZeroRankOneBuffer) {
    const auto zero = [](TensorToWrite&, std::vector<uint8_t>& b) { std::memset(b.data(), 0, b.size()); };
    const std::string e = error_with_tensor_edit(kV2, "model.mem_blocks.2.tucker_core_u", zero);
    EXPECT_MENTIONS(e, "'model.mem_blocks.2.tucker_core_u' is all zero for memory head 0");
}

TEST(UltraMemPlugin, ShuffleIndexWithARepeatedValue) {
    const auto repeat = [](TensorToWrite&, std::vector<uint8_t>& b) { i32_data(b)[5] = i32_data(b)[2]; };
    const std::string e = error_with_tensor_edit(kV1, "model.mem_blocks.0.shuffle_index", repeat);
    EXPECT_MENTIONS(e, "model.mem_blocks.0.shuffle_index is not a permutation of 0..63");
    EXPECT_MENTIONS(e, "appears at entries 2 and 5");
}

TEST(UltraMemPlugin, ShuffleIndexOutOfRange) {
    const auto past_end = [](TensorToWrite&, std::vector<uint8_t>& b) { i32_data(b)[7] = 144; };  // 4 groups x 36 rows
    const std::string e = error_with_tensor_edit(kV2, "model.mem_blocks.1.shuffle_index", past_end);
    EXPECT_MENTIONS(e, "model.mem_blocks.1.shuffle_index is not a permutation of 0..143");
    EXPECT_MENTIONS(e, "entry 7 is 144");
}

TEST(UltraMemPlugin, ShuffleIndexStoredAsFloat) {
    const auto as_float = [](TensorToWrite& t, std::vector<uint8_t>& b) {
        t.dtype = DType::F32;
        for (size_t i = 0; i < b.size() / 4; ++i) {
            const float f = static_cast<float>(i32_data(b)[i]);
            std::memcpy(b.data() + 4 * i, &f, 4);
        }
    };
    const std::string e = error_with_tensor_edit(kV1, "model.mem_blocks.0.shuffle_index", as_float);
    EXPECT_MENTIONS(e, "model.mem_blocks.0.shuffle_index");
    EXPECT_MENTIONS(e, "is f32, expected i32");
}
