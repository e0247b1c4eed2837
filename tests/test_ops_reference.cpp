// The op references checked against numbers computed independently with NumPy
// (tools/reference/ops_golden.py -> tests/data/ops_golden/<case>/), plus the error paths the
// references promise (out-of-range indices, positions and sequence ids).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"
#include "npy.hpp"

namespace {

namespace fs = std::filesystem;
using mnemo::DType;
using mnemo::test::NpyArray;

const fs::path kGoldenDir = fs::path(MNEMO_TEST_DATA) / "ops_golden";

struct GoldenCase {
    std::string op_name;
    std::vector<NpyArray> inputs;
    std::vector<DType> dtypes;
    std::vector<int64_t> iparams;
    std::vector<float> fparams;
    NpyArray expected;
};

DType parse_dtype(const std::string& s, const fs::path& meta) {
    if (s == "f32") return DType::F32;
    if (s == "f16") return DType::F16;
    if (s == "bf16") return DType::BF16;
    if (s == "i32") return DType::I32;
    throw mnemo::Error(meta.string() + ": unknown dtype '" + s + "'");
}

GoldenCase load_case(const fs::path& folder) {
    const fs::path meta = folder / "meta.txt";
    std::ifstream f(meta);
    if (!f) throw mnemo::Error(meta.string() + ": cannot open");
    GoldenCase c;
    std::string line;
    while (std::getline(f, line)) {
        std::istringstream s(line);
        std::string key;
        s >> key;
        if (key == "op") {
            s >> c.op_name;
        } else if (key == "input") {
            std::string file, dtype;
            s >> file >> dtype;
            c.inputs.push_back(mnemo::test::load_npy((folder / file).string()));
            c.dtypes.push_back(parse_dtype(dtype, meta));
        } else if (key == "iparams") {
            for (int64_t v; s >> v;) c.iparams.push_back(v);
        } else if (key == "fparams") {
            // strtof: the generator prints each float32 exactly, so this round-trips bit for bit.
            for (std::string v; s >> v;) c.fparams.push_back(std::strtof(v.c_str(), nullptr));
        } else if (key == "expected") {
            std::string file;
            s >> file;
            c.expected = mnemo::test::load_npy((folder / file).string());
        } else if (!key.empty()) {
            throw mnemo::Error(meta.string() + ": unknown key '" + key + "'");
        }
    }
    return c;
}

mnemo_tensor tensor_of(void* data, DType dtype, const std::vector<int64_t>& shape) {
    mnemo_tensor t{};
    t.buffer = data;
    t.dtype = static_cast<int32_t>(dtype);
    t.ndim = static_cast<int32_t>(shape.size());
    for (size_t i = 0; i < shape.size() && i < MNEMO_MAX_DIMS; ++i) t.shape[i] = shape[i];
    return t;
}

std::vector<std::string> golden_case_names() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(kGoldenDir, ec))
        if (e.is_directory()) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

class OpsGolden : public testing::TestWithParam<std::string> {};

