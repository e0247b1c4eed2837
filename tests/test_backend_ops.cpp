// Cross-backend conformance: every case of tests/conformance/op_cases.hpp on every device of every
// backend module found in the build folder (and $MNEMO_BACKEND_PATH), compared with the naive
// reference (engine/src/ops_reference.cpp).
//
// Each tensor lives in its own backend buffer between two guard regions filled with a sentinel;
// after the run every guard byte and every input byte must be unchanged (an out-of-bounds write
// or a kernel scribbling on its inputs fails the case), and the output region starts as NaN so an
// element the kernel forgot to write fails too. Test names read
//   Conformance/BackendOps.Run/cpu0_matmul_N1_K4096_M256_f16
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "conformance/op_cases.hpp"
#include "mnemo/error.hpp"
#include "mnemo/ops.hpp"
#include "mnemo/registry.hpp"

namespace {

using mnemo::DType;
using mnemo::TensorShape;
using mnemo::conformance::OpCase;
using mnemo::conformance::all_op_cases;

constexpr uint64_t kGuardBytes = 4096;  // also keeps every tensor offset 4096-aligned
constexpr size_t kNoCase = std::numeric_limits<size_t>::max();

// ------------------------------------------------------------------ modules and contexts

std::vector<std::string> search_paths() {
    std::vector<std::string> paths;
    if (const char* env = std::getenv("MNEMO_BACKEND_PATH")) {
        std::stringstream s(env);
        for (std::string item; std::getline(s, item, ':');)
            if (!item.empty()) paths.push_back(item);
    }
    paths.push_back(MNEMO_BUILD_BIN);
    return paths;
}

mnemo::BackendRegistry& registry() {
    static mnemo::BackendRegistry r(search_paths());
    return r;
}

// Contexts are opened once per device and shared by all cases (opening may start thread pools or
// a driver). Constructed after the registry, so destroyed before the modules are unloaded.
class Contexts {
public:
    static Contexts& get() {
        registry();
        static Contexts c;
        return c;
    }
    ~Contexts() {
        for (auto& [key, entry] : open_) entry.api->close(entry.ctx);
    }
    // Throws mnemo::Error with the backend's message when the device cannot be opened.
    void* open(const mnemo_backend_api* api, int32_t device) {
        const auto key = std::make_pair(std::string(api->name), device);
        auto it = open_.find(key);
        if (it != open_.end()) return it->second.ctx;
        mnemo_error err{};
        void* ctx = nullptr;
        mnemo_backend_config cfg{};
        cfg.n_threads = 0;
        if (api->open(device, &cfg, &ctx, &err) != MNEMO_OK || !ctx)
            throw mnemo::Error(std::string(api->name) + std::to_string(device) + ": open failed: " + err.message);
        open_[key] = {api, ctx};
        return ctx;
    }

private:
    struct Entry {
        const mnemo_backend_api* api;
        void* ctx;
    };
    std::map<std::pair<std::string, int32_t>, Entry> open_;
};

// ------------------------------------------------------------------ parameters

struct Param {
    std::string backend;
    int32_t device = -1;        // -1: the backend reports no device
    size_t case_index = kNoCase;
    std::string label;          // test name suffix
};

// Readable parameter text for test listings (gtest would dump the struct's bytes otherwise).
void PrintTo(const Param& p, std::ostream* os) { *os << p.label; }

std::vector<Param> all_params() {
    std::vector<Param> out;
    const auto& cases = all_op_cases();
    for (const mnemo::BackendModule& m : registry().modules()) {
        const int32_t n = m.api->device_count();
        if (n <= 0) {
            out.push_back({m.name, -1, kNoCase, m.name + "_no_devices"});
            continue;
        }
        for (int32_t d = 0; d < n; ++d)
            for (size_t i = 0; i < cases.size(); ++i)
                out.push_back({m.name, d, i, m.name + std::to_string(d) + "_" + cases[i].name});
    }
    return out;
}

// ------------------------------------------------------------------ backend buffers

uint8_t sentinel(uint64_t i) { return static_cast<uint8_t>(0xA5u ^ (i * 37u)); }

// One tensor in its own backend buffer: [guard | data | guard].
class GuardedBuffer {
public:
    GuardedBuffer(const mnemo_backend_api* api, void* ctx, uint64_t data_bytes) : api_(api), ctx_(ctx), bytes_(data_bytes) {
        mnemo_error err{};
        if (api->buffer_alloc(ctx, total(), &buffer_, &err) != MNEMO_OK || !buffer_)
            throw mnemo::Error("buffer_alloc(" + std::to_string(total()) + " bytes) failed: " + err.message);
    }
    ~GuardedBuffer() {
        if (buffer_) api_->buffer_free(ctx_, buffer_);
    }
    GuardedBuffer(const GuardedBuffer&) = delete;
    GuardedBuffer& operator=(const GuardedBuffer&) = delete;

