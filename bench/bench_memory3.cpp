// mnemo-bench-memory3: what reading explicit memories costs a Memory3 model while it generates
// (issue 6's benchmark; the paper measured 733 vs 1131 tokens/s, 0.65x, and aims at ~0.2%
// compute overhead). For one model and backend it times, with the same prompt and the same
// generated tokens:
//   without  no memory source (the reference BOS alone is read: the model's plain cost)
//   with     an in-process memory folder, references_per_chunk memories per chunk_length-token
//            chunk (prompt chunks each retrieve; generation re-retrieves every chunk)
// and reports tokens/s of both, their ratio, and where the difference goes: retrieval, query
// vectors (a pass of the model over the chunk), block uploads (VQ decoding on the device for
// compressed folders), per memory read. Without --memories it first writes a folder of random
// references with the model itself (timed too: references/s of `mnemo memorize`).
// With --kb URL it times a third case, the same memories served by a knowledge server
// (`mnemo-kb serve`, loopback) through libmnemo's KbSource with its cache and prefetch, and
// reports the bytes fetched per chunk and the cache hit rate (issue 13).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "mnemo/error.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/kb/kb_source.hpp"
#include "mnemo/session/session.hpp"

namespace fs = std::filesystem;
using namespace mnemo;

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Options {
    std::string model, backend = "cpu", memories, write, kb, kb_token_file, kb_ca;
    int32_t device = 0, threads = 0, refs = 256, prompt = 64, gen = 256, reps = 3;
    bool json = false, profile = false;
};

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "mnemo-bench-memory3: %s\n"
                 "usage: mnemo-bench-memory3 -m MODEL_DIR [--backend NAME] [--device N] [-t THREADS]\n"
                 "         [--memories FOLDER | --refs N [--write FOLDER]] [-p PROMPT_TOKENS] [-n GEN_TOKENS] [-r REPS] [--json] [--profile]\n"
                 "         [--kb URL [--kb-token-file FILE] [--kb-ca CA]]   (the same memories from a knowledge server, too)\n",
                 why);
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(("missing value after " + a).c_str());
            return argv[++i];
        };
        if (a == "-m") o.model = value();
        else if (a == "--backend") o.backend = value();
        else if (a == "--device") o.device = std::stoi(value());
        else if (a == "-t") o.threads = std::stoi(value());
        else if (a == "--memories") o.memories = value();
        else if (a == "--write") o.write = value();
        else if (a == "--refs") o.refs = std::stoi(value());
        else if (a == "-p") o.prompt = std::stoi(value());
        else if (a == "-n") o.gen = std::stoi(value());
        else if (a == "-r") o.reps = std::stoi(value());
        else if (a == "--kb") o.kb = value();
        else if (a == "--kb-token-file") o.kb_token_file = value();
        else if (a == "--kb-ca") o.kb_ca = value();
        else if (a == "--json") o.json = true;
        else if (a == "--profile") o.profile = true;
        else usage(("unknown option " + a).c_str());
    }
    if (o.model.empty()) usage("-m MODEL_DIR is required");
    if (o.refs < 1 || o.prompt < 1 || o.gen < 2 || o.reps < 1) usage("counts must be positive");
    if (!o.kb.empty() && o.memories.empty()) usage("--kb needs --memories FOLDER: the folder of the memories the server serves");
    return o;
}

struct Run {
    double prompt_tps = 0, gen_tps = 0;
    MemoryStats stats;
};

