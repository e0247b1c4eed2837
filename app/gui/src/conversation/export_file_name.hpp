// The file name the Save dialog suggests for an export: the conversation's title made safe as a
// file name on every desktop system, with the format's extension.
#pragma once

#include <QString>

namespace mnemo::gui {

// "Where was Tour Hujert born?" + "markdown" → "Where was Tour Hujert born.md". Characters that a
// file name cannot hold on Linux, macOS or Windows (/ \ : * ? " < > | and control characters)
// become spaces, runs of spaces one, at most 80 characters; an empty title gives "conversation".
// `format` is "markdown" (.md) or "json" (.json).
QString exportFileName(const QString& title, const QString& format);

}  // namespace mnemo::gui
