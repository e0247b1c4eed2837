#include "engine/chat_tokens.hpp"

namespace mnemo::gui {

std::vector<int32_t> renderChatTokens(const Tokenizer& tokenizer, const ChatTemplate& chatTemplate, const QList<ChatTurn>& turns) {
    std::vector<ChatMessage> messages;
    messages.reserve(static_cast<size_t>(turns.size()));
    for (const ChatTurn& t : turns) messages.push_back({t.role.toUtf8().toStdString(), t.text.toUtf8().toStdString()});
    const std::string text = chatTemplate.render(messages, /*add_generation_prompt=*/true);
    std::vector<int32_t> ids;
    // A template that writes the BOS text itself gets no second BOS token.
    const bool textHasBos = !chatTemplate.bos_text.empty() && text.rfind(chatTemplate.bos_text, 0) == 0;
    if (tokenizer.add_bos && tokenizer.bos_id && !textHasBos) ids.push_back(*tokenizer.bos_id);
    for (int32_t id : tokenizer.encode(text, /*parse_special=*/true)) ids.push_back(id);
    return ids;
}

}  // namespace mnemo::gui