    uint64_t total() const { return kGuardBytes + bytes_ + kGuardBytes; }
    void* handle() const { return buffer_; }

    // Guards get the sentinel, the data region `data` (or NaN bytes when empty).
    void upload(const std::vector<uint8_t>& data) {
        image_.resize(total());
        for (uint64_t i = 0; i < total(); ++i) image_[i] = sentinel(i);
        if (data.empty()) std::memset(image_.data() + kGuardBytes, 0xFF, bytes_);  // 0xFFFFFFFF is a NaN
        else std::memcpy(image_.data() + kGuardBytes, data.data(), bytes_);
        mnemo_error err{};
        if (api_->buffer_write(ctx_, buffer_, 0, image_.data(), total(), &err) != MNEMO_OK)
            throw mnemo::Error(std::string("buffer_write failed: ") + err.message);
    }
    std::vector<uint8_t> read_all() const {
        std::vector<uint8_t> out(total());
        mnemo_error err{};
        if (api_->buffer_read(ctx_, buffer_, 0, out.data(), total(), &err) != MNEMO_OK)
            throw mnemo::Error(std::string("buffer_read failed: ") + err.message);
        return out;
    }
    // "" when both guards are intact, else where the first changed byte is.
    std::string guard_damage(const std::vector<uint8_t>& all) const {
        for (uint64_t i = 0; i < total(); ++i) {
            if (i >= kGuardBytes && i < kGuardBytes + bytes_) continue;
            if (all[i] != sentinel(i)) {
                std::ostringstream s;
                if (i < kGuardBytes) s << "byte " << (kGuardBytes - i) << " before the tensor";
                else s << "byte " << (i - kGuardBytes - bytes_) << " after the end of the tensor (" << bytes_ << " bytes)";
                s << " was overwritten";
                return s.str();
            }
        }
        return "";
    }
    std::vector<uint8_t> data_of(const std::vector<uint8_t>& all) const {
        return std::vector<uint8_t>(all.begin() + kGuardBytes, all.begin() + static_cast<std::ptrdiff_t>(kGuardBytes + bytes_));
    }

private:
    const mnemo_backend_api* api_;
    void* ctx_;
    uint64_t bytes_;
    void* buffer_ = nullptr;
    std::vector<uint8_t> image_;
};

mnemo_tensor tensor_of(void* buffer, uint64_t offset, const TensorShape& s) {
    mnemo_tensor t{};
    t.buffer = buffer;
    t.offset = offset;
    t.dtype = static_cast<int32_t>(s.dtype);
    t.ndim = s.ndim;
    for (int32_t i = 0; i < s.ndim; ++i) t.shape[i] = s.shape[i];
    return t;
}

// ------------------------------------------------------------------ comparison

struct Comparison {
    std::string failure;  // "" when the output passes
    double nmse = 0.0;
};

Comparison compare(const std::vector<float>& got, const std::vector<float>& want, double max_nmse) {
    Comparison r;
    double err = 0.0, norm = 0.0, worst = -1.0;
    size_t worst_i = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const double a = got[i], b = want[i];
        std::ostringstream s;
        if (std::isnan(b)) {
            s << "the reference produced NaN at element " << i << " (a broken case, not a backend bug)";
        } else if (std::isnan(a)) {
            s << "NaN at element " << i << " (reference " << b << "); an unwritten output element also reads as NaN";
        } else if (std::isinf(a) || std::isinf(b)) {
            if (a != b) s << "infinity mismatch at element " << i << ": got " << a << ", reference " << b;
        }
        if (!s.str().empty()) {
            r.failure = s.str();
            return r;
        }
        if (std::isinf(b)) continue;
        const double d = (a - b) * (a - b);
        if (d > worst) {
            worst = d;
            worst_i = i;
        }
        err += d;
        norm += b * b;
    }
    r.nmse = norm > 0.0 ? err / norm : (err > 0.0 ? std::numeric_limits<double>::infinity() : 0.0);
    // NMSE averages over the whole tensor, so one wrong element among millions (a mis-addressed
    // tail) could hide in it; any single element may also be off by at most 30 times the RMS
    // error the NMSE bound allows (about 1% of the output's RMS at 1e-7).
    const double rms = want.empty() ? 0.0 : std::sqrt(norm / static_cast<double>(want.size()));
    const double max_elem = 30.0 * std::sqrt(max_nmse) * rms;
    std::ostringstream s;
    if (r.nmse > max_nmse)
        s << "NMSE " << r.nmse << " exceeds " << max_nmse;
    else if (worst >= 0.0 && std::sqrt(worst) > max_elem)
        s << "element error " << std::sqrt(worst) << " exceeds " << max_elem << " (30 * sqrt(max NMSE) * output RMS)";
    if (!s.str().empty()) {
        s << "; largest difference at element " << worst_i << " of " << want.size() << ": got " << got[worst_i]
          << ", reference " << want[worst_i];
        r.failure = s.str();
    }
    return r;
}

