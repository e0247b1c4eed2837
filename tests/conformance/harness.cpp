#include "conformance/harness.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>

#include "mnemo/error.hpp"
#include "mnemo/io/ggml_type.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/quant/ggml_quants.hpp"

namespace mnemo::conformance {

namespace {

uint8_t sentinel(uint64_t i) { return static_cast<uint8_t>(0xA5u ^ (i * 37u)); }

// One tensor in its own backend buffer: [guard | data | guard]. The front guard is kGuardBytes
// plus `lead` bytes, so the data starts `lead` bytes past a 4096-aligned offset (InputSpec::misalign).
class GuardedBuffer {
public:
    GuardedBuffer(const mnemo_backend_api* api, void* ctx, uint64_t data_bytes, uint64_t lead = 0)
        : api_(api), ctx_(ctx), bytes_(data_bytes), front_(kGuardBytes + lead) {
        mnemo_error err{};
        if (api->buffer_alloc(ctx, total(), &buffer_, &err) != MNEMO_OK || !buffer_)
            throw mnemo::Error("buffer_alloc(" + std::to_string(total()) + " bytes) failed: " + err.message);
    }
    ~GuardedBuffer() {
        if (buffer_) api_->buffer_free(ctx_, buffer_);
    }
    GuardedBuffer(const GuardedBuffer&) = delete;
    GuardedBuffer& operator=(const GuardedBuffer&) = delete;

    uint64_t total() const { return front_ + bytes_ + kGuardBytes; }
    uint64_t data_offset() const { return front_; }
    void* handle() const { return buffer_; }

