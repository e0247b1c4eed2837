// mnemo-bench-kernels: times MATMUL on the CPU backend module and compares decode (matvec) speed
// with the machine's measured read bandwidth, since streaming the weights is all a decode step
// can do at best. Usage: mnemo-bench-kernels [--threads N] [--json] [--quick]
// Weights in every dtype W takes: f32, f16, bf16 and the block-quantized q8_0, q4_0, q4_k, q5_k,
// q6_k (GB/s counts the packed bytes: a q4_0 matvec at the same GB/s is 3.6x faster than f16).
//
// Each case runs a graph of several matmul nodes, each with its own copy of the weights, so that
// together they exceed the last-level cache: every matvec reads its weights from memory, as in
// real decoding where a whole model never fits in cache.
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "mnemo/abi/backend_abi.h"
#include "mnemo/ops/dtype.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/ggml_type.hpp"
#include "mnemo/quant/ggml_quants.hpp"
#include "mnemo/session/bandwidth.hpp"

namespace {

struct Options {
    int threads = 0;
    bool json = false;
    bool quick = false;
    std::vector<std::string> cases;  // --case N,K,M,dtype (repeatable); empty: the default set
};

struct Case {
    int64_t n, k, m;
    int32_t dtype;
};

struct Result {
    Case c;
    double seconds;  // per matmul
    double gbps;     // weight bytes / s
    double gflops;
    double pct_of_read;
};

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "mnemo-bench-kernels: %s\n", msg.c_str());
    std::exit(1);
}

std::string exe_dir() {
    char path[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0) return ".";
    path[n] = '\0';
    std::string s(path);
    const size_t slash = s.rfind('/');
    return slash == std::string::npos ? "." : s.substr(0, slash);
}

const mnemo_backend_api* load_cpu_module() {
    const std::string path = exe_dir() + "/libmnemo-backend-cpu.so";
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) die("cannot load " + path + ": " + dlerror());
    auto entry = reinterpret_cast<mnemo_backend_entry_fn>(dlsym(lib, MNEMO_BACKEND_ENTRY_SYMBOL));
    if (!entry) die(path + " has no " MNEMO_BACKEND_ENTRY_SYMBOL);
    const mnemo_backend_api* api = entry();
    if (!api || api->abi_version != MNEMO_ABI_VERSION) die(path + " was built for another ABI version");
    return api;
}

std::string dtype_name(int32_t dt) { return std::string(mnemo::dtype_name(static_cast<mnemo::DType>(dt))); }
// Bytes of `rows` rows of `cols` weights (block-quantized rows are whole blocks).
uint64_t weight_bytes(int32_t dt, int64_t rows, int64_t cols) {
    return static_cast<uint64_t>(rows) * mnemo::dtype_bytes(static_cast<mnemo::DType>(dt), cols);
}