// Integer outputs (ARGTOPK's indices) are exact by contract: every element must match bit for
// bit. NMSE would call index 5 instead of 4 "close".
std::string compare_exact_i32(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
    if (got.size() != want.size()) return "output holds " + std::to_string(got.size()) + " bytes, reference " + std::to_string(want.size());
    for (size_t i = 0; i + 4 <= want.size(); i += 4) {
        int32_t a, b;
        std::memcpy(&a, got.data() + i, 4);
        std::memcpy(&b, want.data() + i, 4);
        if (a != b) {
            std::ostringstream s;
            s << "i32 element " << i / 4 << " of " << want.size() / 4 << " is " << a << ", reference " << b
              << " (integer outputs must match exactly)";
            return s.str();
        }
    }
    return "";
}

std::vector<float> as_floats(const std::vector<uint8_t>& bytes) {
    std::vector<float> v(bytes.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * 4);
    return v;
}

// ------------------------------------------------------------------ the test

class BackendOps : public testing::TestWithParam<Param> {};

TEST_P(BackendOps, Run) {
    const Param& p = GetParam();
    const mnemo::BackendModule* module = registry().find(p.backend);
    ASSERT_NE(module, nullptr);
    const mnemo_backend_api* api = module->api;
    if (p.device < 0) GTEST_SKIP() << p.backend << ": the backend reports no devices (driver or hardware missing)";
    const OpCase& c = all_op_cases()[p.case_index];
    void* ctx = Contexts::get().open(api, p.device);

    // Host side: inputs, and the reference output computed on host copies.
    const std::vector<std::vector<uint8_t>> inputs = mnemo::conformance::make_inputs(c);
    const TensorShape out_shape = mnemo::conformance::case_output_shape(c);
    const bool in_place = mnemo::op_info(c.op).output_aliases_input0;
    std::vector<std::vector<uint8_t>> host = inputs;
    std::vector<uint8_t> host_out(out_shape.nbytes());
    mnemo_node ref{};
    ref.op = c.op;
    ref.n_inputs = static_cast<int32_t>(c.inputs.size());
    for (size_t i = 0; i < c.inputs.size(); ++i)
        ref.inputs[i] = tensor_of(host[i].data(), 0, mnemo::conformance::spec_shape(c.inputs[i]));
    ref.output = in_place ? ref.inputs[0] : tensor_of(host_out.data(), 0, out_shape);
    for (size_t i = 0; i < MNEMO_MAX_PARAMS; ++i) {
        ref.iparams[i] = c.iparams[i];
        ref.fparams[i] = c.fparams[i];
    }
    mnemo::reference_compute(ref);
    const std::vector<uint8_t>& want_bytes = in_place ? host[0] : host_out;

    // Backend side: every tensor in its own guarded buffer.
    std::vector<std::unique_ptr<GuardedBuffer>> bufs;
    mnemo_node node = ref;
    for (size_t i = 0; i < inputs.size(); ++i) {
        bufs.push_back(std::make_unique<GuardedBuffer>(api, ctx, inputs[i].size()));
        node.inputs[i] = tensor_of(bufs.back()->handle(), kGuardBytes, mnemo::conformance::spec_shape(c.inputs[i]));
    }
    GuardedBuffer* out_buf = in_place ? bufs[0].get() : nullptr;
    if (!in_place) {
        bufs.push_back(std::make_unique<GuardedBuffer>(api, ctx, out_shape.nbytes()));
        out_buf = bufs.back().get();
    }
    node.output = tensor_of(out_buf->handle(), kGuardBytes, out_shape);

    if (!api->supports_node(ctx, &node)) GTEST_SKIP() << p.backend << ": not supported";

    for (size_t i = 0; i < inputs.size(); ++i) bufs[i]->upload(inputs[i]);
    if (!in_place) out_buf->upload({});

    mnemo_error err{};
    void* graph = nullptr;
    ASSERT_EQ(api->graph_prepare(ctx, &node, 1, &graph, &err), MNEMO_OK) << "graph_prepare: " << err.message;
    const mnemo_status run = api->graph_run(ctx, graph, nullptr, &err);
    api->graph_release(ctx, graph);
    ASSERT_EQ(run, MNEMO_OK) << "graph_run: " << err.message;

    // Inputs (other than an in-place output) must come back byte for byte, guards included.
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (in_place && i == 0) continue;
        const std::vector<uint8_t> all = bufs[i]->read_all();
        const std::string damage = bufs[i]->guard_damage(all);
        EXPECT_TRUE(damage.empty()) << "input " << i << ": " << damage;
        EXPECT_TRUE(bufs[i]->data_of(all) == inputs[i]) << "input " << i << " was modified by the op";
    }
    const std::vector<uint8_t> all = out_buf->read_all();
    const std::string damage = out_buf->guard_damage(all);
    EXPECT_TRUE(damage.empty()) << "output: " << damage << " (out-of-bounds write)";

    if (out_shape.dtype == DType::I32) {
        const std::string failure = compare_exact_i32(out_buf->data_of(all), want_bytes);
        EXPECT_TRUE(failure.empty()) << c.name << " on " << p.backend << p.device << ": " << failure;
        return;
    }
    const Comparison cmp = compare(as_floats(out_buf->data_of(all)), as_floats(want_bytes), c.max_nmse);
    EXPECT_TRUE(cmp.failure.empty()) << c.name << " on " << p.backend << p.device << ": " << cmp.failure;
    std::ostringstream nmse_text;
    nmse_text << std::scientific << cmp.nmse;
    RecordProperty("nmse", nmse_text.str());  // in --gtest_output=xml, to see each case's margin
}