// The prompt through append(), then greedy generation through decode() (what `mnemo run` does).
Run time_once(Session& s, const std::vector<int32_t>& prompt, int32_t gen) {
    s.reset_all();
    Run r;
    const double t0 = now();
    const std::vector<float>* logits = &s.append(0, prompt);
    const double t1 = now();
    const MemoryStats before = s.memory_stats();  // the counters cover generation only
    const size_t vocab = static_cast<size_t>(s.vocab_size());
    int32_t pos = static_cast<int32_t>(prompt.size());
    for (int32_t i = 0; i < gen; ++i) {
        const int32_t next = static_cast<int32_t>(std::max_element(logits->begin(), logits->begin() + static_cast<long>(vocab)) - logits->begin());
        logits = &s.decode({{next, pos++, 0, true}});
    }
    const double t2 = now();
    r.prompt_tps = static_cast<double>(prompt.size()) / (t1 - t0);
    r.gen_tps = gen / (t2 - t1);
    const MemoryStats& a = s.memory_stats();
    r.stats.retrievals = a.retrievals - before.retrievals;
    r.stats.memories_read = a.memories_read - before.memories_read;
    r.stats.block_uploads = a.block_uploads - before.block_uploads;
    r.stats.query_passes = a.query_passes - before.query_passes;
    r.stats.retrieve_ns = a.retrieve_ns - before.retrieve_ns;
    r.stats.query_ns = a.query_ns - before.query_ns;
    r.stats.upload_ns = a.upload_ns - before.upload_ns;
    r.stats.vectors_decoded = a.vectors_decoded - before.vectors_decoded;
    return r;
}

// Median run by generation speed.
Run median(std::vector<Run> runs) {
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.gen_tps < b.gen_tps; });
    return runs[runs.size() / 2];
}

}  // namespace

