// A message cut into the blocks the chat view shows one under the other: Markdown prose (as HTML,
// markdown_html.hpp) and fenced code blocks (``` or ~~~), each of which gets a panel of its own —
// monospace, its language, syntax colours (syntax_highlight.hpp) and its own Copy button.
#pragma once

#include <QList>
#include <QString>
#include <QVariantList>

namespace mnemo::gui {

struct MessageBlock {
    enum class Kind { Markdown, Code };
    Kind kind = Kind::Markdown;
    QString text;      // the Markdown, or the code without its fences
    QString language;  // a code block's fence info (its first word), as written
    bool closed = true;  // false: a code block whose closing fence has not come (yet)
};

// The blocks in order. A fence is a line that starts (after indentation) with three or more ` or
// ~; it closes at a line of the same character, at least as many, and nothing else. Prose that is
// only blank lines makes no block.
QList<MessageBlock> splitMessageBlocks(const QString& markdown);

// For QML (ConversationModel's "blocks" role): a list of {kind: "markdown", html} and
// {kind: "code", code, language}. Needs a QGuiApplication (markdownToHtml).
QVariantList messageBlocksForView(const QString& markdown);

}  // namespace mnemo::gui
