// The ultramem plugin's load-time checks: a copy of a tiny UltraMem / UltraMemV2 test model with one
// config field or tensor broken must fail Session::open with a message naming the problem (the
// configs the official code cannot run, and checkpoints whose buffers are damaged).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "mnemo/error.hpp"
#include "mnemo/io/safetensors.hpp"
#include "mnemo/session/session.hpp"
#include "model_test_util.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using namespace mnemo::test;

namespace {

const char* const kV1 = "ultramem-tiny-f32";
const char* const kV2 = "ultramem_v2-tiny-f32";

// A scratch copy of a model folder; removed afterwards.
// A scratch copy of a test model (tests/model_test_util.hpp ModelCopy).
class Scratch : public ModelCopy {
public:
    explicit Scratch(const std::string& name) : ModelCopy(model_dir(name)) {}
    void set(const std::string& key, const std::string& value) const { set_config(key, value); }
    void edit(const std::function<bool(TensorToWrite&, std::vector<uint8_t>&)>& fn) const { rewrite_tensors(fn); }
};

std::string open_error(const Scratch& m) {
    try {
        open_model(m.dir());
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

#define EXPECT_MENTIONS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

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

TEST(UltraMemPlugin, V1WithMoreThanTwoHeads) {
    Scratch m(kV1);
    m.set("mem_head", "3");
    const std::string e = open_error(m);
    EXPECT_MENTIONS(e, "mem_head = 3");
    EXPECT_MENTIONS(e, "more than 2 heads");
}

TEST(UltraMemPlugin, V2WithTooManyHeadsForItsQueryBlocks) {
    Scratch m(kV2);
    m.set("mem_head", "5");
    const std::string e = open_error(m);
    EXPECT_MENTIONS(e, "mem_head = 5");
    EXPECT_MENTIONS(e, "at most 4 heads");
}

TEST(UltraMemPlugin, V2WithoutQueriesPerTuckerRank) {
    Scratch m(kV2);
    m.set("mem_q_for_each_tucker_rank", "false");
    EXPECT_MENTIONS(open_error(m), "mem_q_for_each_tucker_rank is false");
}

TEST(UltraMemPlugin, V2WithTuckerRankOtherThanTwo) {
    Scratch m(kV2);
    m.set("mem_tucker_rank", "3");
    EXPECT_MENTIONS(open_error(m), "mem_tucker_rank = 3");
}

TEST(UltraMemPlugin, KnnLargerThanTheSubKeys) {
    Scratch m(kV1);
    m.set("mem_knn", "9");  // Nk = 2 * knum = 8
    const std::string e = open_error(m);
    EXPECT_MENTIONS(e, "mem_knn = 9");
    EXPECT_MENTIONS(e, "1..8");
}

TEST(UltraMemPlugin, V2ValueExpansionNeitherOneNorKeyExpansionSquared) {
    Scratch m(kV2);
    m.set("mem_value_expand_time", "2");
    const std::string e = open_error(m);
    EXPECT_MENTIONS(e, "mem_value_expand_time = 2");
    EXPECT_MENTIONS(e, "mem_key_expand_time^2 = 4");
}

TEST(UltraMemPlugin, V2ShareRatioOutOfRange) {
    Scratch m(kV2);
    m.set("mem_share_ratio", "1.5");
    EXPECT_MENTIONS(open_error(m), "mem_share_ratio must be in (0, 1]");
}

TEST(UltraMemPlugin, ValueWidthNotSplitByTheCores) {
    Scratch m(kV1);
    m.set("mem_tucker_multihead", "3");
    EXPECT_MENTIONS(open_error(m), "mem_vdim (8) must be a positive multiple of mem_tucker_multihead (3)");
}

TEST(UltraMemPlugin, InsertWayPairsOutOfRangeOrOverlapping) {
    {
        Scratch m(kV1);
        m.set("mem_insert_way", "\"0:4\"");
        EXPECT_MENTIONS(open_error(m), "mem_insert_way pair 0:4 needs a <= b < num_hidden_layers (4)");
    }
    {
        Scratch m(kV1);
        m.set("mem_insert_way", "\"0:2/1:3\"");
        const std::string e = open_error(m);
        EXPECT_MENTIONS(e, "pairs 0:2 and 1:3 overlap");
        EXPECT_MENTIONS(e, "would be dropped");
    }
    {
        Scratch m(kV1);
        m.set("mem_insert_way", "\"2-5\"");
        EXPECT_MENTIONS(open_error(m), "\"2-5\" is not a pair");
    }
}

// ------------------------------------------------------------------ damaged tensors

TEST(UltraMemPlugin, MissingRankOneBuffer) {
    Scratch m(kV1);
    m.edit([](TensorToWrite& t, std::vector<uint8_t>&) { return t.name != "model.mem_blocks.1.tucker_core_v"; });
    const std::string e = open_error(m);
    EXPECT_MENTIONS(e, "'model.mem_blocks.1.tucker_core_v' is missing");
    EXPECT_MENTIONS(e, "set by training");
}

TEST(UltraMemPlugin, AllZeroRankOneBuffer) {
    Scratch m(kV2);
    m.edit([](TensorToWrite& t, std::vector<uint8_t>& b) {
        if (t.name == "model.mem_blocks.2.tucker_core_u") std::memset(b.data(), 0, b.size());
        return true;
    });
    const std::string e = open_error(m);
    EXPECT_MENTIONS(e, "'model.mem_blocks.2.tucker_core_u' is all zero for memory head 0");
}

TEST(UltraMemPlugin, ShuffleIndexWithARepeatedValue) {
    Scratch m(kV1);
    m.edit([](TensorToWrite& t, std::vector<uint8_t>& b) {
        if (t.name == "model.mem_blocks.0.shuffle_index") i32_data(b)[5] = i32_data(b)[2];
        return true;
    });
    const std::string e = open_error(m);
    EXPECT_MENTIONS(e, "model.mem_blocks.0.shuffle_index is not a permutation of 0..63");
    EXPECT_MENTIONS(e, "appears at entries 2 and 5");
}

TEST(UltraMemPlugin, ShuffleIndexOutOfRange) {
    Scratch m(kV2);
    m.edit([](TensorToWrite& t, std::vector<uint8_t>& b) {
        if (t.name == "model.mem_blocks.1.shuffle_index") i32_data(b)[7] = 144;  // 4 groups x 36 rows
        return true;
    });
    const std::string e = open_error(m);
    EXPECT_MENTIONS(e, "model.mem_blocks.1.shuffle_index is not a permutation of 0..143");
    EXPECT_MENTIONS(e, "entry 7 is 144");
}

TEST(UltraMemPlugin, ShuffleIndexStoredAsFloat) {
    Scratch m(kV1);
    m.edit([](TensorToWrite& t, std::vector<uint8_t>& b) {
        if (t.name == "model.mem_blocks.0.shuffle_index") {
            t.dtype = DType::F32;
            for (size_t i = 0; i < b.size() / 4; ++i) {
                const float f = static_cast<float>(i32_data(b)[i]);
                std::memcpy(b.data() + 4 * i, &f, 4);
            }
        }
        return true;
    });
    const std::string e = open_error(m);
    EXPECT_MENTIONS(e, "model.mem_blocks.0.shuffle_index");
    EXPECT_MENTIONS(e, "is f32, expected i32");
}

TEST(UltraMemPlugin, SharedTableOfTheWrongSize) {
    // 3 memory layers instead of 4 (skip-layer insertion) make the shared table 48 rows, not 64.
    Scratch m(kV2);
    m.set("mem_insert_way", "\"0:0/1:1/2:3\"");
    const std::string e = open_error(m);
    EXPECT_MENTIONS(e, "model.full_memory_layer.values_for_look_up");
    EXPECT_MENTIONS(e, "[48, 8]");
}

TEST(UltraMemPlugin, KeysOfTheWrongShape) {
    Scratch m(kV1);
    m.set("mem_knum", "5");  // Nk = 10 sub-keys per side expected, the checkpoint has 8
    const std::string e = open_error(m);
    EXPECT_MENTIONS(e, "model.mem_blocks.0.keys");
    EXPECT_MENTIONS(e, "[4, 10, 8, 2]");
}
