#include "engine/chat_tokens.hpp"

namespace mnemo::gui {

std::vector<int32_t> renderChatTokens(const Tokenizer& tokenizer, const ChatTemplate& chatTemplate, const QList<ChatTurn>& turns) {
    std::vector<ChatMessage> messages;
    messages.reserve(static_cast<size_t>(turns.size()));
    for (const ChatTurn& t : turns) messages.push_back({t.role.toUtf8().toStdString(), t.text.toUtf8().toStdString()});
    return chatTemplate.render_tokens(tokenizer, messages);
}

}  // namespace mnemo::gui
