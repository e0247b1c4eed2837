// `mnemo eval`: score a model (with or without explicit memories) on a JSONL file of questions
// and expected answers. Every item is generated greedily in a fresh sequence, exactly as
// `mnemo run --greedy` would generate it, and scored by exact and contains match
// (eval_scoring.hpp). Bad input is found before the model runs, and reports are written whole
// at the end, so a failed run leaves no report behind.
#include <unistd.h>

#include <cstdio>
#include <optional>

#include "app/chat_cache.hpp"
#include "app/generate.hpp"
#include "app/grounding.hpp"
#include "eval/eval_conversation.hpp"
#include "app/measure.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "eval/eval_items.hpp"
#include "eval/eval_report.hpp"
#include "eval/eval_scoring.hpp"
#include "eval/question_format.hpp"
#include "app/prompt_tokens.hpp"
#include "memory/memory_flags.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/atomic_file.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::cli {

namespace {

// Only question items have stop strings: a newline, or the chat template's end-of-turn marker.
const char* stop_name(app::StopReason r) {
    switch (r) {
        case app::StopReason::Eos: return "eos";
        case app::StopReason::StopString: return "newline";
        case app::StopReason::Limit: return "limit";
        case app::StopReason::ContextFull: return "context";
        case app::StopReason::Cancelled: return "cancelled";
        case app::StopReason::QuoteEnded: return "quote_end";
    }
    return "unknown";
}

}  // namespace

