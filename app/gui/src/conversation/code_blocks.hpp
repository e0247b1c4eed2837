// The fenced code blocks (``` or ~~~) of a Markdown text, without their fences: what a message's
// code panels show and their Copy buttons copy (message_blocks.hpp cuts the message).
#pragma once

#include <QStringList>

namespace mnemo::gui {

QStringList fencedCodeBlocks(const QString& markdown);

}  // namespace mnemo::gui
