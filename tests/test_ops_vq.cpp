// VQ_DECODE against FAISS itself: codecs trained by FAISS 1.7.3 (tools/reference/ops_golden_vq.py
// -> tests/data/ops_golden/vq/), their codebooks loaded through the engine's loader with their
// SHA-256, their codes decoded by the reference and by the CPU backend, which must reproduce
// FAISS's sa_decode bit for bit; Vulkan (when a device exists) within 1e-6. Then the algebra
// Memory3's device decode relies on: decoding without A and rotating with A^T is decoding with
// A, and attention can be taken in rotated space (q.k = (A q).k_r, sum a_j v_j = A^T sum a_j v_r_j).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/modules/registry.hpp"
#include "mnemo/memory/vq_codebook.hpp"
#include "fixtures/node_runner.hpp"
#include "npy.hpp"

namespace {

using mnemo::test::NodeRunner;

namespace fs = std::filesystem;
using mnemo::DType;

const fs::path kDir = fs::path(MNEMO_TEST_DATA) / "ops_golden" / "vq";

struct Golden {
    std::string name;
    mnemo::VqCodebook cb;
    int64_t n = 0;
    std::vector<int32_t> words;   // [n, cb.code_words()]
    std::vector<float> decoded;   // FAISS sa_decode [n, d_in]
    std::vector<float> rotated;   // FAISS Index2Layer sa_decode [n, d_out] (codecs with a rotation)
};

Golden load_golden(const std::string& name) {
    Golden g;
    g.name = name;
    std::ifstream hash_file(kDir / (name + ".sha256"));
    std::string hash;
    hash_file >> hash;
    g.cb = mnemo::load_vq_codebook((kDir / (name + ".mvqc")).string(), hash);
    const mnemo::test::NpyArray codes = mnemo::test::load_npy((kDir / (name + "_codes.npy")).string());
    if (codes.descr != "|u1" || codes.shape.size() != 2 || codes.shape[1] != g.cb.code_size())
        throw mnemo::Error(name + "_codes.npy: expected uint8 [n, " + std::to_string(g.cb.code_size()) + "]");
    g.n = codes.shape[0];
    g.words = mnemo::vq_code_words(codes.bytes.data(), static_cast<size_t>(g.n), g.cb.code_size(), g.cb.code_words());
    g.decoded = mnemo::test::load_npy((kDir / (name + "_decoded.npy")).string()).as_f32();
    if (g.cb.has_rotation()) g.rotated = mnemo::test::load_npy((kDir / (name + "_rotated.npy")).string()).as_f32();
    return g;
}

mnemo_tensor host_tensor(const void* data, DType dtype, const std::vector<int64_t>& shape) {
    mnemo_tensor t{};
    t.buffer = const_cast<void*>(data);
    t.dtype = static_cast<int32_t>(dtype);
    t.ndim = static_cast<int32_t>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
    return t;
}

// The VQ_DECODE node over host memory; `out` sized by the caller.
mnemo_node vq_node(const Golden& g, const std::vector<int32_t>& words, bool with_rotation, std::vector<float>& out) {
    const mnemo::VqCodebook& cb = g.cb;
    const int64_t n = static_cast<int64_t>(words.size() / cb.code_words());
    const int64_t d = with_rotation ? cb.d_in : cb.d_out;
    out.assign(static_cast<size_t>(n * d), std::nanf(""));
    mnemo_node node{};
    node.op = MNEMO_OP_VQ_DECODE;
    node.n_inputs = with_rotation ? 4 : 3;
    node.inputs[0] = host_tensor(words.data(), DType::I32, {n, cb.code_words()});
    node.inputs[1] = host_tensor(cb.coarse.data(), DType::F32, {cb.coarse_m, int64_t{1} << cb.coarse_nbits, cb.d_out / cb.coarse_m});
    node.inputs[2] = host_tensor(cb.pq.data(), DType::F32, {cb.pq_m, int64_t{1} << cb.pq_nbits, cb.d_out / cb.pq_m});
    if (with_rotation) node.inputs[3] = host_tensor(cb.rotation.data(), DType::F32, {cb.d_out, cb.d_in});
    node.iparams[0] = cb.coarse_nbits;
    node.iparams[1] = cb.pq_nbits;
    node.output = host_tensor(out.data(), DType::F32, {n, d});
    return node;
}

NodeRunner& cpu() {
    static NodeRunner d("cpu");
    return d;
}
NodeRunner& vulkan() {
    static NodeRunner d("vulkan");
    return d;
}

// Index of the first element whose bits differ (-1: identical). Bits, not values: -0 vs +0 or a
// NaN payload would count.
int64_t first_bit_difference(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return 0;
    for (size_t i = 0; i < a.size(); ++i) {
        uint32_t x, y;
        std::memcpy(&x, &a[i], 4);
        std::memcpy(&y, &b[i], 4);
        if (x != y) return static_cast<int64_t>(i);
    }
    return -1;
}

#define EXPECT_SAME_BITS(got, want, what)                                                                 \
    do {                                                                                                  \
        const std::vector<float>& got_ = (got);                                                          \
        const std::vector<float>& want_ = (want);                                                        \
        const int64_t at_ = first_bit_difference(got_, want_);                                           \
        if (at_ >= 0 && got_.size() == want_.size())                                                      \
            ADD_FAILURE() << (what) << ": element " << at_ << " is " << got_[static_cast<size_t>(at_)]    \
                          << ", FAISS " << want_[static_cast<size_t>(at_)];                               \
        else if (at_ >= 0)                                                                                \
            ADD_FAILURE() << (what) << ": " << got_.size() << " elements, FAISS " << want_.size();         \
    } while (0)

class VqGolden : public testing::TestWithParam<std::string> {};

TEST_P(VqGolden, ReferenceAndCpuReproduceFaissBitForBit) {
    const Golden g = load_golden(GetParam());
    ASSERT_EQ(g.decoded.size(), static_cast<size_t>(g.n) * g.cb.d_in);
    std::vector<float> out;
    mnemo::reference_compute(vq_node(g, g.words, g.cb.has_rotation(), out));
    EXPECT_SAME_BITS(out, g.decoded, g.name + " reference");
    if (g.cb.has_rotation()) {
        // Without A: FAISS's inner Index2Layer decode, the rotated space.
        std::vector<float> rotated;
        mnemo::reference_compute(vq_node(g, g.words, false, rotated));
        EXPECT_SAME_BITS(rotated, g.rotated, g.name + " reference, rotated space");
    }
    ASSERT_TRUE(cpu().available()) << "the CPU backend did not load from " << MNEMO_BUILD_BIN;
    for (bool with_rotation : {true, false}) {
        if (with_rotation && !g.cb.has_rotation()) continue;
        std::vector<float> got;
        const mnemo_node node = vq_node(g, g.words, with_rotation, got);
        ASSERT_EQ(cpu().run(node), "");
        EXPECT_SAME_BITS(got, with_rotation || !g.cb.has_rotation() ? g.decoded : g.rotated,
                         g.name + (with_rotation ? " cpu" : " cpu, rotated space"));
    }
}

TEST_P(VqGolden, VulkanMatchesFaissWithin1e6) {
    if (!vulkan().available()) GTEST_SKIP() << "no Vulkan device";
    const Golden g = load_golden(GetParam());
    std::vector<float> got;
    ASSERT_EQ(vulkan().run(vq_node(g, g.words, g.cb.has_rotation(), got)), "");
    double scale = 0.0;
    for (float v : g.decoded) scale = std::max(scale, std::fabs(static_cast<double>(v)));
    for (size_t i = 0; i < got.size(); ++i)
        ASSERT_LE(std::fabs(static_cast<double>(got[i]) - g.decoded[i]), 1e-6 * scale) << g.name << " element " << i;
}

// Decoding without A, then x = A^T y with the contract's order (each product rounded: the
// volatile keeps the compiler from fusing it into the addition), is decoding with A.
TEST_P(VqGolden, RotatingTheRotatedDecodeIsTheFullDecode) {
    const Golden g = load_golden(GetParam());
    if (!g.cb.has_rotation()) GTEST_SKIP() << g.name << " has no rotation";
    std::vector<float> y, x;
    mnemo::reference_compute(vq_node(g, g.words, false, y));
    mnemo::reference_compute(vq_node(g, g.words, true, x));
    const int64_t d_out = g.cb.d_out, d_in = g.cb.d_in;
    std::vector<float> rotated(static_cast<size_t>(g.n * d_in), 0.0f);
    for (int64_t r = 0; r < g.n; ++r)
        for (int64_t l = 0; l < d_out; ++l)
            for (int64_t i = 0; i < d_in; ++i) {
                volatile float product = y[static_cast<size_t>(r * d_out + l)] * g.cb.rotation[static_cast<size_t>(l * d_in + i)];
                float& acc = rotated[static_cast<size_t>(r * d_in + i)];
                acc = acc + product;
            }
    EXPECT_SAME_BITS(rotated, x, g.name + " A^T (decode without A)");
}

// One head of attention over decoded memory keys and values, both ways (vq_codec.py's
// attention_decoded / attention_rotated): with vectors decoded all the way, and with keys and
// values left in rotated space, the query rotated once (A q) and the weighted value sum rotated
// back once (A^T). Exact algebra for any A; the f32 decode leaves a few ulps.
TEST_P(VqGolden, AttentionInRotatedSpace) {
    const Golden g = load_golden(GetParam());
    if (!g.cb.has_rotation()) GTEST_SKIP() << g.name << " has no rotation";
    const int64_t d_in = g.cb.d_in, d_out = g.cb.d_out, w = g.cb.code_words();
    const int64_t n_mem = std::min<int64_t>(40, g.n / 2);
    const std::vector<int32_t> key_codes(g.words.begin(), g.words.begin() + n_mem * w);
    const std::vector<int32_t> value_codes(g.words.begin() + n_mem * w, g.words.begin() + 2 * n_mem * w);
    std::vector<float> k, v, k_r, v_r;
    mnemo::reference_compute(vq_node(g, key_codes, true, k));
    mnemo::reference_compute(vq_node(g, value_codes, true, v));
    mnemo::reference_compute(vq_node(g, key_codes, false, k_r));
    mnemo::reference_compute(vq_node(g, value_codes, false, v_r));
    const std::vector<float>& a = g.cb.rotation;  // [d_out, d_in]

    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d_in));
    for (int q_i = 0; q_i < 4; ++q_i) {
        std::vector<double> q(static_cast<size_t>(d_in)), aq(static_cast<size_t>(d_out), 0.0);
        for (double& e : q) e = normal(rng);
        for (int64_t l = 0; l < d_out; ++l)
            for (int64_t i = 0; i < d_in; ++i) aq[static_cast<size_t>(l)] += a[static_cast<size_t>(l * d_in + i)] * q[static_cast<size_t>(i)];
        auto softmax_weights = [&](const std::vector<float>& keys, const std::vector<double>& query, int64_t d) {
            std::vector<double> s(static_cast<size_t>(n_mem));
            for (int64_t j = 0; j < n_mem; ++j)
                for (int64_t c = 0; c < d; ++c) s[static_cast<size_t>(j)] += scale * keys[static_cast<size_t>(j * d + c)] * query[static_cast<size_t>(c)];
            const double top = *std::max_element(s.begin(), s.end());
            double sum = 0.0;
            for (double& e : s) sum += (e = std::exp(e - top));
            for (double& e : s) e /= sum;
            return s;
        };
        const std::vector<double> p = softmax_weights(k, q, d_in), p_r = softmax_weights(k_r, aq, d_out);
        std::vector<double> direct(static_cast<size_t>(d_in), 0.0), sum_r(static_cast<size_t>(d_out), 0.0), back(static_cast<size_t>(d_in), 0.0);
        for (int64_t j = 0; j < n_mem; ++j) {
            EXPECT_NEAR(p[static_cast<size_t>(j)], p_r[static_cast<size_t>(j)], 1e-5 * std::max(p[static_cast<size_t>(j)], 1e-3));
            for (int64_t i = 0; i < d_in; ++i) direct[static_cast<size_t>(i)] += p[static_cast<size_t>(j)] * v[static_cast<size_t>(j * d_in + i)];
            for (int64_t l = 0; l < d_out; ++l) sum_r[static_cast<size_t>(l)] += p_r[static_cast<size_t>(j)] * v_r[static_cast<size_t>(j * d_out + l)];
        }
        for (int64_t l = 0; l < d_out; ++l)
            for (int64_t i = 0; i < d_in; ++i) back[static_cast<size_t>(i)] += a[static_cast<size_t>(l * d_in + i)] * sum_r[static_cast<size_t>(l)];
        double norm = 0.0;
        for (double e : direct) norm = std::max(norm, std::fabs(e));
        for (int64_t i = 0; i < d_in; ++i)
            EXPECT_NEAR(back[static_cast<size_t>(i)], direct[static_cast<size_t>(i)], 1e-5 * norm) << "query " << q_i << " column " << i;
    }
}