int cmd_eval(int argc, char** argv) {
    ModelFlags model;
    MemoryFlags memories;
    std::string questions, report_path, items_path;
    int32_t max_tokens = 32;
    int32_t limit = 0;
    bool quiet = false;
    bool grounded = false;
    std::string history_feed = "turns";

    app::ArgParser p("eval", "mnemo eval [-m DIR] --questions FILE.jsonl [options]",
                     "Score the model on questions with known answers: each item is generated greedily and scored by "
                     "exact and contains match.\nThe table goes to stdout, progress to stderr.");
    add_model_flags(p, model);
    p.string_opt("--questions", "FILE", "JSONL, one item a line: {\"question\", \"answer\"} or {\"prompt\", \"completion\"}, "
                                        "optional \"id\", \"set\", \"answers\" (required)",
                 &questions)
        .int_opt("--max-tokens", "N", "tokens to generate per item at most (default: 32)", &max_tokens, 1, 1 << 20)
        .int_opt("--limit", "N", "evaluate only the first N items; 0 = all (default: 0)", &limit, 0, 1 << 30)
        .string_opt("--report", "FILE", "write the JSON report here (written whole at the end)", &report_path)
        .string_opt("--items", "FILE", "write one JSON line per item here: output, scores, memories read", &items_path)
        .string_opt("--history-feed", "HOW", "how items' \"history\" turns are fed: turns (as mnemo chat feeds them, the default), "
                    "whole (the conversation as one prompt, its turns retrieval segments), chunks (one prompt in plain "
                    "64-token chunks that mix turns: what chats did before; for measuring the retrieval rule)", &history_feed)
        .flag("--quiet", "no progress lines on stderr", &quiet);
    add_grounded_flag(p, &grounded);
    add_memory_flags(p, memories);
    if (!p.parse(argc, argv, 2)) return 0;
    check_kb_flags(memories);  // a bad --kb list is said before the model loads
    if (questions.empty()) throw app::UsageError("missing --questions FILE.jsonl");
    check_grounded_flag(memories, grounded);
    HistoryFeed feed = HistoryFeed::Turns;
    if (history_feed == "whole") feed = HistoryFeed::Whole;
    else if (history_feed == "chunks") feed = HistoryFeed::Chunks;
    else if (history_feed != "turns") throw app::UsageError("--history-feed: expected turns, whole or chunks, got '" + history_feed + "'");

    // Everything that can be wrong with the input is found before the model loads.
    std::vector<EvalItem> items = read_eval_items(questions);
    if (limit > 0 && static_cast<size_t>(limit) < items.size()) items.resize(static_cast<size_t>(limit));
    if (!report_path.empty()) check_writable(report_path, "--report");
    if (!items_path.empty()) check_writable(items_path, "--items");

    const std::string dir = resolve_model_dir(model);
    const auto tok = open_tokenizer(dir);
    const QuestionFormat format = question_format(dir);
    const auto session = open_session(session_options(model, dir));
    const AttachedMemories attached = attach_memories(*session, memories);
    const std::shared_ptr<RetrievalRecorder> recorder = record_retrieval(*session, attached);

    std::vector<std::vector<int32_t>> prompts;
    prompts.reserve(items.size());
    for (const EvalItem& item : items) {
        if (!item.history.empty()) {  // a conversation: rendered turn by turn as it runs
            if (!format.templated)
                throw Error(questions + ": line " + std::to_string(item.line) + ": field \"history\" needs a model with a chat "
                            "template; " + dir + " has none (questions are asked as plain text)");
            prompts.emplace_back();
            continue;
        }
        const std::string text = item.is_question ? format.prompt(item.text) : item.text;
        prompts.push_back(app::prompt_tokens(*tok, text, /*add_bos=*/true, /*parse_special=*/true));
        const std::string where = questions + ": line " + std::to_string(item.line);
        if (prompts.back().empty()) throw Error(where + ": the prompt is empty after tokenization");
        app::check_room_to_generate(prompts.back().size(), session->n_ctx(), where + ": the prompt");
    }

    install_interrupt_handler();
    session->set_cancel_flag(&interrupt_flag());
    if (!quiet) {
        std::fprintf(stderr, "mnemo eval: %zu items, %s on %s, questions as %s, memories: %s\n", items.size(),
                     session->summary().model_type.c_str(), model.backend.c_str(), format.name().c_str(),
                     attached ? printable(attached.source->describe()).c_str() : "none");
    }

    SamplingParams greedy;
    greedy.temperature = 0.0f;  // the most likely token: the same output on every run
    Sampler sampler(greedy);
    // --grounded: a question's answer ends at its stop strings, a completion at end-of-sequence only.
    std::optional<app::AnswerGrounding> grounding_question, grounding_completion;
    if (grounded) {
        const int32_t vocab = app::sampled_vocab(*session, *tok);
        grounding_question.emplace(*tok, vocab, format.stops());
        grounding_completion.emplace(*tok, vocab, std::vector<std::string>{});
    }
    std::vector<EvalOutcome> outcomes;
    outcomes.reserve(items.size());
    double generation_seconds = 0;
    const bool progress_in_place = isatty(STDERR_FILENO);
    const double t0 = app::now_seconds();
    app::ChatCache conversation(*session);  // items with a history
    for (size_t i = 0; i < items.size(); ++i) {
        const EvalItem& item = items[i];
        session->reset(0);  // every item starts from an empty sequence, as a fresh `mnemo run` would
        std::vector<int32_t> fed = prompts[i];
        app::GenerateRequest req(*session, *tok, sampler, fed, &interrupt_flag());
        req.max_tokens = max_tokens;
        if (item.is_question) req.stop_strings = format.stops();
        app::GenerateResult r;
        try {
            if (item.history.empty()) {
                req.first_logits = session->append(0, prompts[i]).data();
            } else {
                req.first_logits = feed_conversation(*session, *tok, format.tmpl, conversation, item, recorder.get(),
                                                     questions + ": line " + std::to_string(item.line), feed);
                fed = conversation.fed();
            }
            if (grounded) {  // what this item's prompt read, before its answer is generated
                app::AnswerGrounding& g = item.is_question ? *grounding_question : *grounding_completion;
                g.set_references(app::reference_texts(recorder->peek(0)), item.text);
                req.grounding = &g;
            }
            r = app::generate(req);
        } catch (const Cancelled&) {
            r.reason = app::StopReason::Cancelled;
        }
        if (r.reason == app::StopReason::Cancelled) {
            std::fprintf(stderr, "\nmnemo: interrupted at item %zu of %zu; no report written\n", i + 1, items.size());
            return 130;
        }
        generation_seconds += r.seconds;
        EvalOutcome o;
        o.item = &item;
        o.output = r.text;
        o.score = score_output(r.text, item.expected);
        o.stop = stop_name(r.reason);
        o.prompt_tokens = static_cast<int32_t>(item.history.empty() ? prompts[i].size() : conversation.fed().size());
        o.generated_tokens = r.n_generated;
        if (recorder) o.references = distinct_references(recorder->take(0));
        outcomes.push_back(std::move(o));
        if (!quiet) {
            std::fprintf(stderr, progress_in_place ? "\ritem %zu/%zu" : "item %zu/%zu\n", i + 1, items.size());
            std::fflush(stderr);
        }
    }
    if (!quiet && progress_in_place) std::fputc('\n', stderr);
    // Conversations must reuse their cache turn after turn, as `mnemo chat` does; a restart means
    // an answer rendered differently from how it was fed (the chat would pay a full re-prompt).
    if (conversation.restarts() > 0)
        std::fprintf(stderr, "mnemo eval: %lld conversation turns re-fed the whole conversation (the chat template renders an "
                             "answer differently from its tokens)\n", static_cast<long long>(conversation.restarts()));

    EvalRun run;
    run.questions = questions;
    run.model_dir = dir;
    run.model_type = session->summary().model_type;
    run.backend = session->summary().backend.empty() ? model.backend : session->summary().backend;
    run.prompt_format = format.name();
    run.memory_kind = attached.kb ? "kb" : attached ? "folder" : "none";
    run.memory_location = attached.kb ? kb_location(memories) : memories.folder;
    run.retrieval = attached.retrieval;  // empty without memories
    run.min_relative_score = attached.min_relative_score;
    run.min_references = attached.min_references;
    run.grounded = grounded;
    run.max_tokens = max_tokens;
    run.seconds = app::now_seconds() - t0;
    run.generation_seconds = generation_seconds;

    // The files first: a report that cannot be written is an error, and the table says it all worked.
    if (!report_path.empty()) write_file_atomically(report_path, eval_report_json(run, outcomes));
    if (!items_path.empty()) write_file_atomically(items_path, eval_items_jsonl(outcomes));
    const std::string table = eval_table(outcomes);
    std::fwrite(table.data(), 1, table.size(), stdout);
    if (!quiet && attached.kb) std::fprintf(stderr, "%s\n", kb_summary(attached.kb->status()).c_str());
    return 0;
}

}  // namespace mnemo::cli