// Deterministic pseudo-random values in [-1, 1), cheap enough for hundreds of MiB: `rows` x `cols`
// in the dtype (q8_0 / q4_0 quantized from them; the K-quants random block bytes with small f16
// scales, the bytes of real files being just as random to the kernels).
void fill(std::vector<uint8_t>& out, int32_t dtype, int64_t rows, int64_t cols, uint32_t seed) {
    const auto dt = static_cast<mnemo::DType>(dtype);
    out.resize(weight_bytes(dtype, rows, cols));
    uint32_t s = seed * 2654435761u + 1;
    auto next = [&] {
        s = s * 1664525u + 1013904223u;
        return static_cast<float>(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
    };
    const size_t count = static_cast<size_t>(rows * cols);
    if (dt == mnemo::DType::Q8_0 || dt == mnemo::DType::Q4_0) {
        std::vector<float> row(static_cast<size_t>(cols));
        const uint64_t rb = weight_bytes(dtype, 1, cols);
        for (int64_t r = 0; r < rows; ++r) {
            for (float& v : row) v = next();
            mnemo::quantize_row(mnemo::ggml_type_of_dtype(dt), row.data(), out.data() + static_cast<uint64_t>(r) * rb, cols);
        }
        return;
    }
    if (mnemo::dtype_is_quantized(dt)) {
        for (uint8_t& b : out) b = static_cast<uint8_t>(next() * 127.0f + 128.0f);
        const int64_t bb = mnemo::dtype_block(dt).bytes;
        const uint16_t d = mnemo::f32_to_f16(0.002f);
        for (size_t off = 0; off < out.size(); off += static_cast<size_t>(bb)) {
            if (dt == mnemo::DType::Q6_K) {
                std::memcpy(out.data() + off + 208, &d, 2);
            } else {
                std::memcpy(out.data() + off, &d, 2);
                std::memcpy(out.data() + off + 2, &d, 2);
            }
        }
        return;
    }
    for (size_t i = 0; i < count; ++i) {
        const float v = next();
        if (dtype == MNEMO_DTYPE_F32) {
            std::memcpy(out.data() + 4 * i, &v, 4);
        } else {
            const uint16_t h = dtype == MNEMO_DTYPE_F16 ? mnemo::f32_to_f16(v) : mnemo::f32_to_bf16(v);
            std::memcpy(out.data() + 2 * i, &h, 2);
        }
    }
}

class Runner {
public:
    Runner(const mnemo_backend_api* api, int threads) : api_(api) {
        mnemo_backend_config cfg{threads};
        mnemo_error err{};
        if (api_->open(0, &cfg, &ctx_, &err) != MNEMO_OK) die(std::string("cpu open: ") + err.message);
    }
    ~Runner() { api_->close(ctx_); }

    void* upload(const std::vector<uint8_t>& bytes) {
        void* buf = nullptr;
        mnemo_error err{};
        if (api_->buffer_alloc(ctx_, bytes.size(), &buf, &err) != MNEMO_OK) die(err.message);
        if (api_->buffer_write(ctx_, buf, 0, bytes.data(), bytes.size(), &err) != MNEMO_OK) die(err.message);
        return buf;
    }

    Result time_case(const Case& c, uint64_t cold_bytes, double min_seconds) {
        const uint64_t wbytes = weight_bytes(c.dtype, c.m, c.k);
        // Enough weight copies to overflow the caches, so each matmul streams from memory.
        const int copies = static_cast<int>(std::clamp<uint64_t>((cold_bytes + wbytes - 1) / wbytes, 1, 64));
        std::vector<uint8_t> host, weights;
        fill(host, MNEMO_DTYPE_F32, c.n, c.k, 7);
        void* xbuf = upload(host);
        std::vector<void*> bufs{xbuf};
        std::vector<mnemo_node> nodes(static_cast<size_t>(copies));
        for (int i = 0; i < copies; ++i) {
            if (i < 4) fill(weights, c.dtype, c.m, c.k, static_cast<uint32_t>(i + 1));  // (copies past 4 repeat the 4th's values)
            void* wbuf = upload(weights);
            host.assign(static_cast<size_t>(c.n * c.m) * 4, 0);
            void* ybuf = upload(host);
            bufs.push_back(wbuf);
            bufs.push_back(ybuf);
            mnemo_node& nd = nodes[static_cast<size_t>(i)];
            nd = mnemo_node{};
            nd.op = MNEMO_OP_MATMUL;
            nd.n_inputs = 2;
            nd.inputs[0] = mnemo_tensor{xbuf, 0, MNEMO_DTYPE_F32, 2, {c.n, c.k, 0, 0}};
            nd.inputs[1] = mnemo_tensor{wbuf, 0, c.dtype, 2, {c.m, c.k, 0, 0}};
            nd.output = mnemo_tensor{ybuf, 0, MNEMO_DTYPE_F32, 2, {c.n, c.m, 0, 0}};
        }
        void* graph = nullptr;
        mnemo_error err{};
        if (api_->graph_prepare(ctx_, nodes.data(), copies, &graph, &err) != MNEMO_OK) die(err.message);
        auto run_once = [&] {
            if (api_->graph_run(ctx_, graph, nullptr, &err) != MNEMO_OK) die(err.message);
        };
        run_once();  // warm-up: page faults, thread wake-up
        double best = 1e30;
        double spent = 0;
        int runs = 0;
        while (runs < 3 || (spent < min_seconds && runs < 200)) {
            const auto t0 = std::chrono::steady_clock::now();
            run_once();
            const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            best = std::min(best, dt);
            spent += dt;
            ++runs;
        }
        api_->graph_release(ctx_, graph);
        for (void* b : bufs) api_->buffer_free(ctx_, b);
        Result r{};
        r.c = c;
        r.seconds = best / copies;
        r.gbps = static_cast<double>(wbytes) / r.seconds / 1e9;
        r.gflops = 2.0 * static_cast<double>(c.n) * static_cast<double>(c.m) * static_cast<double>(c.k) / r.seconds / 1e9;
        return r;
    }

private:
    const mnemo_backend_api* api_;
    void* ctx_ = nullptr;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--json") {
            o.json = true;
        } else if (a == "--quick") {
            o.quick = true;
        } else if (a == "--threads" && i + 1 < argc) {
            char* end = nullptr;
            const long v = std::strtol(argv[++i], &end, 10);
            if (!end || *end || v < 1 || v > 1024) die("--threads expects a number in 1..1024");
            o.threads = static_cast<int>(v);
        } else if (a == "--case" && i + 1 < argc) {
            o.cases.push_back(argv[++i]);
        } else if (a == "--help" || a == "-h") {
            std::printf("usage: mnemo-bench-kernels [--threads N] [--json] [--quick] [--case N,K,M,DTYPE]...\n"
                        "  DTYPE: f32 f16 bf16 q8_0 q4_0 q4_k q5_k q6_k\n");
            std::exit(0);
        } else {
            die("unknown argument '" + a + "' (try --help)");
        }
    }
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse(argc, argv);
    const mnemo_backend_api* api = load_cpu_module();
    mnemo_device_info info{};
    api->device_info(0, &info);
    const int threads = opt.threads > 0 ? opt.threads : std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));

    mnemo::Bandwidth bw1, bwn;
    try {
        const uint64_t bytes = opt.quick ? (256ull << 20) : (1ull << 30);
        bw1 = mnemo::measure_bandwidth(1, bytes, opt.quick ? 2 : 5);
        bwn = threads == 1 ? bw1 : mnemo::measure_bandwidth(threads, bytes, opt.quick ? 2 : 5);
    } catch (const mnemo::Error& e) {
        die(e.what());
    }

    std::vector<Case> cases;
    for (const std::string& spec : opt.cases) {
        long long n = 0, k = 0, m = 0;
        char type[8] = {};
        if (std::sscanf(spec.c_str(), "%lld,%lld,%lld,%7s", &n, &k, &m, type) != 4 || n < 1 || k < 1 || m < 1 ||
            n > (1 << 16) || k > (1 << 20) || m > (1 << 20))
            die("--case expects N,K,M,dtype with positive sizes, e.g. 1,2048,8192,f16; got '" + spec + "'");
        const std::string t = type;
        const std::optional<mnemo::DType> parsed = mnemo::dtype_from_name(t);
        if (!parsed || *parsed == mnemo::DType::I32)
            die("--case: dtype must be f32, f16, bf16, q8_0, q4_0, q4_k, q5_k or q6_k, got '" + t + "'");
        if (k % mnemo::dtype_block(*parsed).elems != 0)
            die("--case: K=" + std::to_string(k) + " is not a whole number of " + t + " blocks");
        cases.push_back({n, k, m, static_cast<int32_t>(*parsed)});
    }
    for (int32_t dt : {MNEMO_DTYPE_F16, MNEMO_DTYPE_BF16, MNEMO_DTYPE_F32, MNEMO_DTYPE_Q8_0, MNEMO_DTYPE_Q4_0, MNEMO_DTYPE_Q4_K,
                       MNEMO_DTYPE_Q5_K, MNEMO_DTYPE_Q6_K}) {
        if (!opt.cases.empty()) break;
        cases.push_back({1, 2048, 8192, dt});
        cases.push_back({1, 2048, 2048, dt});
        cases.push_back({1, 1024, 32000, dt});
    }
    if (opt.cases.empty()) {
        cases.push_back({1, 4096, 4096, MNEMO_DTYPE_F16});
        cases.push_back({4, 2048, 8192, MNEMO_DTYPE_F16});
        cases.push_back({4, 2048, 8192, MNEMO_DTYPE_Q4_0});
        for (int32_t dt : {MNEMO_DTYPE_F16, MNEMO_DTYPE_BF16, MNEMO_DTYPE_F32, MNEMO_DTYPE_Q8_0, MNEMO_DTYPE_Q4_0, MNEMO_DTYPE_Q4_K})
            cases.push_back({128, 2048, 2048, dt});
    }

    Runner runner(api, threads);
    const uint64_t cold = opt.quick ? (96ull << 20) : (256ull << 20);
    std::vector<Result> results;
    for (const Case& c : cases) {
        const bool prefill = c.n > 8;
        Result r = runner.time_case(c, prefill ? 0 : cold, opt.quick ? 0.2 : 1.0);
        r.pct_of_read = 100.0 * r.gbps / bwn.read_gbps;
        results.push_back(r);
    }

    if (opt.json) {
        std::printf("{\n  \"device\": \"%s\",\n  \"threads\": %d,\n", info.name, threads);
        std::printf("  \"bandwidth\": {\"read_gbps_1t\": %.2f, \"copy_gbps_1t\": %.2f, \"read_gbps\": %.2f, \"copy_gbps\": %.2f, \"bytes\": %llu},\n",
                    bw1.read_gbps, bw1.copy_gbps, bwn.read_gbps, bwn.copy_gbps, static_cast<unsigned long long>(bwn.bytes));
        std::printf("  \"matmul\": [\n");
        for (size_t i = 0; i < results.size(); ++i) {
            const Result& r = results[i];
            std::printf("    {\"n\": %lld, \"k\": %lld, \"m\": %lld, \"dtype\": \"%s\", \"us\": %.2f, \"weight_gbps\": %.2f, "
                        "\"gflops\": %.2f, \"pct_of_read_bw\": %.1f}%s\n",
                        static_cast<long long>(r.c.n), static_cast<long long>(r.c.k), static_cast<long long>(r.c.m),
                        dtype_name(r.c.dtype).c_str(), r.seconds * 1e6, r.gbps, r.gflops, r.pct_of_read,
                        i + 1 < results.size() ? "," : "");
        }
        std::printf("  ]\n}\n");
        return 0;
    }
    std::printf("device: %s (%s)\n", info.name, info.description);
    std::printf("memory read bandwidth: %.2f GB/s (1 thread), %.2f GB/s (%d threads); copy %.2f / %.2f GB/s\n\n",
                bw1.read_gbps, bwn.read_gbps, threads, bw1.copy_gbps, bwn.copy_gbps);
    std::printf("%6s %6s %6s %5s %10s %10s %9s %8s\n", "N", "K", "M", "type", "time(us)", "W GB/s", "GFLOP/s", "%read");
    for (const Result& r : results)
        std::printf("%6lld %6lld %6lld %5s %10.1f %10.2f %9.2f %7.1f%%\n", static_cast<long long>(r.c.n),
                    static_cast<long long>(r.c.k), static_cast<long long>(r.c.m), dtype_name(r.c.dtype).c_str(), r.seconds * 1e6,
                    r.gbps, r.gflops, r.pct_of_read);
    return 0;
}
