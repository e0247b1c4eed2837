// `mnemo bench`: llama-bench style throughput. For every backend x batch size B:
//   ppP: prefill of P tokens in each of B sequences (batched up to n_ubatch rows per decode),
//   tgN: N decode steps, each one decode() with B rows (one new token per sequence),
// each timed -r times after an untimed warm-up run (which also plans the graphs for the shapes).
// Token ids are fixed pseudo-random values, so no tokenizer or sampling cost is measured.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <random>
#include <thread>

#include "app/json_writer.hpp"
#include "app/measure.hpp"
#include "backend/op_profile_json.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "memory/memory_flags.hpp"
#include "mnemo/error.hpp"
#include "mnemo/modules/registry.hpp"
#include "mnemo/session/bandwidth.hpp"

namespace mnemo::cli {

namespace {

// Tokens already in each sequence before the timed generation steps.
constexpr int32_t kTgPrefill = 4;

struct Row {
    std::string backend;
    std::string device;
    int32_t batch = 1;
    std::string test;   // "pp128", "tg64"
    bool generation = false;
    int64_t tokens = 0;  // tokens processed per timed run
    std::vector<double> tps;  // one tokens/s value per repetition
    uint64_t peak_rss = 0;
    ModelSummary summary;
    double achieved_gbps = 0.0;  // --bandwidth, tg rows only
    double roofline = 0.0;       // achieved / measured read bandwidth
    std::vector<OpProfile> ops;  // --profile: time per op over the timed runs
    bool kb = false;             // --kb: what the knowledge server sent during the timed runs
    KbSourceStatus kb_runs;  // counters over the timed runs (after minus before)

