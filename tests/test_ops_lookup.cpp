// Hand-checked values and error paths of the memory-layer lookup ops (grouped / per-core
// EMBEDDING_BAG, MEM_INDEX, PEER_GATE, HIVE, MOE_FFN), on the reference and on the CPU backend.
// Indices are data, so a bad one can only be caught when the node runs: both must refuse it with
// a message naming the op, the entry and the valid range, and never read out of bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/modules/registry.hpp"
#include "fixtures/node_runner.hpp"

namespace {

using mnemo::DType;
using mnemo::test::NodeRunner;

mnemo_tensor host_tensor(void* data, DType dtype, const std::vector<int64_t>& shape) {
    mnemo_tensor t{};
    t.buffer = data;
    t.dtype = static_cast<int32_t>(dtype);
    t.ndim = static_cast<int32_t>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
    return t;
}

std::string reference_error(const mnemo_node& node) {
    try {
        mnemo::reference_compute(node);
    } catch (const mnemo::Error& e) {
        return e.what();
    }
    return "";
}

NodeRunner& cpu() {
    static NodeRunner b("cpu");
    return b;
}

template <typename T>
std::vector<T> as(const std::vector<uint8_t>& bytes) {
    std::vector<T> v(bytes.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
}

// Runs on the reference and on the CPU backend (when built): both must fail with messages that
// contain every listed fragment.
void expect_both_reject(const mnemo_node& node, const std::vector<std::string>& fragments) {
    const std::string ref = reference_error(node);
    for (const std::string& f : fragments) EXPECT_NE(ref.find(f), std::string::npos) << "reference: " << ref;
    if (!cpu().available()) return;
    std::vector<uint8_t> out;
    const std::string got = cpu().run(node, out);
    for (const std::string& f : fragments) EXPECT_NE(got.find(f), std::string::npos) << "cpu: " << got;
}

// The module is a build dependency of the tests: if it cannot be opened, every CPU half below
// would be skipped silently.
TEST(LookupOps, CpuBackendOpens) { EXPECT_TRUE(cpu().available()); }

// ------------------------------------------------------------------ EMBEDDING_BAG: groups, cores

struct GroupedBag {
    // Table rows r0..r3 = [1 2 3 4] * (r + 1): R = 4, C = 4; two cores of 2 columns, two groups.
    std::vector<float> table = {1, 2, 3, 4, 2, 4, 6, 8, 3, 6, 9, 12, 4, 8, 12, 16};
    std::vector<int32_t> idx = {1, 6, 1};  // row 1 in group 0, row 2 in group 1, row 1 in group 0 again
    std::vector<float> w = {1, 10, 2, 20, 3, 30};  // [N=1, m=3, P=2]
    std::vector<float> out = std::vector<float>(8);
    mnemo_node node() {
        mnemo_node n{};
        n.op = MNEMO_OP_EMBEDDING_BAG;
        n.n_inputs = 3;
        n.inputs[0] = host_tensor(table.data(), DType::F32, {4, 4});
        n.inputs[1] = host_tensor(idx.data(), DType::I32, {1, 3});
        n.inputs[2] = host_tensor(w.data(), DType::F32, {1, 3, 2});
        n.output = host_tensor(out.data(), DType::F32, {1, 8});
        n.iparams[0] = 2;
        return n;
    }
};

TEST(LookupOps, GroupedPerCoreBagAddsEachEntryIntoItsGroupWithItsCoreWeights) {
    GroupedBag b;
    // Group 0: row 1 ([2 4 6 8]) with core weights (1, 10) and again with (3, 30): [8 16 240 320].
    // Group 1: row 2 ([3 6 9 12]) with (2, 20): [6 12 180 240].
    const std::vector<float> want = {8, 16, 240, 320, 6, 12, 180, 240};
    mnemo::reference_compute(b.node());
    EXPECT_EQ(b.out, want);
    if (!cpu().available()) return;
    std::vector<uint8_t> out;
    ASSERT_EQ(cpu().run(b.node(), out), "");
    EXPECT_EQ(as<float>(out), want);
}

TEST(LookupOps, BagIndexBeyondGroupsTimesRowsIsRejected) {
    GroupedBag b;
    b.idx[1] = 8;  // G * R = 8
    expect_both_reject(b.node(), {"embedding_bag", "8", "0..7"});
    b.idx[1] = -1;
    expect_both_reject(b.node(), {"embedding_bag", "-1"});
}

// ------------------------------------------------------------------ MEM_INDEX

struct MemIndex {
    std::vector<int32_t> v = {0, 1, 2, 3, 4, 5};
    std::vector<int32_t> shuffle = {5, 4, 3, 2, 1, 0};
    std::vector<int32_t> out = std::vector<int32_t>(6, -7);
    mnemo_node node(bool shuffled, bool with_group) {
        mnemo_node n{};
        n.op = MNEMO_OP_MEM_INDEX;
        n.n_inputs = shuffled ? 2 : 1;
        n.inputs[0] = host_tensor(v.data(), DType::I32, {2, 3});
        if (shuffled) n.inputs[1] = host_tensor(shuffle.data(), DType::I32, {6});
        n.output = host_tensor(out.data(), DType::I32, {2, 3});
        // value_num 3, offset 2, A = 4 rows, G = 2 groups
        n.iparams[0] = 3;
        n.iparams[1] = 2;
        n.iparams[2] = 4;
        n.iparams[3] = 2;
        n.iparams[4] = with_group ? 1 : 0;
        return n;
    }
};

TEST(LookupOps, MemIndexMapsGroupAndWrappedRow) {
    MemIndex m;
    // s = v: g = s / 3, row = (s % 3 + 2) % 4 -> rows 2 3 0 2 3 0; with the group: g * 4 + row.
    const std::vector<int32_t> plain = {2, 3, 0, 2, 3, 0}, grouped = {2, 3, 0, 6, 7, 4};
    const std::vector<int32_t> shuffled = {4, 7, 6, 0, 3, 2};  // s = 5 - v
    struct Run { bool shuffle, group; const std::vector<int32_t>* want; };
    for (const Run& r : {Run{false, false, &plain}, Run{false, true, &grouped}, Run{true, true, &shuffled}}) {
        mnemo::reference_compute(m.node(r.shuffle, r.group));
        EXPECT_EQ(m.out, *r.want);
        if (!cpu().available()) continue;
        std::vector<uint8_t> out;
        ASSERT_EQ(cpu().run(m.node(r.shuffle, r.group), out), "");
        EXPECT_EQ(as<int32_t>(out), *r.want);
    }
}

TEST(LookupOps, MemIndexRejectsGroupBeyondGAndIndexOutsideTheShuffle) {
    MemIndex m;
    m.v[4] = 6;  // without a shuffle s = 6: group 2 of 2
    expect_both_reject(m.node(false, true), {"mem_index", "virtual index 4", "group", "0..1"});
    expect_both_reject(m.node(true, true), {"mem_index", "virtual index 4 is 6", "shuffle"});
    m.v[4] = -1;
    expect_both_reject(m.node(false, false), {"mem_index", "virtual index 4 is -1"});
    m.v[4] = 4;
    m.shuffle[1] = 9;  // v[1] = 1 shuffles to 9: group 3
    expect_both_reject(m.node(true, false), {"mem_index", "shuffles to 9", "group"});
}

// ------------------------------------------------------------------ PEER_GATE

struct PeerGate {
    std::vector<float> table = {1, 0, 0, 1, 0.5f, 0.5f};  // R = 3, P = 2
    std::vector<int32_t> idx = {0, 4};                     // 4 % 3 = row 1 (an index carrying a group)
    std::vector<float> x = {1, -2};
    std::vector<float> s = {2, 3};
    std::vector<float> out = std::vector<float>(2);
    mnemo_node node(int64_t act) {
        mnemo_node n{};
        n.op = MNEMO_OP_PEER_GATE;
        n.n_inputs = 4;
        n.inputs[0] = host_tensor(table.data(), DType::F32, {3, 2});
        n.inputs[1] = host_tensor(idx.data(), DType::I32, {1, 2});
        n.inputs[2] = host_tensor(x.data(), DType::F32, {1, 2});
        n.inputs[3] = host_tensor(s.data(), DType::F32, {1, 2});
        n.output = host_tensor(out.data(), DType::F32, {1, 2});
        n.iparams[0] = act;
        return n;
    }
};

TEST(LookupOps, PeerGateScalesScoresByTheActivatedRowDot) {
    // Dots: row 0 . x = 1, row 1 . x = -2. GELU(1) = 0.841344746 (erf), 0.841191990 (tanh);
    // GELU(-2) = -0.045500264 (erf), -0.045402306 (tanh).
    struct Run { int64_t act; float a, b; };
    for (const Run& r : {Run{0, 1.0f, -2.0f}, Run{1, 0.8413447460685429f, -0.04550026389635842f},
                         Run{2, 0.8411919906082768f, -0.04540230591222885f}}) {
        PeerGate g;
        const std::vector<float> want = {2.0f * r.a, 3.0f * r.b};
        mnemo::reference_compute(g.node(r.act));
        // GELU(-2) is a difference of nearly equal numbers: a few f32 roundings are 1e-5 of it.
        for (int i = 0; i < 2; ++i) EXPECT_NEAR(g.out[i], want[i], 2e-5f * std::fabs(want[i])) << "act " << r.act;
        if (!cpu().available()) continue;
        std::vector<uint8_t> out;
        ASSERT_EQ(cpu().run(g.node(r.act), out), "");
        const std::vector<float> got = as<float>(out);
        for (int i = 0; i < 2; ++i) EXPECT_NEAR(got[i], want[i], 2e-5f * std::fabs(want[i])) << "act " << r.act;
    }
}

TEST(LookupOps, PeerGateRejectsUnknownActivationAndNegativeIndex) {
    PeerGate g;
    expect_both_reject(g.node(3), {"peer_gate", "activation", "0 (none), 1 (GELU erf) or 2 (GELU tanh)"});
    g.idx[1] = -3;
    expect_both_reject(g.node(1), {"peer_gate", "entry 1", "-3"});
}

// ------------------------------------------------------------------ HIVE

TEST(LookupOps, HiveProjectsEachHeadsBagAndRejectsRowsOutsideTheBank) {
    std::vector<float> bank = {1, 2, 3, 4, 5, 6};        // R = 3 rows of r = 2
    std::vector<int32_t> idx = {0, 2, 1, 1};             // [N=1, H=2, m=2]
    std::vector<float> w = {1, 0.5f, 2, -1};
    std::vector<float> proj = {1, 0, 0, 1, 0, 1, 1, 0};  // head 0: identity, head 1: swap
    std::vector<float> out(4);
    mnemo_node n{};
    n.op = MNEMO_OP_HIVE;
    n.n_inputs = 4;
    n.inputs[0] = host_tensor(bank.data(), DType::F32, {3, 2});
    n.inputs[1] = host_tensor(idx.data(), DType::I32, {1, 2, 2});
    n.inputs[2] = host_tensor(w.data(), DType::F32, {1, 2, 2});
    n.inputs[3] = host_tensor(proj.data(), DType::F32, {2, 2, 2});
    n.output = host_tensor(out.data(), DType::F32, {1, 2, 2});
    // Head 0: [1 2] + 0.5 [5 6] = [3.5 5]; head 1: 2 [3 4] - [3 4] = [3 4], swapped: [4 3].
    const std::vector<float> want = {3.5f, 5, 4, 3};
    mnemo::reference_compute(n);
    EXPECT_EQ(out, want);
    if (cpu().available()) {
        std::vector<uint8_t> got;
        ASSERT_EQ(cpu().run(n, got), "");
        EXPECT_EQ(as<float>(got), want);
    }
    idx[3] = 3;
    expect_both_reject(n, {"hive", "head 1 entry 1 is row 3", "3 rows"});
}

// ------------------------------------------------------------------ MOE_FFN

TEST(LookupOps, MoeFfnMatchesHandComputedExpertsAndRejectsUnknownExpert) {
    // D = 2, F = 1, E = 2. Expert 0: gate [1 0], up [0 1], down [1 2]^T; expert 1: gate [0 1],
    // up [1 1], down [-1 0]^T. Token x = [2 3] choosing experts (1, 0) with weights (0.5, 2).
    std::vector<float> x = {2, 3}, w = {0.5f, 2}, gate = {1, 0, 0, 1}, up = {0, 1, 1, 1}, down = {1, 2, -1, 0}, out(2);
    std::vector<int32_t> idx = {1, 0};
    mnemo_node n{};
    n.op = MNEMO_OP_MOE_FFN;
    n.n_inputs = 6;
    n.inputs[0] = host_tensor(x.data(), DType::F32, {1, 2});
    n.inputs[1] = host_tensor(idx.data(), DType::I32, {1, 2});
    n.inputs[2] = host_tensor(w.data(), DType::F32, {1, 2});
    n.inputs[3] = host_tensor(gate.data(), DType::F32, {2, 1, 2});
    n.inputs[4] = host_tensor(up.data(), DType::F32, {2, 1, 2});
    n.inputs[5] = host_tensor(down.data(), DType::F32, {2, 2, 1});
    n.output = host_tensor(out.data(), DType::F32, {1, 2});
    auto silu = [](double v) { return v / (1.0 + std::exp(-v)); };
    const double h0 = silu(2.0) * 3.0, h1 = silu(3.0) * 5.0;  // expert 0: gate.x = 2, up.x = 3; expert 1: 3, 5
    const std::vector<double> want = {2.0 * h0 - 0.5 * h1, 2.0 * 2.0 * h0};
    mnemo::reference_compute(n);
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(out[i], want[static_cast<size_t>(i)], 1e-5);
    if (cpu().available()) {
        std::vector<uint8_t> got;
        ASSERT_EQ(cpu().run(n, got), "");
        const std::vector<float> g = as<float>(got);
        for (int i = 0; i < 2; ++i) EXPECT_NEAR(g[i], want[static_cast<size_t>(i)], 1e-5);
    }
    idx[1] = 2;
    expect_both_reject(n, {"moe_ffn", "token 0 choice 1 is expert 2", "0..1"});
}

// ------------------------------------------------------------------ thread count

// The kernels split bags by column blocks and MoE work into a queue of dependent items, both sized
// from the thread count; the sums inside never change order, so every thread count must give the
// same bits (and the reference's values).
TEST(LookupOps, ResultsDoNotDependOnTheThreadCount) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto fill = [&](size_t n, float sd) {
        std::vector<float> v(n);
        for (float& x : v) x = sd * normal(rng);
        return v;
    };
    // A decode bag in UltraMem's form: 2 groups, 2 cores of 100 columns (blocks straddle the boundary).
    std::vector<float> table = fill(300 * 200, 1.0f), bag_w = fill(40 * 2, 0.5f), bag_out(400);
    std::vector<int32_t> bag_idx(40);
    for (int32_t& v : bag_idx) v = static_cast<int32_t>(rng() % 600);
    mnemo_node bag{};
    bag.op = MNEMO_OP_EMBEDDING_BAG;
    bag.n_inputs = 3;
    bag.inputs[0] = host_tensor(table.data(), DType::F32, {300, 200});
    bag.inputs[1] = host_tensor(bag_idx.data(), DType::I32, {1, 40});
    bag.inputs[2] = host_tensor(bag_w.data(), DType::F32, {1, 40, 2});
    bag.output = host_tensor(bag_out.data(), DType::F32, {1, 400});
    bag.iparams[0] = 2;
    // A batch of 9 tokens over 4 experts with odd sizes.
    const int64_t n = 9, e = 4, d = 40, f = 52;
    std::vector<float> x = fill(n * d, 1.0f), moe_w = fill(n * 2, 0.5f), gate = fill(e * f * d, 0.15f),
                       up = fill(e * f * d, 0.15f), down = fill(e * d * f, 0.15f), moe_out(n * d);
    std::vector<int32_t> experts(n * 2);
    for (int64_t t = 0; t < n; ++t) {
        experts[t * 2] = static_cast<int32_t>(t % e);
        experts[t * 2 + 1] = static_cast<int32_t>((t * 3 + 1) % e);
    }
    mnemo_node moe{};
    moe.op = MNEMO_OP_MOE_FFN;
    moe.n_inputs = 6;
    moe.inputs[0] = host_tensor(x.data(), DType::F32, {n, d});
    moe.inputs[1] = host_tensor(experts.data(), DType::I32, {n, 2});
    moe.inputs[2] = host_tensor(moe_w.data(), DType::F32, {n, 2});
    moe.inputs[3] = host_tensor(gate.data(), DType::F32, {e, f, d});
    moe.inputs[4] = host_tensor(up.data(), DType::F32, {e, f, d});
    moe.inputs[5] = host_tensor(down.data(), DType::F32, {e, d, f});
    moe.output = host_tensor(moe_out.data(), DType::F32, {n, d});

    for (mnemo_node* node : {&bag, &moe}) {
        mnemo::reference_compute(*node);
        const std::vector<float> want(static_cast<float*>(node->output.buffer),
                                      static_cast<float*>(node->output.buffer) + mnemo::shape_of(node->output).numel());
        double norm = 0.0;
        for (float v : want) norm += static_cast<double>(v) * v;
        std::vector<uint8_t> first;
        for (int threads : {1, 3, 8}) {
            NodeRunner b("cpu", threads);
            ASSERT_TRUE(b.available());
            std::vector<uint8_t> out;
            ASSERT_EQ(b.run(*node, out), "") << threads << " threads";
            if (first.empty()) first = out;
            EXPECT_TRUE(out == first) << mnemo::op_info(node->op).name << ": " << threads << " threads differ from 1 thread";
            const std::vector<float> got = as<float>(out);
            double err = 0.0;
            for (size_t i = 0; i < want.size(); ++i) err += (static_cast<double>(got[i]) - want[i]) * (got[i] - want[i]);
            EXPECT_LT(err, 1e-10 * norm) << mnemo::op_info(node->op).name << " with " << threads << " threads";
        }
    }
}

}  // namespace
