// A message's Markdown as the chat view shows it, as HTML for a rich-text TextEdit. The text comes
// from outside — the model's answer (shaped by memories, a knowledge server), a conversation
// file — so it is rendered without raw HTML (an <img>, a <style> or a <a> in it shows as the text
// it is) and without images (![alt](url) shows its address): otherwise the view would load a file
// or a network address the text names, or be restyled by it. Everything else of Markdown stays.
#pragma once

#include <QString>

namespace mnemo::gui {

// Needs a QGuiApplication (QTextDocument lays out fonts).
QString markdownToHtml(const QString& markdown);

}  // namespace mnemo::gui
