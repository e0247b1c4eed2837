// `mnemo compare`: the same prompt on several backends, side by side: speed, time per op
// category, device memory, and how far each backend's logits and greedy tokens are from the
// first backend's (mnemo::compare_backends does the work; this file parses flags and prints).
#include <climits>
#include <cstdio>
#include <functional>

#include "app/json_writer.hpp"
#include "app/measure.hpp"
#include "backend/op_profile_json.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "memory/memory_flags.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/session/compare.hpp"

namespace mnemo::cli {

namespace {

std::string fmt(const char* format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

std::string join_tokens(const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids) {
        if (!s.empty()) s += ' ';
        s += std::to_string(id);
    }
    return s;
}

uint64_t total_op_ns(const BackendRun& r) {
    uint64_t t = 0;
    for (const auto& [cat, ns] : r.op_times) t += ns;
    return t;
}

std::string memory_cell(const BackendRun& r) {
    std::string s = app::format_bytes(r.peak_device_bytes);
    // Host memory used in place (mmapped weights) is resident in the process, not a device copy.
    if (r.host_device_bytes > 0) s += " (" + app::format_bytes(r.host_device_bytes) + " resident)";
    return s;
}

std::string divergence_cell(const BackendRun& r, const CompareResult& res) {
    if (r.first_divergence < 0) return "none";
    const int32_t ref_token = res.runs[static_cast<size_t>(res.reference)].tokens[static_cast<size_t>(r.first_divergence)];
    return "step " + std::to_string(r.first_divergence) + ": " + std::to_string(r.tokens[static_cast<size_t>(r.first_divergence)]) +
           " vs " + std::to_string(ref_token) + " (margin " + fmt("%.3g", r.divergence_margin) + ")";
}

void print_table(const CompareResult& res, const std::string& model_dir, const Tokenizer* tok) {
    const std::string ref =
        res.reference >= 0 ? BackendSpec{res.runs[static_cast<size_t>(res.reference)].backend, res.runs[static_cast<size_t>(res.reference)].device}.str()
                           : "none";
    std::string model = model_dir;
    if (res.reference >= 0) {
        const ModelSummary& m = res.runs[static_cast<size_t>(res.reference)].summary;
        model += " (" + m.model_type + ", weights " + m.weight_dtypes + ")";
    }
    std::printf("model: %s | prompt: %zu tokens | %d greedy steps | reference: %s\n\n", model.c_str(),
                res.prompt_tokens.size(), res.n_steps, ref.c_str());
    // One row per figure, one column per backend.
    std::vector<std::pair<std::string, std::vector<std::string>>> rows;
    auto row = [&](const std::string& name, const std::function<std::string(const BackendRun&, size_t)>& cell) {
        std::vector<std::string> cells;
        for (size_t i = 0; i < res.runs.size(); ++i) {
            const BackendRun& r = res.runs[i];
            cells.push_back(r.ok() || name == "device" ? cell(r, i) : "-");
        }
        rows.emplace_back(name, std::move(cells));
    };
    row("device", [](const BackendRun& r, size_t) {
        if (!r.ok()) return std::string("not run (see below)");
        return r.device_name;
    });
    row("prompt t/s", [](const BackendRun& r, size_t) { return fmt("%.2f", r.prompt_tps); });
    row("generation t/s", [&](const BackendRun& r, size_t) { return res.n_steps > 1 ? fmt("%.2f", r.gen_tps) : std::string("-"); });
    for (const char* cat : op_categories()) {
        row(std::string(cat) + " ms", [cat](const BackendRun& r, size_t) {
            if (total_op_ns(r) == 0) return std::string("n/a");  // the backend gives no per-op timings
            const auto it = r.op_times.find(cat);
            return fmt("%.3f", it == r.op_times.end() ? 0.0 : static_cast<double>(it->second) / 1e6);
        });
    }
    row("peak device memory", [](const BackendRun& r, size_t) { return memory_cell(r); });
    row("max abs dlogit", [&](const BackendRun& r, size_t i) {
        return static_cast<int32_t>(i) == res.reference ? std::string("(reference)") : fmt("%.3g", r.max_abs_dlogit);
    });
    row("first divergence", [&](const BackendRun& r, size_t i) {
        return static_cast<int32_t>(i) == res.reference ? std::string("(reference)") : divergence_cell(r, res);
    });

    std::printf("| |");
    for (const BackendRun& r : res.runs) std::printf(" %s |", BackendSpec{r.backend, r.device}.str().c_str());
    std::printf("\n|---|");
    for (size_t i = 0; i < res.runs.size(); ++i) std::printf("--:|");
    std::printf("\n");
    for (const auto& [name, cells] : rows) {
        std::printf("| %s |", name.c_str());
        for (const std::string& c : cells) std::printf(" %s |", c.c_str());
        std::printf("\n");
    }
    std::printf("\n");
    for (const BackendRun& r : res.runs) {
        const std::string spec = BackendSpec{r.backend, r.device}.str();
        if (!r.ok()) {
            std::printf("%s: not run: %s\n", spec.c_str(), printable(r.error).c_str());
            continue;
        }
        std::printf("%s tokens: %s\n", spec.c_str(), join_tokens(r.tokens).c_str());
        if (tok != nullptr) std::printf("%s text: %s\n", spec.c_str(), json::quote(tok->decode(r.tokens, true)).c_str());
    }
}

void print_json(const CompareResult& res, const std::string& model_dir) {
    app::JsonWriter j;
    j.begin_object();
    j.key("model_dir").value(model_dir);
    j.key("prompt_tokens").array(res.prompt_tokens);
    j.key("n_steps").value(res.n_steps);
    j.key("reference");
    if (res.reference >= 0) {
        j.value(static_cast<int32_t>(res.reference));
    } else {
        j.null();
    }
    j.key("backends").begin_array();
    for (const BackendRun& r : res.runs) {
        j.begin_object();
        j.key("backend").value(r.backend).key("device").value(r.device);
        j.key("spec").value(BackendSpec{r.backend, r.device}.str()).key("device_name").value(r.device_name);
        j.key("ok").value(r.ok());
        j.key("error");
        if (r.ok()) {
            j.null();
        } else {
            j.value(r.error);
        }
        if (r.ok()) {
            j.key("prompt_seconds").value(r.prompt_seconds).key("prompt_tps").value(r.prompt_tps);
            j.key("gen_seconds").value(r.gen_seconds).key("gen_tps").value(r.gen_tps);
            j.key("op_times_ns").begin_object();
            for (const auto& [cat, ns] : r.op_times) j.key(cat).value(ns);
            j.end_object();
            op_profiles_json(j.key("ops"), r.ops);
            j.key("peak_device_bytes").value(r.peak_device_bytes).key("resident_host_bytes").value(r.host_device_bytes);
            j.key("tokens").array(r.tokens);
            j.key("max_abs_dlogit").value(r.max_abs_dlogit);
            j.key("step_max_abs_dlogit").array(r.step_max_abs_dlogit);
            j.key("first_divergence");
            if (r.first_divergence >= 0) {
                j.value(r.first_divergence).key("divergence_margin").value(r.divergence_margin);
            } else {
                j.null();
            }
        }
        j.end_object();
    }
    j.end_array();
    j.end_object();
    std::printf("%s\n", j.str().c_str());
}

}  // namespace

int cmd_compare(int argc, char** argv) {
    std::string model;
    std::string prompt;
    bool prompt_given = false;
    std::vector<int32_t> ids;
    std::vector<BackendSpec> backends;
    int32_t n = 16, threads = 0, ctx = 0, cache_dtype = MNEMO_DTYPE_F16;
    bool json = false, no_warmup = false;
    SessionOptions::MemoryTables memory_tables = SessionOptions::MemoryTables::Device;

    app::ArgParser p("compare",
                     "mnemo compare [-m DIR] (-p TEXT | --ids LIST) [-n 16] --backends cpu,vulkan[:I],... [--memories FOLDER | --kb URL...] [--json]",
                     "Run the same prompt with greedy decoding on each backend, one after another, and compare them with\n"
                     "the first one that runs: prompt and generation speed, time per op category, peak device memory,\n"
                     "the largest logit difference over all steps and the first step whose token differs. The other\n"
                     "backends decode the first one's tokens, so logits stay comparable after a divergence.");
    p.string_opt("-m,--model", "DIR", "model folder (default: the bundled default model)", &model)
        .custom_opt("-p,--prompt", "TEXT", "prompt text, encoded with the model's tokenizer", [&](const std::string& v) {
            prompt = v;
            prompt_given = true;
        })
        .custom_opt("--ids", "LIST", "prompt as comma-separated token ids instead of text", [&](const std::string& v) {
            ids.clear();
            const auto items = app::split(v, ',');
            for (size_t i = 0; i < items.size(); ++i)
                ids.push_back(static_cast<int32_t>(app::parse_int(items[i], "--ids item " + std::to_string(i), 0, INT32_MAX)));
        })
        .int_opt("-n,--n-predict", "N", "greedy tokens to generate and compare (default: 16)", &n, 1, 1 << 20)
        .custom_opt("--backends", "LIST", "backends to compare, NAME or NAME:DEVICE, e.g. cpu,vulkan:1 (required)",
                    [&](const std::string& v) {
                        try {
                            backends = parse_backend_list(v);
                        } catch (const Error& e) {
                            throw app::UsageError(std::string("--backends: ") + e.what());
                        }
                    })
        .int_opt("-t,--threads", "N", "worker threads (default: backend's choice)", &threads, 0, 4096)
        .int_opt("-c,--ctx-size", "N", "context length (default: the prompt plus -n)", &ctx, 0, 1 << 24);
    add_cache_type_flag(p, &cache_dtype);
    add_memory_tables_flag(p, &memory_tables);
    // The same memories for every backend, as `mnemo run` reads them: a comparison of a model that
    // reads memories then measures the retrieval too, and gives the answer a chat with them gives.
    MemoryFlags memories;
    add_memory_flags(p, memories);
    p.flag("--no-warmup", "count graph planning and pipeline creation in the first timed run", &no_warmup)
        .flag("--json", "print one JSON document instead of the table", &json);
    if (!p.parse(argc, argv, 2)) return 0;
    if (prompt_given == p.given("--ids")) throw app::UsageError("give the prompt as -p TEXT or as --ids LIST (one of them)");
    if (backends.empty()) throw app::UsageError("missing --backends LIST (e.g. --backends cpu,vulkan)");
    // What attach_memories would refuse for every backend is a usage error, said once.
    if (!memories.folder.empty() && !memories.kb_urls.empty()) throw app::UsageError("--memories and --kb both give memories: choose one");
    check_kb_flags(memories);

    ModelFlags mf;
    mf.model = model;
    const std::string dir = resolve_model_dir(mf);
    std::unique_ptr<Tokenizer> tok;
    CompareOptions o;
    o.model_dir = dir;
    if (prompt_given) {
        tok = open_tokenizer(dir);
        o.prompt_tokens = encode_prompt(*tok, prompt);
        if (o.prompt_tokens.empty()) throw app::UsageError("the prompt is empty after tokenization (and no BOS token is added)");
    } else {
        o.prompt_tokens = ids;
    }
    o.n_generate = n;
    o.backends = backends;
    o.n_threads = threads;
    o.n_ctx = ctx;
    o.cache_dtype = cache_dtype;
    o.memory_tables = memory_tables;
    o.warmup = !no_warmup;
    if (!memories.folder.empty() || !memories.kb_urls.empty())
        o.memories = [&memories](Session& session) { return attach_memories(session, memories).source; };
    install_interrupt_handler();
    o.cancel = &interrupt_flag();
    if (!json) o.on_backend_start = [](const BackendSpec& s) { std::fprintf(stderr, "%s: running...\n", s.str().c_str()); };

    CompareResult res;
    try {
        res = compare_backends(o);
    } catch (const Cancelled&) {
        std::fprintf(stderr, "mnemo: interrupted\n");
        return 130;
    }
    if (json) {
        print_json(res, dir);
    } else {
        print_table(res, dir, tok.get());
    }
    std::fflush(stdout);
    if (res.n_ran() < 2) {
        std::fprintf(stderr, "mnemo: error: %d of %zu backends ran; a comparison needs at least 2\n", res.n_ran(), res.runs.size());
        return 1;
    }
    return 0;
}

}  // namespace mnemo::cli