INSTANTIATE_TEST_SUITE_P(Conformance, BackendOps, testing::ValuesIn(all_params()),
                         [](const testing::TestParamInfo<Param>& info) { return info.param.label; });
// With no module at all the list is empty; BackendModules.AtLeastOneLoads reports that instead.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BackendOps);

// ------------------------------------------------------------------ the harness itself

TEST(BackendModules, AtLeastOneLoadsAndNoneFails) {
    std::ostringstream errors;
    for (const mnemo::LoadError& e : registry().load_errors()) errors << "\n  " << e.path << ": " << e.reason;
    EXPECT_TRUE(registry().load_errors().empty()) << "backend modules failed to load:" << errors.str();
    EXPECT_FALSE(registry().modules().empty()) << "no backend module found in " << MNEMO_BUILD_BIN
                                               << " or $MNEMO_BACKEND_PATH (is mnemo_backend_cpu built?)";
}

TEST(ConformanceCases, EveryOpHasAtLeastOneCase) {
    std::map<int32_t, int> count;
    for (const OpCase& c : all_op_cases()) ++count[c.op];
    for (int32_t op = 1; op < MNEMO_OP_COUNT_; ++op)
        EXPECT_GT(count[op], 0) << "op " << mnemo::op_info(op).name << " has no conformance case in tests/conformance/op_cases.hpp";
}

