// `mnemo perplexity`: the perplexity of a model on a text, chunked as llama.cpp's perplexity tool
// chunks it so the numbers compare: the text is tokenized whole (BOS first when the tokenizer adds
// one), cut into chunks of n_ctx tokens, each chunk is run in a fresh sequence with its first
// token replaced by BOS, and only the second half of each chunk is scored (positions n_ctx/2 ..
// n_ctx-2 predicting the next token), so every scored token has at least n_ctx/2 tokens of context.
// With --save-base the log-probabilities of those positions go to a base file
// (eval/logit_base_file.hpp); with --kl-base a quantized model is compared with such a file:
// KL divergence, top-1 agreement, RMS change in the next token's probability (eval/perplexity_stats.hpp).
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <optional>

#include "app/json_writer.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "eval/logit_base_file.hpp"
#include "eval/perplexity_stats.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"

namespace mnemo::cli {

namespace {

// The smallest chunk whose second half holds a scored position: first = n_ctx/2 <= n_ctx - 2.
constexpr int32_t kMinCtx = 4;

struct Flags {
    ModelFlags model;
    std::string text_path, save_base, kl_base;
    int32_t chunks = 0;
    bool json = false;
};

void print_text(const PerplexityStats& ppl, const std::optional<KlSummary>& kl) {
    std::printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl.ppl(), ppl.ppl_error());
    if (!kl) return;
    std::printf("\n====== Perplexity statistics ======\n");
    std::printf("Mean PPL(model): %12.6f\n", ppl.ppl());
    std::printf("Mean PPL(base) : %12.6f\n", kl->base_ppl);
    std::printf("\n====== KL divergence statistics ======\n");
    std::printf("Mean    KLD: %10.6f ± %10.6f\n", kl->mean, kl->mean_error);
    std::printf("Maximum KLD: %10.6f\n", kl->max);
    std::printf("99.0%%   KLD: %10.6f\n", kl->p99);
    std::printf("Median  KLD: %10.6f\n", kl->median);
    std::printf("\n====== Token probability statistics ======\n");
    std::printf("RMS Δp    : %7.3f ± %6.3f %%\n", kl->rms_dp_pct, kl->rms_dp_error_pct);
    std::printf("Same top p: %7.3f ± %6.3f %%\n", kl->same_top_pct, kl->same_top_error_pct);
}

void print_json(const Flags& f, const std::string& model_dir, const LogitBaseHeader& run, const PerplexityStats& ppl,
                const std::optional<KlSummary>& kl) {
    app::JsonWriter w;
    w.begin_object();
    w.key("model").value(model_dir).key("text").value(f.text_path);
    w.key("n_ctx").value(int64_t{run.n_ctx}).key("chunks").value(int64_t{run.n_chunks});
    w.key("tokens_scored").value(ppl.count());
    w.key("mean_nll").value(ppl.mean_nll()).key("ppl").value(ppl.ppl()).key("ppl_error").value(ppl.ppl_error());
    if (!f.save_base.empty()) w.key("saved_base").value(f.save_base);
    if (kl) {
        w.key("kl_base").value(f.kl_base);
        w.key("kl").begin_object();
        w.key("base_ppl").value(kl->base_ppl);
        w.key("mean").value(kl->mean).key("mean_error").value(kl->mean_error);
        w.key("median").value(kl->median).key("p99").value(kl->p99).key("max").value(kl->max);
        w.key("same_top_pct").value(kl->same_top_pct).key("same_top_error_pct").value(kl->same_top_error_pct);
        w.key("rms_dp_pct").value(kl->rms_dp_pct).key("rms_dp_error_pct").value(kl->rms_dp_error_pct);
        w.end_object();
    }
    w.end_object();
    std::printf("%s\n", w.str().c_str());
}

}  // namespace