TEST_P(OpsGolden, MatchesNumpy) {
    GoldenCase c = load_case(kGoldenDir / GetParam());
    const auto op = mnemo::op_from_name(c.op_name);
    ASSERT_TRUE(op.has_value()) << "unknown op " << c.op_name;

    mnemo_node node{};
    node.op = *op;
    node.n_inputs = static_cast<int32_t>(c.inputs.size());
    for (size_t i = 0; i < c.inputs.size(); ++i)
        node.inputs[i] = tensor_of(c.inputs[i].bytes.data(), c.dtypes[i], c.inputs[i].shape);
    for (size_t i = 0; i < c.iparams.size(); ++i) node.iparams[i] = c.iparams[i];
    for (size_t i = 0; i < c.fparams.size(); ++i) node.fparams[i] = c.fparams[i];

    if (c.expected.descr == "<i4") {
        // Integer outputs (ARGTOPK's indices) are exact: compare every element for equality.
        const std::vector<int32_t> want = c.expected.as_i32();
        std::vector<int32_t> got(want.size(), -1);
        node.output = tensor_of(got.data(), DType::I32, c.expected.shape);
        mnemo::reference_compute(node);
        EXPECT_EQ(got, want) << c.op_name;
        return;
    }
    std::vector<float> out(static_cast<size_t>(c.expected.numel()), std::nanf(""));
    node.output = tensor_of(out.data(), DType::F32, c.expected.shape);
    if (mnemo::op_info(node.op).output_aliases_input0) {
        // The output is input 0's memory: run in place, then compare that memory.
        node.output.buffer = node.inputs[0].buffer;
    }
    mnemo::reference_compute(node);
    if (mnemo::op_info(node.op).output_aliases_input0) {
        std::memcpy(out.data(), c.inputs[0].bytes.data(), out.size() * sizeof(float));
    }

    const std::vector<float> want = c.expected.as_f32();
    ASSERT_EQ(want.size(), out.size());
    // Relative 1e-5 per element, with a floor of the row-independent RMS so that values near zero
    // (where a relative bound means nothing) are judged at the scale of the tensor.
    double sum_sq = 0.0;
    for (float v : want) sum_sq += static_cast<double>(v) * v;
    const double rms = want.empty() ? 0.0 : std::sqrt(sum_sq / static_cast<double>(want.size()));
    for (size_t i = 0; i < want.size(); ++i) {
        const double tol = 1e-5 * std::max(std::fabs(static_cast<double>(want[i])), rms);
        ASSERT_LE(std::fabs(static_cast<double>(out[i]) - want[i]), tol)
            << c.op_name << " element " << i << ": reference " << out[i] << ", numpy " << want[i];
    }
}

