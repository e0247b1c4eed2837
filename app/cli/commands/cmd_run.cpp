// `mnemo run`: complete a prompt, streaming the text to stdout as it is generated.
#include <unistd.h>

#include <cstdio>

#include "app/generate.hpp"
#include "app/measure.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "app/prompt_tokens.hpp"
#include "generation/sampling_flags.hpp"
#include "memory/memory_flags.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::cli {

int cmd_run(int argc, char** argv) {
    ModelFlags model;
    SamplingFlags sampling;
    std::string prompt;
    bool prompt_given = false;
    int32_t n_predict = 128;
    bool no_bos = false;
    bool raw = false;
    MemoryFlags memories;

    app::ArgParser p("run", "mnemo run [-m DIR] -p TEXT [options]",
                     "Complete TEXT with the model and stream the result to stdout; timings go to stderr.");
    add_model_flags(p, model);
    p.custom_opt("-p,--prompt", "TEXT", "prompt text (required)", [&](const std::string& v) {
         prompt = v;
         prompt_given = true;
     })
        .int_opt("-n,--n-predict", "N", "tokens to generate at most; -1 = until the context is full (default: 128)",
                 &n_predict, -1, 1 << 30);
    add_sampling_flags(p, sampling);
    add_memory_flags(p, memories);
    p.flag("--no-bos", "do not prepend the BOS token even when the tokenizer asks for it", &no_bos)
        .flag("--raw", "treat special-token text in the prompt (\"<|eot_id|>\") as plain text", &raw);
    if (!p.parse(argc, argv, 2)) return 0;
    check_kb_flags(memories);  // a bad --kb list is said before the model loads
    if (!prompt_given) throw app::UsageError("missing -p/--prompt TEXT");

    const std::string dir = resolve_model_dir(model);
    const auto tok = open_tokenizer(dir);
    const auto session = open_session(session_options(model, dir));
    const auto source = attach_memories(*session, memories);

    const std::vector<int32_t> ids = app::prompt_tokens(*tok, prompt, /*add_bos=*/!no_bos, /*parse_special=*/!raw);
    if (ids.empty()) throw app::UsageError("the prompt is empty after tokenization (and no BOS token is added)");
    app::check_room_to_generate(ids.size(), session->n_ctx(), "prompt");

    install_interrupt_handler();
    session->set_cancel_flag(&interrupt_flag());

    const double t0 = app::now_seconds();
    const float* logits = nullptr;
    try {
        logits = session->append(0, ids).data();
    } catch (const Cancelled&) {
        std::fprintf(stderr, "\nmnemo: interrupted while reading the prompt\n");
        return 130;
    }
    const double prompt_seconds = app::now_seconds() - t0;

    Sampler sampler(sampling.resolved());
    std::vector<int32_t> fed = ids;
    app::GenerateRequest req(*session, *tok, sampler, fed, &interrupt_flag());
    req.first_logits = logits;
    req.stop_strings = sampling.stops;
    req.max_tokens = n_predict;
    req.emit = [](const std::string& piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
    };
    const app::GenerateResult r = app::generate(req);
    if (isatty(STDOUT_FILENO)) std::fputc('\n', stdout);
    std::fflush(stdout);

    if (r.reason == app::StopReason::ContextFull) {
        std::fprintf(stderr, "mnemo: the context is full (%d tokens, -c); generation stopped\n", session->n_ctx());
    } else if (r.reason == app::StopReason::Cancelled) {
        std::fprintf(stderr, "mnemo: interrupted\n");
    }
    const double pp_rate = prompt_seconds > 0 ? static_cast<double>(ids.size()) / prompt_seconds : 0.0;
    const double tg_rate = r.seconds > 0 ? r.n_generated / r.seconds : 0.0;
    std::fprintf(stderr, "prompt: %zu tokens, %.1f tok/s | generation: %d tokens, %.1f tok/s\n", ids.size(),
                 pp_rate, r.n_generated, tg_rate);
    if (source) {
        const MemoryStats& ms = session->memory_stats();
        std::fprintf(stderr, "memories: %s | %llu retrievals, %llu memories loaded into %llu blocks (retrieval %.1f ms, "
                             "query vectors %.1f ms, uploads %.1f ms)\n",
                     printable(source.source->describe()).c_str(), static_cast<unsigned long long>(ms.retrievals),
                     static_cast<unsigned long long>(ms.memories_read), static_cast<unsigned long long>(ms.block_uploads),
                     ms.retrieve_ns / 1e6, ms.query_ns / 1e6, ms.upload_ns / 1e6);
        if (source.kb) std::fprintf(stderr, "%s\n", kb_summary(source.kb->status()).c_str());
    }
    return r.reason == app::StopReason::Cancelled ? 130 : 0;
}

}  // namespace mnemo::cli
