// A conversation made to fit the model's context before it is answered. Longer than the context,
// it is either refused (the answer fails and says how long it is and what would help) or, when
// SamplingSettings::dropOldestTurns asks for it (as LM Studio's "rolling window"), cut from the
// front: the oldest messages go, a user message with the answer after it at a time, until the
// rendered conversation leaves room for the answer. The system prompt and the newest prompt are
// never dropped; a prompt that does not fit by itself is refused.
#pragma once

#include <QList>

#include "app/chat_cache.hpp"
#include "engine/worker_types.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::gui {

struct FittedChat {
    app::RenderedChat chat;  // what the model reads
    int dropped = 0;         // messages left out (not counting the system prompt, never dropped)
};

// The tokens kept free for the answer when messages are dropped: the answer length, at most a
// quarter of the context (an answer longer than that stops at "context full" as before).
int answerReserve(int nCtx, int maxTokens);

// Whether an answer's failure is a conversation longer than the context that dropping the oldest
// messages would fix (the error fitToContext throws without dropOldestTurns): the chat then offers
// to drop them.
bool isContextOverflow(const QString& reason);

// Throws mnemo::Error naming both lengths when it cannot fit.
FittedChat fitToContext(const Tokenizer& tokenizer, const ChatTemplate& chatTemplate, QList<ChatTurn> turns, int nCtx,
                        const SamplingSettings& settings);

}  // namespace mnemo::gui
