// `mnemo chat`: an interactive conversation. The conversation lives in the session's KV cache:
// each turn re-renders the whole conversation with the chat template, tokenizes it, and feeds
// only the tokens after what the cache already holds (app::ChatCache; answers are kept as they
// continue the conversation, GenerateResult::history_text, so the past renders as it was fed).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "app/chat_cache.hpp"
#include "app/generate.hpp"
#include "app/grounding.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "generation/sampling_flags.hpp"
#include "memory/memory_flags.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::cli {

namespace {

enum class ReadResult { Line, TooLong, Eof, Interrupted };

// One line from stdin without the newline, of at most max_bytes: a longer one is read to its end
// and dropped (TooLong), so a multi-gigabyte line with no newline (a file piped in by mistake)
// costs max_bytes of memory, not all of it. fgets() is used (not iostreams) so a Ctrl-C at the
// prompt interrupts the read (EINTR) and the program can leave cleanly.
ReadResult read_line(std::string& out, size_t max_bytes) {
    out.clear();
    bool too_long = false, got_any = false;
    char buf[1 << 16];
    while (true) {
        errno = 0;
        if (std::fgets(buf, sizeof(buf), stdin) == nullptr) {
            const int err = errno;
            const bool interrupted = (std::ferror(stdin) && err == EINTR) || interrupt_flag().load();
            clearerr(stdin);
            if (interrupted) return ReadResult::Interrupted;
            if (!got_any) return ReadResult::Eof;
            break;  // a last line without a newline
        }
        got_any = true;
        const size_t n = std::strlen(buf);
        const bool line_end = n > 0 && buf[n - 1] == '\n';
        if (!too_long) {
            if (out.size() + n > max_bytes + 2) {  // (+2: the newline and a CR are not content)
                too_long = true;
                out.clear();
                out.shrink_to_fit();
            } else {
                out.append(buf, n);
            }
        }
        if (line_end) break;
    }
    if (too_long) return ReadResult::TooLong;
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return ReadResult::Line;
}

class Conversation {
public:
    Conversation(Session& s, const Tokenizer& tok, const ChatTemplate& tmpl, std::string system)
        : cache_(s), tok_(tok), tmpl_(tmpl), system_(std::move(system)) {
        reset();
    }

    void reset() {
        messages_.clear();
        if (!system_.empty()) messages_.push_back({"system", system_});
        cache_.reset();
    }

    std::vector<ChatMessage>& messages() { return messages_; }
    std::vector<int32_t>& fed() { return cache_.fed(); }

    // The whole conversation rendered with the assistant header at the end.
    app::RenderedChat render() const { return app::render_chat(tmpl_, tok_, messages_); }
    // Bring the cache up to `target`; returns the logits of its last token. Throws Cancelled.
    const float* sync(const app::RenderedChat& target) { return cache_.sync(target); }
    void check_consistent() { cache_.check_consistent(); }

private:
    app::ChatCache cache_;
    const Tokenizer& tok_;
    const ChatTemplate& tmpl_;
    std::string system_;
    std::vector<ChatMessage> messages_;
};

}  // namespace

