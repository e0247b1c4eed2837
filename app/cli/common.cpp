#include "common.hpp"
#include "mnemo/io/printable.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "app/default_model.hpp"
#include "backend/auto_backend.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/gguf.hpp"

namespace mnemo::cli {

namespace fs = std::filesystem;

void add_model_flags(app::ArgParser& p, ModelFlags& f) {
    p.string_opt("-m,--model", "DIR|FILE", "model folder or GGUF file (default: the bundled default model)", &f.model)
        .string_opt("--backend", "NAME", "backend module to run on, or auto: the fastest kind of device that opens the "
                                         "model (GPUs first, then the CPU backend; --device is then ignored) (default: cpu)",
                    &f.backend)
        .int_opt("--device", "I", "device index within the backend (default: 0)", &f.device, 0, 1 << 16)
        .int_opt("-t,--threads", "N", "worker threads (default: backend's choice)", &f.threads, 0, 4096)
        .int_opt("-c,--ctx-size", "N", "context length in tokens (default: min(trained, 4096))", &f.ctx, 0,
                 1 << 24);
    add_cache_type_flag(p, &f.cache_dtype);
    add_memory_tables_flag(p, &f.memory_tables);
}

void add_memory_tables_flag(app::ArgParser& p, SessionOptions::MemoryTables* where) {
    p.custom_opt("--memory-tables", "WHERE",
                 "where the memory layers' value tables live: device (copied like every weight) or host (left in the "
                 "mapped model file; the device reads only the rows each step selects, over the bus on a discrete GPU: "
                 "for tables larger than the device memory) (default: device)",
                 [where](const std::string& v) {
                     if (v == "device") *where = SessionOptions::MemoryTables::Device;
                     else if (v == "host") *where = SessionOptions::MemoryTables::Host;
                     else throw app::UsageError("--memory-tables: '" + v + "' is not a place; expected device or host");
                 });
}

void add_cache_type_flag(app::ArgParser& p, int32_t* dtype) {
    p.custom_opt("--cache-type", "TYPE",
                 "KV cache (and explicit-memory) element type: f32, f16 or q8_0 (q8_0 needs head dims that are "
                 "multiples of 32) (default: f16)",
                 [dtype](const std::string& v) {
                     if (v == "f32") *dtype = MNEMO_DTYPE_F32;
                     else if (v == "f16") *dtype = MNEMO_DTYPE_F16;
                     else if (v == "q8_0") *dtype = MNEMO_DTYPE_Q8_0;
                     else throw app::UsageError("--cache-type: '" + v + "' is not a cache type; expected f32, f16 or q8_0");
                 });
}

std::string resolve_model_dir(const ModelFlags& f) {
    if (!f.model.empty()) {
        std::error_code ec;
        if (!fs::exists(f.model, ec)) throw Error("model '" + f.model + "' does not exist");
        if (!fs::is_directory(f.model, ec) && !looks_like_gguf(f.model))
            throw Error("model '" + f.model + "' is neither a folder nor a GGUF file");
        return f.model;
    }
    const std::string found = app::find_default_model();
    if (!found.empty()) return found;
    std::string tried;
    for (const std::string& place : app::default_model_places()) tried += (tried.empty() ? "" : ", ") + place;
    throw Error("no model given (-m DIR) and no default model found (looked in " + tried + ")");
}

SessionOptions session_options(const ModelFlags& f, const std::string& model_dir) {
    SessionOptions o;
    o.model_dir = model_dir;
    o.backend = f.backend;
    o.device = f.device;
    o.n_threads = f.threads;
    o.n_ctx = f.ctx;
    o.cache_dtype = f.cache_dtype;
    o.memory_tables = f.memory_tables;
    return o;
}

std::unique_ptr<Session> open_session(const SessionOptions& o) {
    try {
        if (o.backend == "auto") {
            AutoChoice c = open_auto_session(o, BackendRegistry::global());
            std::fprintf(stderr, "backend auto: %s\n", printable(c.report).c_str());  // quotes backends' errors
            return std::move(c.session);
        }
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
    if (looks_like_gguf(model_dir)) return "from the GGUF file's metadata";
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

}  // namespace mnemo::cli