    double min() const { return *std::min_element(tps.begin(), tps.end()); }
    double max() const { return *std::max_element(tps.begin(), tps.end()); }
    double median() const {
        std::vector<double> v = tps;
        std::sort(v.begin(), v.end());
        const size_t n = v.size();
        return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    }
};

std::vector<int32_t> random_tokens(size_t n, int32_t vocab, uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int32_t> dist(0, vocab - 1);
    std::vector<int32_t> v(n);
    for (int32_t& t : v) t = dist(gen);
    return v;
}

// A model whose forward pass is not finite (NaN weights, an overflow) has no speed worth
// reporting, and `mnemo run` would refuse it: the last logits of every run are checked, outside
// the timed part.
void check_finite(const std::vector<float>* logits, int64_t vocab, const char* test) {
    if (logits == nullptr) return;
    for (size_t i = 0; i < logits->size(); ++i)
        if (!std::isfinite((*logits)[i]))
            throw Error(std::string(test) + ": the model produced NaN/Inf logits (row " + std::to_string(i / static_cast<size_t>(vocab)) +
                        ", token " + std::to_string(i % static_cast<size_t>(vocab)) + "): its weights or activations are not finite");
}

// Feed `len` tokens at positions [start, start+len) to each of `n_seq` sequences, sequence by
// sequence, in batches of at most `ubatch` rows; logits only for each sequence's last token.
// Returns the logits of the last call.
const std::vector<float>* prefill(Session& s, int32_t n_seq, int32_t start, int32_t len, int32_t ubatch,
                                  const std::vector<int32_t>& toks) {
    const std::vector<float>* last = nullptr;
    if (s.reads_memories()) {
        // A prompt of a model that reads memories goes through append(): its chunks retrieve
        // their own memories (decode() would schedule them as generated text).
        size_t k = 0;
        for (int32_t seq = 0; seq < n_seq; ++seq) {
            std::vector<int32_t> t(static_cast<size_t>(len));
            for (int32_t& x : t) x = toks[k++ % toks.size()];
            if (start == 0) s.reset(seq);
            last = &s.append(seq, t);
        }
        return last;
    }
    std::vector<BatchToken> batch;
    batch.reserve(static_cast<size_t>(ubatch));
    size_t k = 0;
    for (int32_t seq = 0; seq < n_seq; ++seq) {
        for (int32_t i = 0; i < len; ++i) {
            batch.push_back({toks[k++ % toks.size()], start + i, seq, i == len - 1});
            if (static_cast<int32_t>(batch.size()) == ubatch) {
                last = &s.decode(batch);
                batch.clear();
            }
        }
    }
    if (!batch.empty()) last = &s.decode(batch);
    return last;
}

double run_pp(Session& s, int32_t n_seq, int32_t p, int32_t ubatch, const std::vector<int32_t>& toks) {
    s.reset_all();
    const double t0 = app::now_seconds();
    const std::vector<float>* last = prefill(s, n_seq, 0, p, ubatch, toks);
    const double dt = app::now_seconds() - t0;
    check_finite(last, s.vocab_size(), "pp");
    return static_cast<double>(n_seq) * p / dt;
}

double run_tg(Session& s, int32_t n_seq, int32_t n, int32_t ubatch, const std::vector<int32_t>& toks) {
    s.reset_all();
    prefill(s, n_seq, 0, kTgPrefill, ubatch, toks);
    std::vector<BatchToken> batch(static_cast<size_t>(n_seq));
    size_t k = 0;
    const std::vector<float>* last = nullptr;
    const double t0 = app::now_seconds();
    for (int32_t step = 0; step < n; ++step) {
        for (int32_t seq = 0; seq < n_seq; ++seq) {
            batch[static_cast<size_t>(seq)] = {toks[k++ % toks.size()], kTgPrefill + step, seq, true};
        }
        last = &s.decode(batch);
    }
    const double dt = app::now_seconds() - t0;
    check_finite(last, s.vocab_size(), "tg");
    return static_cast<double>(n_seq) * n / dt;
}

double per(uint64_t a, uint64_t b) { return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0; }

std::string cpu_name() {
    for (const DeviceEntry& d : BackendRegistry::global().devices()) {
        if (d.info.type == MNEMO_DEVICE_CPU) {
            return std::string(d.info.name, strnlen(d.info.name, sizeof d.info.name));
        }
    }
    return "unknown";
}

std::string mib(uint64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(b) / (1024.0 * 1024.0));
    return buf;
}

// Per-op time of each test (--profile): where a backend spends its time, op by op.
void print_profiles(const std::vector<Row>& rows) {
    for (const Row& r : rows) {
        if (r.ops.empty()) continue;
        uint64_t total = 0;
        for (const OpProfile& op : r.ops) total += op.total_ns;
        std::printf("\nper-op time, %s B=%d %s (%d runs):\n", r.backend.c_str(), r.batch, r.test.c_str(),
                    static_cast<int>(r.tps.size()));
        std::printf("| op | calls | total ms | %% | us/call |\n|---|--:|--:|--:|--:|\n");
        for (const OpProfile& op : r.ops)
            std::printf("| %s | %llu | %.2f | %.1f | %.1f |\n", op.op.c_str(), static_cast<unsigned long long>(op.calls),
                        static_cast<double>(op.total_ns) / 1e6, total ? 100.0 * static_cast<double>(op.total_ns) / static_cast<double>(total) : 0.0,
                        op.calls ? static_cast<double>(op.total_ns) / 1e3 / static_cast<double>(op.calls) : 0.0);
    }
}

void print_table(const std::vector<Row>& rows, const Bandwidth* bw) {
    std::printf("| backend | device | B | test | t/s median | t/s min | t/s max | peak RSS MiB | weights MiB | state MiB | work MiB |%s\n",
                bw ? " GB/s | roofline % |" : "");
    std::printf("|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|%s\n", bw ? "--:|--:|" : "");
    for (const Row& r : rows) {
        std::printf("| %s | %s | %d | %s | %.2f | %.2f | %.2f | %s | %s | %s | %s |", r.backend.c_str(), r.device.c_str(),
                    r.batch, r.test.c_str(), r.median(), r.min(), r.max(), mib(r.peak_rss).c_str(),
                    mib(r.summary.weight_bytes).c_str(), mib(r.summary.state_bytes).c_str(),
                    mib(r.summary.work_bytes).c_str());
        if (bw != nullptr) {
            if (r.generation) {
                std::printf(" %.2f | %.1f |", r.achieved_gbps, 100.0 * r.roofline);
            } else {
                std::printf(" - | - |");
            }
        }
        std::printf("\n");
    }
    if (bw != nullptr) {
        std::printf("\nmeasured memory bandwidth: read %.2f GB/s, copy %.2f GB/s (%lld threads, %s MiB)\n", bw->read_gbps,
                    bw->copy_gbps, static_cast<long long>(bw->threads), mib(bw->bytes).c_str());
    }
}

void print_json(const std::vector<Row>& rows, const Bandwidth* bw, const std::string& model_dir, int32_t p,
                int32_t n, int32_t reps, int32_t threads) {
    app::JsonWriter j;
    j.begin_object();
    j.key("build").begin_object().key("mnemo_version").value(MNEMO_VERSION).key("cpu").value(cpu_name()).end_object();
    const ModelSummary* m = rows.empty() ? nullptr : &rows.front().summary;
    j.key("model").begin_object().key("dir").value(model_dir);
    if (m != nullptr) {
        j.key("model_type").value(m->model_type).key("architecture").value(m->architecture);
        j.key("n_params").value(m->n_params).key("weight_bytes").value(m->weight_bytes);
        j.key("activated_params").value(m->activated_params);
        j.key("decode_weight_bytes").value(static_cast<int64_t>(m->decode_weight_bytes));
        j.key("weight_dtypes").value(m->weight_dtypes);
    }
    j.end_object();
    j.key("params").begin_object().key("n_prompt").value(p).key("n_gen").value(n).key("repetitions").value(reps);
    j.key("threads").value(threads).end_object();
    j.key("bandwidth");
    if (bw != nullptr) {
        j.begin_object().key("read_gbps").value(bw->read_gbps).key("copy_gbps").value(bw->copy_gbps);
        j.key("threads").value(static_cast<int64_t>(bw->threads)).key("bytes").value(bw->bytes);
        j.end_object();
    } else {
        j.null();
    }
    j.key("rows").begin_array();
    for (const Row& r : rows) {
        j.begin_object();
        j.key("backend").value(r.backend).key("device").value(r.device).key("batch").value(r.batch);
        j.key("test").value(r.test).key("tokens_per_run").value(r.tokens);
        j.key("samples_tps").array(r.tps);
        j.key("tps_min").value(r.min()).key("tps_median").value(r.median()).key("tps_max").value(r.max());
        j.key("peak_rss_bytes").value(r.peak_rss);
        j.key("weight_bytes").value(r.summary.weight_bytes).key("state_bytes").value(r.summary.state_bytes);
        j.key("work_bytes").value(r.summary.work_bytes);
        if (!r.ops.empty()) op_profiles_json(j.key("ops"), r.ops);
        if (r.kb) {
            const KbSourceStatus& k = r.kb_runs;
            j.key("kb").begin_object().key("url").value(k.url).key("bank_version").value(k.bank_version);
            j.key("chunks").value(k.retrievals).key("calls").value(k.calls).key("records_fetched").value(k.records_fetched);
            j.key("record_bytes").value(k.record_bytes).key("reply_bytes").value(k.reply_bytes);
            j.key("record_bytes_per_chunk").value(per(k.record_bytes, k.retrievals));
            j.key("reply_bytes_per_chunk").value(per(k.reply_bytes, k.retrievals));
            j.key("cache_hits").value(k.cache_hits).key("cache_misses").value(k.cache_misses);
            j.key("cache_hit_rate").value(per(k.cache_hits, k.cache_hits + k.cache_misses));
            j.key("prefetch_hits").value(k.prefetch_hits).key("failures").value(k.failures).key("skipped").value(k.skipped);
            // Several servers (--kb given more than once): the chunks each took.
            j.key("failovers").value(k.failovers);
            j.key("servers").begin_array();
            for (const KbServerStatus& v : k.servers)
                j.begin_object().key("url").value(v.url).key("chunks").value(v.chunks).key("failures").value(v.failures).end_object();
            j.end_array();
            j.end_object();
        }
        if (bw != nullptr && r.generation) {
            j.key("achieved_gbps").value(r.achieved_gbps).key("roofline_fraction").value(r.roofline);
        }
        j.end_object();
    }
    j.end_array();
    j.end_object();
    std::printf("%s\n", j.str().c_str());
}

}  // namespace