int cmd_perplexity(int argc, char** argv) {
    Flags f;
    app::ArgParser p("perplexity", "mnemo perplexity [-m DIR|FILE] -f TEXT [-c N] [options]",
                     "Perplexity of the model on a text, chunked as llama-perplexity does: chunks of n_ctx (-c) tokens,\n"
                     "BOS first, the second half of each chunk scored. Running values go to stderr, the result to stdout.\n"
                     "--save-base writes the log-probabilities of the scored positions to a file; --kl-base compares\n"
                     "this model with such a file (KL divergence, top-1 agreement, RMS delta p).");
    add_model_flags(p, f.model);
    p.string_opt("-f,--file", "TEXT", "the text file to score (required)", &f.text_path)
        .int_opt("--chunks", "N", "score at most the first N chunks; 0 = all (default: 0)", &f.chunks, 0, 1 << 24)
        .string_opt("--save-base", "FILE", "write this model's log-probabilities of the scored positions here", &f.save_base)
        .string_opt("--kl-base", "FILE", "compare with the base file written by --save-base (same text, -c, --chunks)",
                    &f.kl_base)
        .flag("--json", "print the result as one JSON object on stdout", &f.json);
    if (!p.parse(argc, argv, 2)) return 0;
    if (f.text_path.empty()) throw app::UsageError("missing -f TEXT (the text file to score)");
    if (!f.save_base.empty() && !f.kl_base.empty())
        throw app::UsageError("--save-base and --kl-base exclude each other (write the base with the base model first)");
    if (p.given("-c") && f.model.ctx < kMinCtx)
        throw app::UsageError("-c " + std::to_string(f.model.ctx) + " is too small: a chunk needs at least " +
                              std::to_string(kMinCtx) + " tokens to score its second half");

    // Input errors before the model loads.
    const std::string text = read_file_capped(f.text_path, kMaxDocumentFileBytes, "text file");
    if (text.empty()) throw Error("text file '" + f.text_path + "' is empty: nothing to score");
    std::unique_ptr<LogitBaseReader> base;
    if (!f.kl_base.empty()) base = std::make_unique<LogitBaseReader>(f.kl_base);

    const std::string dir = resolve_model_dir(f.model);
    const auto tok = open_tokenizer(dir);
    std::vector<int32_t> tokens;
    const bool add_bos = tok->add_bos && tok->bos_id.has_value();
    if (add_bos) tokens.push_back(*tok->bos_id);
    for (const int32_t id : tok->encode(text, /*parse_special=*/false)) tokens.push_back(id);

    const auto session = open_session(session_options(f.model, dir));
    const int32_t n_ctx = session->n_ctx();
    const int32_t vocab = session->vocab_size();
    if (n_ctx < kMinCtx) throw Error("the context is " + std::to_string(n_ctx) + " tokens; perplexity needs at least " + std::to_string(kMinCtx));
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || tokens[i] >= vocab)
            throw Error("the tokenizer gave id " + std::to_string(tokens[i]) + " at token " + std::to_string(i) +
                        ", outside the model's vocabulary of " + std::to_string(vocab));
    const int64_t available = static_cast<int64_t>(tokens.size()) / n_ctx;
    if (available < 1)
        throw Error("text file '" + f.text_path + "' has " + std::to_string(tokens.size()) + " tokens; -c " +
                    std::to_string(n_ctx) + " needs at least " + std::to_string(n_ctx) +
                    " (one chunk, whose second half is scored): give a longer text or a smaller -c");
    const int32_t n_chunks = static_cast<int32_t>(f.chunks > 0 ? std::min<int64_t>(f.chunks, available) : available);

    // Each chunk as it is run: its first token is BOS (when the tokenizer adds one), as llama.cpp does.
    auto chunk_ids = [&](int32_t c) {
        std::vector<int32_t> ids(tokens.begin() + int64_t{c} * n_ctx, tokens.begin() + int64_t{c + 1} * n_ctx);
        if (add_bos) ids[0] = *tok->bos_id;
        return ids;
    };
    LogitBaseHeader run;
    run.vocab = static_cast<uint32_t>(vocab);
    run.n_ctx = static_cast<uint32_t>(n_ctx);
    run.first = static_cast<uint32_t>(n_ctx / 2);
    run.n_chunks = static_cast<uint32_t>(n_chunks);
    run.rows_per_chunk = run.n_ctx - 1 - run.first;
    run.n_tokens = uint64_t{run.n_chunks} * run.n_ctx;
    std::vector<int32_t> evaluated;
    for (int32_t c = 0; c < n_chunks; ++c) {
        const auto ids = chunk_ids(c);
        evaluated.insert(evaluated.end(), ids.begin(), ids.end());
    }
    run.tokens_hash = hash_token_ids(evaluated);
    if (base) check_logit_base_matches(base->header(), run, f.kl_base);
    std::unique_ptr<LogitBaseWriter> writer;
    if (!f.save_base.empty()) writer = std::make_unique<LogitBaseWriter>(f.save_base, run);

    install_interrupt_handler();
    session->set_cancel_flag(&interrupt_flag());
    std::fprintf(stderr, "perplexity: %zu tokens, %d chunks of %d, scoring %u positions per chunk\n", tokens.size(),
                 n_chunks, n_ctx, run.rows_per_chunk);
    PerplexityStats ppl;
    KlStats kl;
    std::vector<double> lp, base_lp;
    for (int32_t c = 0; c < n_chunks; ++c) {
        const auto ids = chunk_ids(c);
        session->reset(0);
        const std::vector<float>& logits = session->append(0, ids, /*all_logits=*/true);
        if (logits.size() != static_cast<size_t>(n_ctx) * static_cast<size_t>(vocab))
            throw Error("the session returned " + std::to_string(logits.size()) + " logits for a chunk, expected " +
                        std::to_string(n_ctx) + " x " + std::to_string(vocab));
        for (int32_t j = static_cast<int32_t>(run.first); j < n_ctx - 1; ++j) {
            log_softmax(logits.data() + static_cast<size_t>(j) * static_cast<size_t>(vocab), vocab, lp);
            const int32_t next = ids[static_cast<size_t>(j) + 1];
            ppl.add(-lp[static_cast<size_t>(next)]);
            if (writer) writer->write_row(lp);
            if (base) {
                base->read_row(base_lp);
                kl.add(base_lp, lp, next);
            }
        }
        std::fprintf(stderr, "[%d]%.4f,", c + 1, ppl.ppl());
        std::fflush(stderr);
    }
    std::fprintf(stderr, "\n");
    if (writer) {
        writer->finish();
        std::fprintf(stderr, "wrote base file %s (%d chunks x %u positions x %d tokens)\n", f.save_base.c_str(),
                     n_chunks, run.rows_per_chunk, vocab);
    }
    std::optional<KlSummary> summary;
    if (base) summary = kl.summary();
    if (f.json) print_json(f, dir, run, ppl, summary);
    else print_text(ppl, summary);
    return 0;
}

}  // namespace mnemo::cli
