// `mnemo ask`: put one question to the model the way `mnemo eval` does (through its chat template,
// greedy, a short answer), print the answer, and say which explicit memories it read: the
// quickest way to see a memory model answer from a knowledge server or a memory folder.
#include <cstdio>
#include <optional>

#include "app/generate.hpp"
#include "app/grounding.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "eval/question_format.hpp"
#include "app/prompt_tokens.hpp"
#include "generation/sampling_flags.hpp"
#include "memory/memory_flags.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::cli {

int cmd_ask(int argc, char** argv) {
    ModelFlags model;
    MemoryFlags memories;
    std::string question;
    int32_t max_tokens = 32;
    bool grounded = false;

    app::ArgParser p("ask", "mnemo ask [-m DIR] [--kb URL... | --memories FOLDER] -q QUESTION",
                     "Ask the model one question (its chat template, greedy decoding, the answer ends at a\n"
                     "newline) and print the answer, then the references whose memories it read.");
    add_model_flags(p, model);
    add_memory_flags(p, memories);
    p.int_opt("-n,--max-tokens", "N", "tokens the answer may have at most (default: 32)", &max_tokens, 1, 4096)
        .string_opt("-q,--question", "TEXT", "the question (required)", &question);
    add_grounded_flag(p, &grounded);
    if (!p.parse(argc, argv, 2)) return 0;
    check_kb_flags(memories);  // a bad --kb list is said before the model loads
    if (question.empty()) throw app::UsageError("missing -q/--question TEXT");
    check_grounded_flag(memories, grounded);

    const std::string dir = resolve_model_dir(model);
    const auto tok = open_tokenizer(dir);
    const auto session = open_session(session_options(model, dir));
    const AttachedMemories attached = attach_memories(*session, memories);
    const std::shared_ptr<RetrievalRecorder> recorder = record_retrieval(*session, attached);
    const QuestionFormat format = question_format(dir);
    const std::vector<int32_t> ids = app::prompt_tokens(*tok, format.prompt(question), /*add_bos=*/true, /*parse_special=*/true);
    app::check_room_to_generate(ids.size(), session->n_ctx(), "question");

    install_interrupt_handler();
    session->set_cancel_flag(&interrupt_flag());
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    Sampler sampler(greedy);
    std::vector<int32_t> fed = ids;
    app::GenerateRequest req(*session, *tok, sampler, fed, &interrupt_flag());
    req.max_tokens = max_tokens;
    req.stop_strings = format.stops();
    std::optional<app::AnswerGrounding> grounding;
    app::GenerateResult r;
    try {
        req.first_logits = session->append(0, ids).data();
        if (grounded) {  // quotes of what the question read
            grounding.emplace(*tok, app::sampled_vocab(*session, *tok), format.stops());
            grounding->set_references(app::reference_texts(recorder->peek(0)), question);
            req.grounding = &*grounding;
        }
        r = app::generate(req);
    } catch (const Cancelled&) {
        r.reason = app::StopReason::Cancelled;
    }
    if (r.reason == app::StopReason::Cancelled) {
        std::fprintf(stderr, "mnemo: interrupted\n");
        return 130;
    }
    const size_t first = r.text.find_first_not_of(" \n");
    const std::string answer =
        first == std::string::npos ? std::string() : r.text.substr(first, r.text.find_last_not_of(" \n") - first + 1);
    // The answer is the model's output, printed as `mnemo run` streams it; titles and sources come
    // from the knowledge server and are escaped (mnemo/io/printable.hpp).
    std::printf("Q: %s\nA: %s\n", printable(question).c_str(), answer.c_str());
    if (recorder) {
        const std::vector<RetrievedReference> read = distinct_references(recorder->take(0));
        std::printf("references read (%zu, from %s):\n", read.size(), printable(attached.source->describe()).c_str());
        for (const RetrievedReference& u : read) {
            // "  #12 Title  (source)  [doc e0 v3]": the document and the bank version that added
            // its text, so a corrected document shows which text the answer read.
            std::string doc;
            if (!u.doc_id.empty())
                doc = "  [doc " + printable(u.doc_id) + (u.doc_version ? " v" + std::to_string(u.doc_version) : std::string()) + "]";
            if (u.title.empty()) std::printf("  #%u%s\n", u.id, doc.c_str());
            else std::printf("  #%u %s%s%s%s\n", u.id, printable(u.title).c_str(), u.source.empty() ? "" : "  (",
                             u.source.empty() ? "" : (printable(u.source) + ")").c_str(), doc.c_str());
            // A piece of a longer document: the title alone does not say what was read.
            if (!u.text.empty() && u.text != u.title) std::printf("      %s\n", printable(u.text, 200).c_str());
        }
    } else {
        std::printf("(no explicit memories: the answer comes from the model's weights alone)\n");
    }
    if (attached.kb) std::fprintf(stderr, "%s\n", kb_summary(attached.kb->status()).c_str());
    return 0;
}

}  // namespace mnemo::cli
