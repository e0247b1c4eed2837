// Exports a conversation for people and other programs: Markdown (readable anywhere, the
// answers' own Markdown kept as it is) and JSON (the app's own file format, so an export can be
// read back).
#pragma once

#include <QString>

#include "conversation/conversation.hpp"

namespace mnemo::gui {

QString conversationToMarkdown(const Conversation& c);

// Writes the export atomically; `format` is "markdown" or "json". Returns an empty string on
// success, else the reason (naming the file).
QString exportConversation(const Conversation& c, const QString& path, const QString& format);

}  // namespace mnemo::gui
