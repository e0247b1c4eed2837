#include "eval/eval_conversation.hpp"

#include "app/generate.hpp"
#include "app/prompt_tokens.hpp"
#include "mnemo/error.hpp"

namespace mnemo::cli {

namespace {

// Room for the rendering plus one generated token.
void check_fits(const app::RenderedChat& r, const Session& session, const std::string& where) {
    app::check_room_to_generate(r.tokens.size(), session.n_ctx(), where + ": the conversation");
}

// An answer's text as a chat keeps it (GenerateResult::history_text of its tokens).
std::string kept_answer(const Tokenizer& tok, const std::vector<int32_t>& ids) {
    int32_t first_piece = -1;
    for (int32_t id : ids)
        if (first_piece < 0 && !tok.is_special(id)) first_piece = id;
    return app::history_text_of(tok, first_piece, tok.decode(ids, /*skip_special=*/true));
}

const float* feed_whole(Session& session, const Tokenizer& tok, const ChatTemplate& tmpl, app::ChatCache& cache,
                        const EvalItem& item, const std::string& where, bool segmented) {
    std::vector<ChatMessage> messages;
    for (const EvalItem::Turn& turn : item.history) {
        messages.push_back({"user", turn.question});
        messages.push_back({"assistant", kept_answer(tok, tok.encode(turn.answer, /*parse_special=*/false))});
    }
    messages.push_back({"user", item.text});
    app::RenderedChat all = app::render_chat(tmpl, tok, messages);
    check_fits(all, session, where);
    if (!segmented) all.turn_starts.clear();
    return cache.sync(all);
}

}  // namespace

const float* feed_conversation(Session& session, const Tokenizer& tok, const ChatTemplate& tmpl, app::ChatCache& cache,
                               const EvalItem& item, RetrievalRecorder* recorder, const std::string& where, HistoryFeed feed) {
    cache.reset();
    if (feed != HistoryFeed::Turns) return feed_whole(session, tok, tmpl, cache, item, where, feed == HistoryFeed::Whole);
    std::vector<ChatMessage> messages;
    for (const EvalItem::Turn& turn : item.history) {
        messages.push_back({"user", turn.question});
        const app::RenderedChat prompt = app::render_chat(tmpl, tok, messages);
        check_fits(prompt, session, where);
        cache.sync(prompt);
        // The answer as the model would have generated it: its tokens as they continue a turn.
        const std::vector<int32_t> ids = tok.encode(turn.answer, /*parse_special=*/false);
        for (int32_t id : ids) {
            if (session.seq_length(cache.seq()) + 1 >= session.n_ctx())
                throw Error(where + ": the conversation's answers do not fit the context of " + std::to_string(session.n_ctx()));
            session.decode({{id, session.seq_length(cache.seq()), cache.seq(), false}});
            cache.fed().push_back(id);
        }
        messages.push_back({"assistant", kept_answer(tok, ids)});
    }
    if (recorder) recorder->take(cache.seq());
    messages.push_back({"user", item.text});
    const app::RenderedChat question = app::render_chat(tmpl, tok, messages);
    check_fits(question, session, where);
    return cache.sync(question);
}

}  // namespace mnemo::cli