// The cost the planner sees: one addition per rotated element, then Do multiply-adds per output.
TEST(VqDecode, FlopCount) {
    const Golden g = load_golden("opq16");
    std::vector<float> out;
    const double n = static_cast<double>(g.n), d_out = g.cb.d_out, d_in = g.cb.d_in;
    EXPECT_DOUBLE_EQ(mnemo::node_flops(vq_node(g, g.words, true, out)), n * d_out + 2.0 * n * d_in * d_out);
    EXPECT_DOUBLE_EQ(mnemo::node_flops(vq_node(g, g.words, false, out)), n * d_out);
}

INSTANTIATE_TEST_SUITE_P(Faiss, VqGolden, testing::Values("opq16", "flat24"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

// A coarse list number >= 2^(Mc*bc) is a corrupt code: the reference and every backend refuse
// it, naming the value; the next good run still works.
TEST(VqDecode, CorruptCoarseCodeIsAnError) {
    const Golden g = load_golden("opq16");  // Mc*bc = 12: list numbers are the low 16 bits of word 0
    std::vector<int32_t> bad = g.words;
    const size_t row = 7;
    const int32_t list = 4096 + 5;
    bad[row * g.cb.code_words()] = (bad[row * g.cb.code_words()] & ~0xFFFF) | list;
    std::vector<float> out;
    try {
        mnemo::reference_compute(vq_node(g, bad, true, out));
        ADD_FAILURE() << "the reference accepted a corrupt code";
    } catch (const mnemo::Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("vq_decode"), std::string::npos) << m;
        EXPECT_NE(m.find("code 7"), std::string::npos) << m;
        EXPECT_NE(m.find("4101"), std::string::npos) << m;
        EXPECT_NE(m.find("0..4095"), std::string::npos) << m;
    }
    for (NodeRunner* dev : {&cpu(), &vulkan()}) {
        if (!dev->available()) continue;
        for (bool with_rotation : {true, false}) {
            const std::string m = dev->run(vq_node(g, bad, with_rotation, out));
            EXPECT_NE(m.find("4101"), std::string::npos) << (dev == &cpu() ? "cpu" : "vulkan") << ": " << m;
            EXPECT_EQ(dev->run(vq_node(g, g.words, with_rotation, out)), "");
        }
    }
}

}  // namespace