    // Guards get the sentinel, the data region `data` (or NaN bytes when empty).
    void upload(const std::vector<uint8_t>& data) {
        image_.resize(total());
        for (uint64_t i = 0; i < total(); ++i) image_[i] = sentinel(i);
        if (data.empty()) std::memset(image_.data() + front_, 0xFF, bytes_);  // 0xFFFFFFFF is a NaN
        else std::memcpy(image_.data() + front_, data.data(), bytes_);
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
            if (i >= front_ && i < front_ + bytes_) continue;
            if (all[i] != sentinel(i)) {
                std::ostringstream s;
                if (i < front_) s << "byte " << (front_ - i) << " before the tensor";
                else s << "byte " << (i - front_ - bytes_) << " after the end of the tensor (" << bytes_ << " bytes)";
                s << " was overwritten";
                return s.str();
            }
        }
        return "";
    }
    std::vector<uint8_t> data_of(const std::vector<uint8_t>& all) const {
        return std::vector<uint8_t>(all.begin() + static_cast<std::ptrdiff_t>(front_), all.begin() + static_cast<std::ptrdiff_t>(front_ + bytes_));
    }

private:
    const mnemo_backend_api* api_;
    void* ctx_;
    uint64_t bytes_;
    uint64_t front_;
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

std::vector<float> as_floats(const std::vector<uint8_t>& bytes) {
    std::vector<float> v(bytes.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * 4);
    return v;
}

// An output of `s`'s dtype as floats: f32 as is; f16 / q8_0 (KV_STORE into such a cache) as the
// values it holds, through the reference dequantizer, so both sides are compared as numbers.
std::vector<float> output_floats(const std::vector<uint8_t>& bytes, const TensorShape& s) {
    if (s.dtype == DType::F32 || s.ndim < 1) return as_floats(bytes);
    const int64_t last = s.shape[s.ndim - 1];
    const int64_t rows = last > 0 ? s.numel() / last : 0;
    const uint64_t row_bytes = dtype_bytes(s.dtype, last);
    std::vector<float> v(static_cast<size_t>(s.numel()));
    for (int64_t r = 0; r < rows && static_cast<uint64_t>(r + 1) * row_bytes <= bytes.size(); ++r)
        dequantize_row(ggml_type_of_dtype(s.dtype), bytes.data() + static_cast<uint64_t>(r) * row_bytes, v.data() + r * last, last);
    return v;
}

std::vector<std::string> split_paths(const char* env, char sep = ':') {
    std::vector<std::string> paths;
    if (!env) return paths;
    std::stringstream s(env);
    for (std::string item; std::getline(s, item, sep);)
        if (!item.empty()) paths.push_back(item);
    return paths;
}

class Contexts {
public:
    ~Contexts() {
        for (auto& [key, entry] : open_) entry.api->close(entry.ctx);
    }
    void* open(const mnemo_backend_api* api, int32_t device) {
        const auto key = std::make_pair(std::string(api->name), device);
        auto it = open_.find(key);
        if (it != open_.end()) return it->second.ctx;
        mnemo_error err{};
        void* ctx = nullptr;
        mnemo_backend_config cfg{};
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

}  // namespace

mnemo::BackendRegistry& harness_registry(const std::string& build_bin) {
    static mnemo::BackendRegistry r = [&] {
        std::vector<std::string> paths = split_paths(std::getenv("MNEMO_BACKEND_PATH"));
        paths.push_back(build_bin);
        return mnemo::BackendRegistry(paths);
    }();
    return r;
}

void* open_context(const mnemo_backend_api* api, int32_t device) {
    // Constructed after the registry (callers got `api` from it), so destroyed before the
    // modules are unloaded.
    static Contexts contexts;
    return contexts.open(api, device);
}

Comparison compare_floats(const std::vector<float>& got, const std::vector<float>& want, double max_nmse, bool nan_expected) {
    Comparison r;
    double err = 0.0, norm = 0.0, worst = -1.0;
    size_t worst_i = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const double a = got[i], b = want[i];
        std::ostringstream s;
        if (std::isnan(b) && nan_expected) {
            if (std::isnan(a)) continue;
            s << "element " << i << " is " << a << ", the reference gives NaN";
        } else if (std::isnan(b)) {
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

std::vector<int32_t> conformance_thread_counts(const mnemo_backend_api* api) {
    std::vector<int32_t> counts;
    if (!api || std::strcmp(api->name, "cpu") != 0 || !api->set_threads) return counts;
    for (const std::string& item : split_paths(std::getenv("MNEMO_CONFORMANCE_CPU_THREADS"), ',')) {
        char* end = nullptr;
        const long n = std::strtol(item.c_str(), &end, 10);
        if (end == item.c_str() || *end != '\0' || n < 0 || n > 1024)
            throw mnemo::Error("MNEMO_CONFORMANCE_CPU_THREADS: '" + item + "' is not a thread count (0..1024)");
        counts.push_back(static_cast<int32_t>(n));
    }
    return counts;
}

namespace {

// The backend half of a case: every tensor in its own guarded buffer, one run, the checks.
// Appends to result.failures (prefixed with `label`); false when the case is unsupported.
bool run_on_backend(const mnemo_backend_api* api, void* ctx, const OpCase& c, const std::vector<std::vector<uint8_t>>& inputs,
                    const mnemo_node& ref, const std::vector<uint8_t>& want_bytes, int repeats, const std::string& label,
                    CaseResult& result) {
    const TensorShape out_shape = case_output_shape(c);
    const bool in_place = mnemo::op_info(c.op).output_aliases_input0;
    auto fail = [&](const std::string& what) { result.failures.push_back(label + what); };
    std::vector<std::unique_ptr<GuardedBuffer>> bufs;
    mnemo_node node = ref;
    for (size_t i = 0; i < inputs.size(); ++i) {
        bufs.push_back(std::make_unique<GuardedBuffer>(api, ctx, inputs[i].size(), c.inputs[i].misalign));
        node.inputs[i] = tensor_of(bufs.back()->handle(), bufs.back()->data_offset(), spec_shape(c.inputs[i]));
    }
    GuardedBuffer* out_buf = in_place ? bufs[0].get() : nullptr;
    if (!in_place) {
        bufs.push_back(std::make_unique<GuardedBuffer>(api, ctx, out_shape.nbytes()));
        out_buf = bufs.back().get();
    }
    node.output = tensor_of(out_buf->handle(), kGuardBytes, out_shape);

    if (!api->supports_node(ctx, &node)) {
        // supports_node answers yes or no; preparing the node says why not.
        mnemo_error err{};
        void* graph = nullptr;
        if (api->graph_prepare(ctx, &node, 1, &graph, &err) == MNEMO_OK) api->graph_release(ctx, graph);
        else result.unsupported = err.message;
        return false;
    }
    for (size_t i = 0; i < inputs.size(); ++i) bufs[i]->upload(inputs[i]);
    if (!in_place) out_buf->upload({});

    mnemo_error err{};
    void* graph = nullptr;
    if (api->graph_prepare(ctx, &node, 1, &graph, &err) != MNEMO_OK) {
        fail(std::string("graph_prepare: ") + err.message);
        return true;
    }
    const mnemo_status run = api->graph_run(ctx, graph, nullptr, &err);
    if (run == MNEMO_OK && repeats > 1 && !in_place) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int r = 1; r < repeats; ++r) api->graph_run(ctx, graph, nullptr, &err);
        result.run_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / (repeats - 1);
    }
    api->graph_release(ctx, graph);
    if (run != MNEMO_OK) {
        fail(std::string("graph_run: ") + err.message);
        return true;
    }

    // Inputs (other than an in-place output) must come back byte for byte, guards included.
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (in_place && i == 0) continue;
        const std::vector<uint8_t> all = bufs[i]->read_all();
        const std::string damage = bufs[i]->guard_damage(all);
        if (!damage.empty()) fail("input " + std::to_string(i) + ": " + damage);
        if (bufs[i]->data_of(all) != inputs[i]) fail("input " + std::to_string(i) + " was modified by the op");
    }
    const std::vector<uint8_t> all = out_buf->read_all();
    const std::string damage = out_buf->guard_damage(all);
    if (!damage.empty()) fail("output: " + damage + " (out-of-bounds write)");

    if (out_shape.dtype == DType::I32) {
        const std::string failure = compare_exact_i32(out_buf->data_of(all), want_bytes);
        if (!failure.empty()) fail(failure);
    } else {
        const Comparison cmp = compare_floats(output_floats(out_buf->data_of(all), out_shape), output_floats(want_bytes, out_shape),
                                                c.max_nmse, c.nan_expected);
        result.nmse = std::max(result.nmse, cmp.nmse);
        if (!cmp.failure.empty()) fail(cmp.failure);
    }
    return true;
}

}  // namespace

CaseResult run_case(const mnemo_backend_api* api, void* ctx, const OpCase& c, int repeats) {
    CaseResult result;
    try {
        // Host side: inputs, and the reference output computed on host copies, once.
        const std::vector<std::vector<uint8_t>> inputs = make_inputs(c);
        const TensorShape out_shape = case_output_shape(c);
        const bool in_place = mnemo::op_info(c.op).output_aliases_input0;
        std::vector<std::vector<uint8_t>> host = inputs;
        std::vector<uint8_t> host_out(out_shape.nbytes());
        mnemo_node ref{};
        ref.op = c.op;
        ref.n_inputs = static_cast<int32_t>(c.inputs.size());
        for (size_t i = 0; i < c.inputs.size(); ++i) ref.inputs[i] = tensor_of(host[i].data(), 0, spec_shape(c.inputs[i]));
        ref.output = in_place ? ref.inputs[0] : tensor_of(host_out.data(), 0, out_shape);
        for (size_t i = 0; i < MNEMO_MAX_PARAMS; ++i) {
            ref.iparams[i] = c.iparams[i];
            ref.fparams[i] = c.fparams[i];
        }
        mnemo::reference_compute(ref);
        const std::vector<uint8_t>& want_bytes = in_place ? host[0] : host_out;

        // Backend side: once, or once per CPU thread count (perf mode times the default only).
        const std::vector<int32_t> threads = repeats > 1 ? std::vector<int32_t>{} : conformance_thread_counts(api);
        if (threads.empty()) {
            if (!run_on_backend(api, ctx, c, inputs, ref, want_bytes, repeats, "", result)) {
                result.outcome = Outcome::Unsupported;
                return result;
            }
        } else {
            // Restores the context's default even when a run throws.
            struct Restore {
                const mnemo_backend_api* api;
                void* ctx;
                ~Restore() { api->set_threads(ctx, 0); }
            } restore{api, ctx};
            for (int32_t n : threads) {
                if (api->set_threads(ctx, n) != MNEMO_OK) {
                    result.failures.push_back("set_threads(" + std::to_string(n) + ") failed");
                    continue;
                }
                const std::string label = n == 1 ? std::string("with 1 thread: ")
                                          : "with " + (n > 0 ? std::to_string(n) : std::string("the default number of")) + " threads: ";
                if (!run_on_backend(api, ctx, c, inputs, ref, want_bytes, 1, label, result)) {
                    result.outcome = Outcome::Unsupported;
                    return result;
                }
            }
        }
    } catch (const std::exception& e) {
        result.failures.push_back(e.what());
    }
    result.outcome = result.failures.empty() ? Outcome::Pass : Outcome::Fail;
    return result;
}

}  // namespace mnemo::conformance
