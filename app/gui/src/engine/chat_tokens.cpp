#include "engine/chat_tokens.hpp"

namespace mnemo::gui {

namespace {

std::vector<ChatMessage> messagesOf(const QList<ChatTurn>& turns) {
    std::vector<ChatMessage> messages;
    messages.reserve(static_cast<size_t>(turns.size()));
    for (const ChatTurn& t : turns) messages.push_back({t.role.toUtf8().toStdString(), t.text.toUtf8().toStdString()});
    return messages;
}

}  // namespace

std::vector<int32_t> renderChatTokens(const Tokenizer& tokenizer, const ChatTemplate& chatTemplate, const QList<ChatTurn>& turns) {
    return chatTemplate.render_tokens(tokenizer, messagesOf(turns));
}

app::RenderedChat renderChat(const Tokenizer& tokenizer, const ChatTemplate& chatTemplate, const QList<ChatTurn>& turns) {
    return app::render_chat(chatTemplate, tokenizer, messagesOf(turns));
}

}  // namespace mnemo::gui