INSTANTIATE_TEST_SUITE_P(Golden, OpsGolden, testing::ValuesIn(golden_case_names()),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(OpsGoldenCoverage, EveryOpHasAGoldenCase) {
    std::set<std::string> covered;
    for (const std::string& name : golden_case_names()) covered.insert(load_case(kGoldenDir / name).op_name);
    ASSERT_FALSE(covered.empty()) << "no golden cases under " << kGoldenDir
                                  << " (regenerate: /usr/bin/python3 tools/reference/ops_golden.py tests/data/ops_golden)";
    for (int32_t op = 1; op < MNEMO_OP_COUNT_; ++op)
        EXPECT_TRUE(covered.count(mnemo::op_info(op).name)) << "op " << mnemo::op_info(op).name << " has no golden case";
}

// --- error paths -------------------------------------------------------------------------------

std::string error_of(const mnemo_node& node) {
    try {
        mnemo::reference_compute(node);
    } catch (const mnemo::Error& e) {
        return e.what();
    }
    return "";
}

TEST(OpsReference, GetRowsRejectsOutOfRangeIndexByName) {
    std::vector<float> table(4 * 2, 1.0f), out(3 * 2);
    std::vector<int32_t> idx = {1, 4, 0};
    mnemo_node n{};
    n.op = MNEMO_OP_GET_ROWS;
    n.n_inputs = 2;
    n.inputs[0] = tensor_of(table.data(), DType::F32, {4, 2});
    n.inputs[1] = tensor_of(idx.data(), DType::I32, {3});
    n.output = tensor_of(out.data(), DType::F32, {3, 2});
    const std::string msg = error_of(n);
    EXPECT_NE(msg.find("get_rows"), std::string::npos) << msg;
    EXPECT_NE(msg.find("index 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("row 4"), std::string::npos) << msg;
    idx[1] = -1;
    EXPECT_NE(error_of(n).find("row -1"), std::string::npos);
}

struct KvFixture {
    std::vector<float> cache = std::vector<float>(2 * 1 * 3 * 2, 7.0f);
    std::vector<float> src = {1, 2, 3, 4};
    std::vector<int32_t> seq = {0, 1}, pos = {2, 0};
    mnemo_node node() {
        mnemo_node n{};
        n.op = MNEMO_OP_KV_STORE;
        n.n_inputs = 4;
        n.inputs[0] = tensor_of(cache.data(), DType::F32, {2, 1, 3, 2});
        n.inputs[1] = tensor_of(src.data(), DType::F32, {2, 1, 2});
        n.inputs[2] = tensor_of(seq.data(), DType::I32, {2});
        n.inputs[3] = tensor_of(pos.data(), DType::I32, {2});
        n.output = n.inputs[0];
        return n;
    }
};

TEST(OpsReference, KvStoreWritesOnlyTheAddressedRows) {
    KvFixture f;
    mnemo::reference_compute(f.node());
    const std::vector<float> want = {7, 7, 7, 7, 1, 2, /* seq 1 */ 3, 4, 7, 7, 7, 7};
    EXPECT_EQ(f.cache, want);
}

TEST(OpsReference, KvStoreRejectsBadSequenceOrPositionAndLeavesCacheUntouched) {
    KvFixture f;
    f.pos[1] = 3;  // cache length is 3
    std::string msg = error_of(f.node());
    EXPECT_NE(msg.find("position 3"), std::string::npos) << msg;
    EXPECT_TRUE(std::all_of(f.cache.begin(), f.cache.end(), [](float v) { return v == 7.0f; }));
    f.pos[1] = 0;
    f.seq[0] = 2;
    msg = error_of(f.node());
    EXPECT_NE(msg.find("sequence id 2"), std::string::npos) << msg;
    EXPECT_TRUE(std::all_of(f.cache.begin(), f.cache.end(), [](float v) { return v == 7.0f; }));
}

TEST(OpsReference, AttentionRejectsPositionBeyondCache) {
    std::vector<float> q(2 * 2 * 4, 0.5f), k(1 * 1 * 3 * 4, 0.25f), v(1 * 1 * 3 * 2, 1.0f), out(2 * 2 * 2);
    std::vector<int32_t> seq = {0, 0}, pos = {1, 3};
    mnemo_node n{};
    n.op = MNEMO_OP_ATTENTION;
    n.n_inputs = 5;
    n.inputs[0] = tensor_of(q.data(), DType::F32, {2, 2, 4});
    n.inputs[1] = tensor_of(k.data(), DType::F32, {1, 1, 3, 4});
    n.inputs[2] = tensor_of(v.data(), DType::F32, {1, 1, 3, 2});
    n.inputs[3] = tensor_of(seq.data(), DType::I32, {2});
    n.inputs[4] = tensor_of(pos.data(), DType::I32, {2});
    n.output = tensor_of(out.data(), DType::F32, {2, 2, 2});
    n.fparams[0] = 0.5f;
    const std::string msg = error_of(n);
    EXPECT_NE(msg.find("attention"), std::string::npos) << msg;
    EXPECT_NE(msg.find("position 3"), std::string::npos) << msg;
    pos[1] = 2;
    mnemo::reference_compute(n);
    // Equal keys and values of 1: every output is exactly 1 whatever the weights.
    for (float o : out) EXPECT_FLOAT_EQ(o, 1.0f);
}

TEST(OpsReference, TakeAlongRejectsOutOfRangeIndexByName) {
    std::vector<float> x = {1, 2, 3, 4, 5, 6}, out(4);
    std::vector<int32_t> idx = {2, 0, 1, 3};
    mnemo_node n{};
    n.op = MNEMO_OP_TAKE_ALONG;
    n.n_inputs = 2;
    n.inputs[0] = tensor_of(x.data(), DType::F32, {2, 3});
    n.inputs[1] = tensor_of(idx.data(), DType::I32, {2, 2});
    n.output = tensor_of(out.data(), DType::F32, {2, 2});
    const std::string msg = error_of(n);
    EXPECT_NE(msg.find("take_along"), std::string::npos) << msg;
    EXPECT_NE(msg.find("index 3 is 3"), std::string::npos) << msg;
    idx[3] = -1;
    EXPECT_NE(error_of(n).find("is -1"), std::string::npos);
    idx[3] = 2;
    mnemo::reference_compute(n);
    EXPECT_EQ(out, (std::vector<float>{3, 1, 5, 6}));
}

TEST(OpsReference, EmbeddingBagRejectsOutOfRangeRowAndSumsRepeats) {
    std::vector<float> table = {1, 10, 2, 20, 3, 30}, w = {0.5f, 0.5f, 2.0f, -1.0f}, out(4);
    std::vector<int32_t> idx = {1, 1, 0, 3};
    mnemo_node n{};
    n.op = MNEMO_OP_EMBEDDING_BAG;
    n.n_inputs = 3;
    n.inputs[0] = tensor_of(table.data(), DType::F32, {3, 2});
    n.inputs[1] = tensor_of(idx.data(), DType::I32, {2, 2});
    n.inputs[2] = tensor_of(w.data(), DType::F32, {2, 2});
    n.output = tensor_of(out.data(), DType::F32, {2, 2});
    const std::string msg = error_of(n);
    EXPECT_NE(msg.find("embedding_bag"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bag 1 entry 1 is row 3"), std::string::npos) << msg;
    idx[3] = 2;
    mnemo::reference_compute(n);
    // Bag 0 holds row 1 twice (weights add up); bag 1 is 2*row0 - row2.
    EXPECT_EQ(out, (std::vector<float>{2, 20, -1, -10}));
}

TEST(OpsReference, ArgtopkOrdersTiesByIndexAndNanLast) {
    std::vector<float> x = {NAN, 1.0f, -INFINITY, 1.0f, -0.0f, 0.0f, NAN};
    std::vector<int32_t> out(7, -1);
    mnemo_node n{};
    n.op = MNEMO_OP_ARGTOPK;
    n.n_inputs = 1;
    n.inputs[0] = tensor_of(x.data(), DType::F32, {7});
    n.output = tensor_of(out.data(), DType::I32, {7});
    n.iparams[0] = 7;
    mnemo::reference_compute(n);
    EXPECT_EQ(out, (std::vector<int32_t>{1, 3, 4, 5, 2, 0, 6}));
}

TEST(OpsReference, RejectsOutputOfTheWrongShape) {
    std::vector<float> x(6, 1.0f), out(6);
    mnemo_node n{};
    n.op = MNEMO_OP_SILU;
    n.n_inputs = 1;
    n.inputs[0] = tensor_of(x.data(), DType::F32, {2, 3});
    n.output = tensor_of(out.data(), DType::F32, {3, 2});
    const std::string msg = error_of(n);
    EXPECT_NE(msg.find("silu: output is f32[3, 2]"), std::string::npos) << msg;
}

TEST(OpsReference, MatmulWithEmptyInnerDimensionGivesZeros) {
    std::vector<float> x(1), w(1), out(3 * 2, 5.0f);
    mnemo_node n{};
    n.op = MNEMO_OP_MATMUL;
    n.n_inputs = 2;
    n.inputs[0] = tensor_of(x.data(), DType::F32, {3, 0});
    n.inputs[1] = tensor_of(w.data(), DType::F32, {2, 0});
    n.output = tensor_of(out.data(), DType::F32, {3, 2});
    mnemo::reference_compute(n);
    for (float o : out) EXPECT_EQ(o, 0.0f);
}

}  // namespace

namespace {

// tests/npy.hpp, the reader the golden tests rely on: malformed files throw, never crash.
std::vector<uint8_t> npy_image(const std::string& dict, size_t data_bytes) {
    std::string header = dict;
    while ((10 + header.size() + 1) % 64) header += ' ';
    header += '\n';
    // Built as a string (magic, version 1.0, little-endian header length, header, zeroed data):
    // GCC 12 misreports -Warray-bounds for vector::insert after a brace-initialised vector.
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    bytes += header;
    bytes.append(data_bytes, '\0');
    return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

TEST(NpyReader, ReadsAndRejectsMalformedFiles) {
    const auto ok = mnemo::test::parse_npy(npy_image("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", 24), "ok");
    EXPECT_EQ(ok.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(ok.as_i32().size(), 6u);
    EXPECT_THROW(ok.as_f32(), mnemo::Error);
    const auto scalar = mnemo::test::parse_npy(npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4), "s");
    EXPECT_EQ(scalar.numel(), 1);
    const char* bad[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",            // data too short
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }",              // unsupported dtype
        "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }",               // Fortran order
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }",  // overflow
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,x), }",             // junk
        "{'descr': '<f4', 'fortran_order': False, }",                             // no shape
    };
    for (const char* dict : bad) EXPECT_THROW(mnemo::test::parse_npy(npy_image(dict, 4), "bad"), mnemo::Error) << dict;
    std::vector<uint8_t> truncated = npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4);
    truncated.resize(20);
    EXPECT_THROW(mnemo::test::parse_npy(truncated, "t"), mnemo::Error);
    EXPECT_THROW(mnemo::test::parse_npy({1, 2, 3}, "tiny"), mnemo::Error);
}

}  // namespace
