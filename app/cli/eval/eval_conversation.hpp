// An eval item's earlier turns ("history") fed the way `mnemo chat` feeds a conversation: each
// user turn a prompt through app::ChatCache (its chunks retrieve with its own text), each answer
// as generated tokens (decode(), keeping the turn's memories), kept in the history as the chat
// keeps a generated answer. The question is then asked as the next turn.
#pragma once

#include "app/chat_cache.hpp"
#include "eval/eval_items.hpp"
#include "mnemo/memory/retrieval_recorder.hpp"

namespace mnemo::cli {

// How the earlier turns reach the model (`mnemo eval --history-feed`), to measure the retrieval
// rule of a conversation: Turns as `mnemo chat` feeds them (the default); Whole, the whole
// conversation as one prompt with its turns as retrieval segments (a rebuilt cache); Chunks, the
// whole conversation in plain 64-token chunks that mix turns (what the chat did before).
enum class HistoryFeed { Turns, Whole, Chunks };

// Returns the logits after the question's turn; cache.fed() then holds the conversation. What
// the earlier turns retrieved is taken from `recorder` (when given), so it reports the
// question's own references. Throws Error (naming `where`) when the conversation does not fit.
const float* feed_conversation(Session& session, const Tokenizer& tok, const ChatTemplate& tmpl, app::ChatCache& cache,
                               const EvalItem& item, RetrievalRecorder* recorder, const std::string& where,
                               HistoryFeed feed = HistoryFeed::Turns);

}  // namespace mnemo::cli
