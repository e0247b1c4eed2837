// A conversation as the token ids a model reads: the turns rendered with the model's chat
// template, BOS first when the tokenizer asks for it. The chat (ModelWorker) and the compare view
// (CompareWorker) share it, so a prompt compared across backends is the prompt the chat sends.
#pragma once

#include <QList>
#include <cstdint>
#include <vector>

#include "app/chat_cache.hpp"
#include "engine/worker_types.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::gui {

std::vector<int32_t> renderChatTokens(const Tokenizer& tokenizer, const ChatTemplate& chatTemplate, const QList<ChatTurn>& turns);
// The same with where each user turn begins (the retrieval segments of app::ChatCache).
app::RenderedChat renderChat(const Tokenizer& tokenizer, const ChatTemplate& chatTemplate, const QList<ChatTurn>& turns);

}  // namespace mnemo::gui
