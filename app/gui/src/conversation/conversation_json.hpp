// Conversations as JSON files: readable, versioned ({"format": "mnemo-chat-conversation",
// "version": 1, ...}) so that a newer app's file is recognised rather than misread.
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <optional>

#include "conversation/conversation.hpp"

namespace mnemo::gui {

inline constexpr int kConversationFormatVersion = 1;
inline constexpr const char* kConversationFormat = "mnemo-chat-conversation";

QJsonObject conversationToJson(const Conversation& c);
QByteArray conversationToBytes(const Conversation& c);  // indented, UTF-8

// Why a file could not be read; `newerVersion` when it is a conversation from a newer app.
struct ReadProblem {
    QString reason;
    bool newerVersion = false;
};

// Parses a file's bytes; on failure returns nullopt with the reason (naming the field).
std::optional<Conversation> conversationFromBytes(const QByteArray& bytes, ReadProblem* problem);

}  // namespace mnemo::gui