int cmd_bench(int argc, char** argv) {
    ModelFlags model;
    int32_t p = 128, n = 64, reps = 3, ubatch = 256;
    std::vector<int64_t> batches = {1};
    std::vector<std::string> backends;
    bool json = false, bandwidth = false, no_warmup = false, profile = false;

    app::ArgParser ap("bench", "mnemo bench [-m DIR] [-p 128] [-n 64] [-r 3] [--batch 1,8] [--backend a,b] [options]",
                      "Measure prompt processing (pp) and token generation (tg) speed for each backend and batch size.");
    add_model_flags(ap, model);
    MemoryFlags memories;
    add_memory_flags(ap, memories);
    ap.int_opt("-p,--n-prompt", "N", "prompt tokens per sequence for the pp test; 0 = skip (default: 128)", &p, 0, 1 << 20)
        .int_opt("-n,--n-gen", "N", "generated tokens per sequence for the tg test; 0 = skip (default: 64)", &n, 0, 1 << 20)
        .int_opt("-r,--repetitions", "R", "timed runs per test (default: 3)", &reps, 1, 1000)
        .custom_opt("--batch", "LIST", "batch sizes = sequences decoded together (default: 1)",
                    [&](const std::string& v) { batches = app::parse_int_list(v, "--batch", 1, 4096); })
        .custom_opt("--backend", "LIST", "comma-separated backends to compare (default: cpu)",
                    [&](const std::string& v) {
                        backends = app::split(v, ',');
                        for (const std::string& b : backends) {
                            if (b.empty()) throw app::UsageError("--backend expects names like cpu,vulkan, got '" + v + "'");
                        }
                    })
        .int_opt("--ubatch", "N", "max tokens per decode call (default: 256)", &ubatch, 1, 1 << 16)
        .flag("--json", "print one JSON document instead of the table", &json)
        .flag("--bandwidth", "measure host memory bandwidth and report achieved GB/s and roofline % for tg", &bandwidth)
        .deprecated_alias("--membw", "--bandwidth")
        .flag("--no-warmup", "skip the untimed warm-up run of each test", &no_warmup)
        .flag("--profile", "also report the time spent in each op (adds a clock read per node)", &profile);
    if (!ap.parse(argc, argv, 2)) return 0;
    check_kb_flags(memories);  // a bad --kb list is said before the model loads
    if (backends.empty()) backends = {model.backend};
    if (p == 0 && n == 0) throw app::UsageError("-p and -n are both 0: nothing to measure");

    const std::string dir = resolve_model_dir(model);
    const int32_t threads = model.threads > 0 ? model.threads
                                              : static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<Row> rows;
    for (const std::string& backend : backends) {
        for (int64_t b64 : batches) {
            const int32_t B = static_cast<int32_t>(b64);
            ModelFlags mf = model;
            mf.backend = backend;
            SessionOptions o = session_options(mf, dir);
            o.n_seq = B;
            o.n_ubatch = std::max(ubatch, B);
            o.profile = profile;
            const int32_t need = std::max(p, kTgPrefill + n);
            if (o.n_ctx == 0) o.n_ctx = need;
            if (o.n_ctx < need) {
                throw Error("-c " + std::to_string(o.n_ctx) + " is too small for the tests: they need " +
                            std::to_string(need) + " positions per sequence");
            }
            if (!json) std::fprintf(stderr, "%s, batch %d: loading...\n", backend.c_str(), B);
            const auto session = open_session(o);
            const AttachedMemories source = attach_memories(*session, memories);
            const int32_t vocab = session->vocab_size();
            const auto toks = random_tokens(4096, vocab, 1234);
            for (int pass = 0; pass < 2; ++pass) {
                const bool gen = pass == 1;
                if ((gen ? n : p) == 0) continue;
                Row r;
                r.backend = backend;
                r.device = session->summary().device_name;
                r.batch = B;
                r.generation = gen;
                r.test = (gen ? "tg" : "pp") + std::to_string(gen ? n : p);
                r.tokens = static_cast<int64_t>(B) * (gen ? n : p);
                auto once = [&] {
                    return gen ? run_tg(*session, B, n, o.n_ubatch, toks) : run_pp(*session, B, p, o.n_ubatch, toks);
                };
                if (!no_warmup) once();
                session->clear_profile();
                const KbSourceStatus kb_before = source.kb ? source.kb->status() : KbSourceStatus{};
                for (int32_t i = 0; i < reps; ++i) r.tps.push_back(once());
                if (source.kb) {
                    r.kb = true;
                    r.kb_runs = source.kb->status().since(kb_before);
                }
                if (profile) r.ops = session->profile();
                r.peak_rss = app::peak_rss_bytes();
                r.summary = session->summary();
                if (!json) {
                    std::fprintf(stderr, "  %s: %.2f t/s (median of %d)\n", r.test.c_str(), r.median(), reps);
                    if (r.kb) std::fprintf(stderr, "  %s: %s\n", r.test.c_str(), kb_summary(r.kb_runs).c_str());
                }
                rows.push_back(std::move(r));
            }
        }
    }
    // Measured after the tests so its buffer does not inflate the rows' peak RSS.
    Bandwidth bw;
    if (bandwidth) {
        if (!json) std::fprintf(stderr, "measuring memory bandwidth (%d threads)...\n", threads);
        bw = measure_bandwidth(threads, size_t{1} << 30, 5);  // 1 GiB, as the roofline is defined
        for (Row& r : rows) {
            if (!r.generation) continue;
            // Every step streams the weights once for the B tokens it produces, so the bytes per
            // token are weight bytes / B. decode_weight_bytes leaves out the embedding rows a step
            // does not read; summaries without it fall back to weight_bytes.
            const uint64_t step_bytes =
                r.summary.decode_weight_bytes ? r.summary.decode_weight_bytes : r.summary.weight_bytes;
            const double steps_per_s = r.median() / r.batch;
            r.achieved_gbps = static_cast<double>(step_bytes) * steps_per_s / 1e9;
            r.roofline = bw.read_gbps > 0 ? r.achieved_gbps / bw.read_gbps : 0.0;
        }
    }
    if (json) {
        print_json(rows, bandwidth ? &bw : nullptr, dir, p, n, reps, threads);
    } else {
        print_table(rows, bandwidth ? &bw : nullptr);
        print_profiles(rows);
    }
    return 0;
}

}  // namespace mnemo::cli