TEST(ConformanceCases, NamesAreUniqueAndUsableAsTestNames) {
    std::set<std::string> seen;
    for (const OpCase& c : all_op_cases()) {
        EXPECT_TRUE(seen.insert(c.name).second) << "duplicate case name " << c.name;
        for (char ch : c.name)
            EXPECT_TRUE((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_') << "case name " << c.name;
    }
}

TEST(ConformanceCases, EveryCasePassesTheShapeRules) {
    for (const OpCase& c : all_op_cases()) {
        EXPECT_NO_THROW(mnemo::conformance::case_output_shape(c)) << c.name;
        EXPECT_GT(c.max_nmse, 0.0) << c.name;
    }
}

TEST(ConformanceCases, IntegerOutputsMustMatchExactly) {
    auto bytes = [](std::vector<int32_t> v) {
        std::vector<uint8_t> b(v.size() * 4);
        std::memcpy(b.data(), v.data(), b.size());
        return b;
    };
    EXPECT_TRUE(compare_exact_i32(bytes({3, 1, 2}), bytes({3, 1, 2})).empty());
    EXPECT_NE(compare_exact_i32(bytes({3, 2, 1}), bytes({3, 1, 2})).find("i32 element 1 of 3 is 2, reference 1"),
              std::string::npos);
    // An unwritten output (the harness fills it with 0xFF bytes) reads as -1, never a valid index.
    EXPECT_FALSE(compare_exact_i32(bytes({-1}), bytes({0})).empty());
    EXPECT_FALSE(compare_exact_i32(bytes({1, 2}), bytes({1})).empty());
}

TEST(ConformanceCases, ComparisonCatchesNanInfAndError) {
    const std::vector<float> ref = {1.0f, -2.0f, 3.0f};
    EXPECT_TRUE(compare(ref, ref, 1e-7).failure.empty());
    EXPECT_NE(compare({1.0f, NAN, 3.0f}, ref, 1e-7).failure.find("NaN at element 1"), std::string::npos);
    EXPECT_NE(compare({1.0f, INFINITY, 3.0f}, ref, 1e-7).failure.find("infinity mismatch"), std::string::npos);
    EXPECT_NE(compare({1.0f, -2.0f, 3.01f}, ref, 1e-7).failure.find("NMSE"), std::string::npos);
    EXPECT_TRUE(compare({INFINITY}, {INFINITY}, 1e-7).failure.empty());
    EXPECT_FALSE(compare({-INFINITY}, {INFINITY}, 1e-7).failure.empty());
    EXPECT_FALSE(compare({1e-30f}, {0.0f}, 1e-7).failure.empty());
    // One wrong element in a large tensor: small NMSE, but caught by the per-element bound.
    std::vector<float> big(1000000, 1.0f), off = big;
    off[123456] = 1.05f;
    const Comparison c = compare(off, big, 1e-7);
    EXPECT_LT(c.nmse, 1e-7);
    EXPECT_NE(c.failure.find("element error"), std::string::npos) << c.failure;
    EXPECT_NE(c.failure.find("element 123456"), std::string::npos) << c.failure;
}

}  // namespace