int main(int argc, char** argv) try {
    const Options o = parse(argc, argv);
    SessionOptions so;
    so.model_dir = o.model;
    so.backend = o.backend;
    so.device = o.device;
    so.n_threads = o.threads;
    so.n_ctx = o.prompt + o.gen + 8;
    so.profile = o.profile;
    auto s = Session::open(so);
    if (!s->reads_memories()) throw Error("model '" + o.model + "' does not read explicit memories");
    const MemorySpec& spec = s->memory_spec();
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> tok(3, s->vocab_size() - 1);

    std::string folder = o.memories;
    double write_rate = 0;
    fs::path tmp;
    if (folder.empty()) {
        std::vector<std::vector<int32_t>> refs(static_cast<size_t>(o.refs));
        std::vector<MemoryReference> meta;
        for (auto& r : refs) {
            r.resize(static_cast<size_t>(spec.reference_length));
            for (int32_t& t : r) t = tok(rng);
            meta.push_back({r, ""});
        }
        const double t0 = now();
        const auto written = s->write_memories(refs);
        write_rate = refs.size() / (now() - t0);
        if (o.profile) {
            std::fprintf(stderr, "writing %d references, time per op:\n", o.refs);
            for (const OpProfile& p : s->profile()) std::fprintf(stderr, "  %-16s %8.2f ms (%llu calls)\n", p.op.c_str(), p.total_ns / 1e6, static_cast<unsigned long long>(p.calls));
            s->clear_profile();
        }
        // --write keeps the folder (to compress it with mnemo-kb and bench that); else a temporary one.
        tmp = o.write.empty() ? fs::temp_directory_path() / ("mnemo-bench-memory3-" + std::to_string(::getpid())) : fs::path();
        folder = o.write.empty() ? tmp.string() : o.write;
        if (!tmp.empty()) fs::remove_all(tmp);
        write_memory_folder(folder, memory_folder_model(*s), written, meta, !o.write.empty());
    }
    // A new prompt for every run, so every run retrieves (and uploads) its own memories rather
    // than finding the previous run's still in the blocks.
    auto new_prompt = [&] {
        std::vector<int32_t> prompt(static_cast<size_t>(o.prompt));
        for (int32_t& t : prompt) t = tok(rng);
        return prompt;
    };

    // Runs alternate (without, with, without, ...) on the same prompts, so that drift in the
    // machine's speed (clock, other processes) falls on both sides alike.
    auto source = std::make_shared<FolderMemorySource>(
        folder, memory_folder_model(*s), RetrievalMode::Vector);
    std::shared_ptr<KbSource> kb_source;
    if (!o.kb.empty()) {
        KbSourceOptions ro;
        ro.url = o.kb;
        ro.ca_file = o.kb_ca;
        if (!o.kb_token_file.empty()) ro.token = read_kb_token(o.kb_token_file);
        ro.texts = false;  // a device that only decodes memories
        kb_source = connect_kb(ro, memory_folder_model(*s));
    }
    std::vector<Run> runs_without, runs_with, runs_kb;
    KbSourceStatus kb_before;
    for (int32_t i = -1; i < o.reps; ++i) {  // i = -1: warm-up (plans the graphs), not counted
        const std::vector<int32_t> prompt = new_prompt();
        s->set_memory_source(nullptr);
        const Run a = time_once(*s, prompt, o.gen);
        s->set_memory_source(source);
        const Run b = time_once(*s, prompt, o.gen);
        if (i >= 0) {
            runs_without.push_back(a);
            runs_with.push_back(b);
        }
        if (kb_source) {
            if (i == 0) kb_before = kb_source->status();  // the counters cover the measured runs
            s->set_memory_source(kb_source);
            const Run c = time_once(*s, prompt, o.gen);
            if (i >= 0) runs_kb.push_back(c);
        }
    }
    const Run without = median(runs_without);
    const Run with = median(runs_with);
    const bool compressed = source->codec() != nullptr;
    if (!tmp.empty()) fs::remove_all(tmp);

    const double ratio = with.gen_tps / without.gen_tps;
    // The memory work the session did itself during generation (retrieval, the query passes over
    // generated chunks, block uploads and on-device decoding), as a share of generation time and
    // per memory read. The longer attention of memory layers is inside the graph and shows only
    // in the measured ratio.
    const double gen_s = o.gen / with.gen_tps;
    const double work_s = (with.stats.retrieve_ns + with.stats.query_ns + with.stats.upload_ns) / 1e9;
    const double work_share = work_s / gen_s;
    const double per_memory_us = with.stats.memories_read ? work_s / static_cast<double>(with.stats.memories_read) * 1e6 : 0;
    const std::string device = s->summary().device_name;
    if (o.json) {
        std::printf(
            "{\"model\": \"%s\", \"backend\": \"%s\", \"device\": \"%s\", \"memories\": \"%s\", \"compressed\": %s, "
            "\"prompt_tokens\": %d, \"gen_tokens\": %d, \"chunk_length\": %d, \"references_per_chunk\": %d, "
            "\"write_refs_per_s\": %.2f, \"prompt_tps_without\": %.2f, \"prompt_tps_with\": %.2f, "
            "\"gen_tps_without\": %.2f, \"gen_tps_with\": %.2f, \"gen_ratio\": %.4f, \"retrievals\": %llu, "
            "\"memories_read\": %llu, \"block_uploads\": %llu, \"vectors_decoded\": %llu, \"retrieve_ms\": %.3f, "
            "\"query_ms\": %.3f, \"upload_ms\": %.3f, \"memory_work_share\": %.4f, \"memory_work_us_per_memory\": %.2f}\n",
            o.model.c_str(), o.backend.c_str(), device.c_str(), o.memories.empty() ? "random references" : o.memories.c_str(),
            compressed ? "true" : "false", o.prompt, o.gen, spec.chunk_length, spec.references_per_chunk, write_rate,
            without.prompt_tps, with.prompt_tps, without.gen_tps, with.gen_tps, ratio,
            static_cast<unsigned long long>(with.stats.retrievals), static_cast<unsigned long long>(with.stats.memories_read),
            static_cast<unsigned long long>(with.stats.block_uploads), static_cast<unsigned long long>(with.stats.vectors_decoded),
            with.stats.retrieve_ns / 1e6, with.stats.query_ns / 1e6, with.stats.upload_ns / 1e6, work_share, per_memory_us);
    } else {
        std::printf("model %s on %s (%s), %s memories, chunk %d, %d per chunk\n", o.model.c_str(), o.backend.c_str(), device.c_str(),
                    compressed ? "compressed" : "f32", spec.chunk_length, spec.references_per_chunk);
        if (write_rate > 0) std::printf("writing: %.1f references/s\n", write_rate);
        std::printf("| | prompt t/s | generation t/s |\n|---|--:|--:|\n| without memories | %.1f | %.1f |\n"
                    "| with memories | %.1f | %.1f |\n",
                    without.prompt_tps, without.gen_tps, with.prompt_tps, with.gen_tps);
        std::printf("generation with/without: %.3f\n", ratio);
        std::printf("generation (per run): %llu retrievals, %llu memories into %llu blocks; retrieval %.2f ms, query vectors %.2f ms "
                    "(%llu passes), uploads%s %.2f ms\nmemory work: %.1f%% of generation time, %.1f us per memory read\n",
                    static_cast<unsigned long long>(with.stats.retrievals), static_cast<unsigned long long>(with.stats.memories_read),
                    static_cast<unsigned long long>(with.stats.block_uploads), with.stats.retrieve_ns / 1e6, with.stats.query_ns / 1e6,
                    static_cast<unsigned long long>(with.stats.query_passes), compressed ? " (VQ decode included)" : "",
                    with.stats.upload_ns / 1e6, 100.0 * work_share, per_memory_us);
    }
    if (kb_source) {
        const Run kb = median(runs_kb);
        const KbSourceStatus st = kb_source->status().since(kb_before);
        const uint64_t chunks = st.retrievals;
        const uint64_t bytes = st.reply_bytes;
        const double hit_rate = st.cache_hits + st.cache_misses
                                    ? static_cast<double>(st.cache_hits) / static_cast<double>(st.cache_hits + st.cache_misses)
                                    : 0.0;
        const uint64_t failures = st.failures;
        if (o.json) {
            std::printf("{\"kb\": \"%s\", \"gen_tps_kb\": %.2f, \"prompt_tps_kb\": %.2f, \"gen_ratio_kb\": %.4f, "
                        "\"gen_ratio_kb_vs_folder\": %.4f, \"chunks\": %llu, \"bytes_per_chunk\": %.1f, \"cache_hit_rate\": %.4f, "
                        "\"prefetch_hits\": %llu, \"failures\": %llu, \"retrieve_ms\": %.3f}\n",
                        o.kb.c_str(), kb.gen_tps, kb.prompt_tps, kb.gen_tps / without.gen_tps, kb.gen_tps / with.gen_tps,
                        static_cast<unsigned long long>(chunks), chunks ? static_cast<double>(bytes) / static_cast<double>(chunks) : 0.0,
                        hit_rate, static_cast<unsigned long long>(st.prefetch_hits),
                        static_cast<unsigned long long>(failures), kb.stats.retrieve_ns / 1e6);
        } else {
            std::printf("| from %s | %.1f | %.1f |\n", o.kb.c_str(), kb.prompt_tps, kb.gen_tps);
            std::printf("generation kb/without: %.3f, kb/folder: %.3f; %llu chunks, %.1f KiB fetched per chunk, cache hit rate %.1f%%, "
                        "%llu prefetch hits, %llu failed chunks; retrieval (waiting on the network) %.2f ms per run\n",
                        kb.gen_tps / without.gen_tps, kb.gen_tps / with.gen_tps, static_cast<unsigned long long>(chunks),
                        chunks ? static_cast<double>(bytes) / static_cast<double>(chunks) / 1024.0 : 0.0, 100.0 * hit_rate,
                        static_cast<unsigned long long>(st.prefetch_hits),
                        static_cast<unsigned long long>(failures), kb.stats.retrieve_ns / 1e6);
        }
    }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "mnemo-bench-memory3: %s\n", e.what());
    return 1;
}