int cmd_chat(int argc, char** argv) {
    ModelFlags model;
    SamplingFlags sampling;
    MemoryFlags memories;
    std::string system;
    int32_t n_predict = -1;
    bool grounded = false;

    app::ArgParser p("chat", "mnemo chat [-m DIR] [--system TEXT] [options]",
                     "Chat with the model on stdin/stdout. Commands: /reset clears the conversation, /quit exits.\n"
                     "Ctrl-C stops the current answer; at the prompt, Ctrl-C or Ctrl-D exits.");
    add_model_flags(p, model);
    p.string_opt("--system", "TEXT", "system message at the start of the conversation", &system)
        .int_opt("-n,--n-predict", "N", "tokens per answer at most; -1 = until the context is full (default)",
                 &n_predict, -1, 1 << 30);
    add_grounded_flag(p, &grounded);
    add_sampling_flags(p, sampling);
    add_memory_flags(p, memories);
    if (!p.parse(argc, argv, 2)) return 0;
    check_kb_flags(memories);  // a bad --kb list is said before the model loads
    check_grounded_flag(memories, grounded);

    const std::string dir = resolve_model_dir(model);
    const auto tok = open_tokenizer(dir);
    std::string note;
    const ChatTemplate tmpl = detect_chat_template(dir, &note);
    if (!note.empty()) std::fprintf(stderr, "mnemo: %s\n", printable(note).c_str());
    const auto session = open_session(session_options(model, dir));
    const AttachedMemories source = attach_memories(*session, memories);  // every user turn is a prompt: its chunks retrieve
    // --grounded: what each turn's prompt retrieved is noted, and its answer quotes it.
    const std::shared_ptr<RetrievalRecorder> recorder = grounded ? record_retrieval(*session, source) : nullptr;

    std::vector<std::string> stops = tmpl.stop_strings;
    stops.insert(stops.end(), sampling.stops.begin(), sampling.stops.end());

    install_interrupt_handler();
    std::atomic<bool>& interrupted = interrupt_flag();
    session->set_cancel_flag(&interrupted);
    Sampler sampler(sampling.resolved());
    std::optional<app::AnswerGrounding> grounding;
    if (grounded) grounding.emplace(*tok, app::sampled_vocab(*session, *tok), stops);
    Conversation conv(*session, *tok, tmpl, system);
    const bool interactive = isatty(STDIN_FILENO);
    std::fprintf(stderr, "mnemo chat: %s, template %s, context %d tokens. /reset, /quit, Ctrl-D to exit.\n",
                 session->summary().model_type.c_str(), tmpl.name.c_str(), session->n_ctx());

    // No token is shorter than a byte, and few pieces are longer than 16: a line of more than
    // 16 bytes per context position cannot fit (and at least 1 MiB is always accepted).
    const size_t max_line_bytes = std::max<size_t>(size_t{1} << 20, size_t{16} * static_cast<size_t>(session->n_ctx()));
    while (true) {
        if (interactive) {
            std::fputs("> ", stdout);
            std::fflush(stdout);
        }
        std::string line;
        if (interrupted.load()) break;  // Ctrl-C that arrived between answers
        const ReadResult rr = read_line(line, max_line_bytes);
        if (rr == ReadResult::TooLong) {
            std::fprintf(stderr, "mnemo: this message has more than %zu bytes, too long for a context of %d tokens (-c); skipped\n",
                         max_line_bytes, session->n_ctx());
            continue;
        }
        if (rr != ReadResult::Line) {
            if (interactive) std::fputc('\n', stdout);
            break;
        }
        if (line == "/quit" || line == "/exit") break;
        if (line == "/reset") {
            conv.reset();
            std::fprintf(stderr, "(conversation cleared)\n");
            continue;
        }
        if (line.empty()) continue;

        conv.messages().push_back({"user", line});
        app::RenderedChat target = conv.render();
        if (static_cast<int64_t>(target.tokens.size()) >= session->n_ctx()) {
            // Start over with only this turn; if even that does not fit, drop it.
            conv.reset();
            conv.messages().push_back({"user", line});
            target = conv.render();
            if (static_cast<int64_t>(target.tokens.size()) >= session->n_ctx()) {
                std::fprintf(stderr, "mnemo: this message has %zu tokens but the context holds %d (-c); skipped\n",
                             target.tokens.size(), session->n_ctx());
                conv.reset();
                continue;
            }
            std::fprintf(stderr, "(the context was full: the conversation was reset)\n");
        }

        app::GenerateResult r;
        try {
            if (recorder) recorder->take(0);  // the turns before are not this answer's to quote
            const float* logits = conv.sync(target);
            app::GenerateRequest req(*session, *tok, sampler, conv.fed(), &interrupted);
            if (grounding) {
                grounding->set_references(app::reference_texts(recorder->peek(0)), line);
                req.grounding = &*grounding;
            }
            req.first_logits = logits;
            req.stop_strings = stops;
            req.max_tokens = n_predict;
            req.emit = [](const std::string& piece) {
                std::fwrite(piece.data(), 1, piece.size(), stdout);
                std::fflush(stdout);
            };
            r = app::generate(req);
        } catch (const Cancelled&) {
            r.reason = app::StopReason::Cancelled;
        }
        std::fputc('\n', stdout);
        std::fflush(stdout);

        if (r.reason == app::StopReason::Cancelled) {
            interrupted.store(false);
            conv.check_consistent();
            std::fprintf(stderr, "(answer stopped)\n");
            if (r.text.empty()) {  // stopped before any answer: forget the question too
                conv.messages().pop_back();
                continue;
            }
        }
        if (r.reason == app::StopReason::ContextFull) {
            conv.reset();
            std::fprintf(stderr, "(the context is full: the conversation was reset)\n");
            continue;
        }
        conv.messages().push_back({"assistant", r.history_text});
    }
    if (source.kb) std::fprintf(stderr, "%s\n", kb_summary(source.kb->status()).c_str());
    return 0;
}

}  // namespace mnemo::cli
