#include "common.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <filesystem>

#include "mnemo/error.hpp"

namespace mnemo::cli {

namespace fs = std::filesystem;

void add_model_flags(ArgParser& p, ModelFlags& f) {
    p.string_opt("-m,--model", "DIR", "model folder (default: the bundled default model)", &f.model)
        .string_opt("--backend", "NAME", "backend module to run on (default: cpu)", &f.backend)
        .int_opt("--device", "I", "device index within the backend (default: 0)", &f.device, 0, 1 << 16)
        .int_opt("-t,--threads", "N", "worker threads (default: backend's choice)", &f.threads, 0, 4096)
        .int_opt("-c,--ctx-size", "N", "context length in tokens (default: min(trained, 4096))", &f.ctx, 0,
                 1 << 24);
}

namespace {

std::string executable_dir() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : exe.parent_path().string();
}

}  // namespace

std::string resolve_model_dir(const ModelFlags& f) {
    if (!f.model.empty()) {
        std::error_code ec;
        if (!fs::exists(f.model, ec)) throw Error("model folder '" + f.model + "' does not exist");
        if (!fs::is_directory(f.model, ec)) throw Error("model path '" + f.model + "' is not a folder");
        return f.model;
    }
    std::vector<std::string> candidates;
    const std::string exe_dir = executable_dir();
    if (!exe_dir.empty()) {
        candidates.push_back((fs::path(exe_dir) / ".." / MNEMO_INSTALL_DATA_SUBDIR / "default-model")
                                 .lexically_normal()
                                 .string());
    }
    candidates.push_back(MNEMO_DEFAULT_MODEL_DIR);
    for (const std::string& c : candidates) {
        std::error_code ec;
        if (fs::is_regular_file(fs::path(c) / "config.json", ec)) return c;
    }
    std::string tried;
    for (const std::string& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
    throw Error("no model given (-m DIR) and no default model found (looked in " + tried + ")");
}

SessionOptions session_options(const ModelFlags& f, const std::string& model_dir) {
    SessionOptions o;
    o.model_dir = model_dir;
    o.backend = f.backend;
    o.device = f.device;
    o.n_threads = f.threads;
    o.n_ctx = f.ctx;
    return o;
}

std::unique_ptr<Session> open_session(const SessionOptions& o) {
    try {
        return Session::open(o);
    } catch (const Cancelled&) {
        throw;
    } catch (const std::exception& e) {
        // The engine usually names the model folder itself; add it only when it does not.
        if (std::string(e.what()).find(o.model_dir) != std::string::npos) throw;
        throw with_context("loading model '" + o.model_dir + "' on backend '" + o.backend + "'", e);
    }
}

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& model_dir) {
    try {
        return load_tokenizer(model_dir);
    } catch (const std::exception& e) {
        if (std::string(e.what()).find(model_dir) != std::string::npos) throw;
        throw with_context("loading the tokenizer of '" + model_dir + "'", e);
    }
}

std::string tokenizer_kind(const std::string& model_dir) {
    std::error_code ec;
    if (fs::is_regular_file(fs::path(model_dir) / "tokenizer.json", ec)) return "byte-level BPE (tokenizer.json)";
    if (fs::is_regular_file(fs::path(model_dir) / "tokenizer.model", ec)) return "SentencePiece (tokenizer.model)";
    return "none found";
}

namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
    // A second Ctrl-C while the first is still pending means the user really wants out.
    if (g_interrupted.exchange(true)) _exit(130);
}

}  // namespace

std::atomic<bool>& interrupt_flag() { return g_interrupted; }

void install_interrupt_handler() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocking getline() must return so we can exit cleanly
    sigaction(SIGINT, &sa, nullptr);
}

std::string format_bytes(uint64_t bytes) {
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    char buf[64];
    if (u == 0) {
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    } else {
        std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
    }
    return buf;
}

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t peak_rss_bytes() {
    struct rusage ru {};
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return static_cast<uint64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace mnemo::cli
