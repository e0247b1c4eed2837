// The fenced code blocks (``` or ~~~) of a Markdown text, without their fences: what a message's
// "Copy code" buttons copy.
#pragma once

#include <QStringList>

namespace mnemo::gui {

QStringList fencedCodeBlocks(const QString& markdown);

}  // namespace mnemo::gui
