// Syntax colours for a message's code blocks, as escaped HTML for a rich-text item. A small
// tokenizer (not a parser) for the languages answers use most: C/C++, Python, JavaScript/TypeScript,
// JSON, shell, Rust, Go. It colours keywords, built-in types, strings, comments and numbers;
// everything else, and any language it does not know, is the code as it is. The code is outside
// text (the model's answer), so every piece is HTML-escaped: the output never holds markup the code
// wrote, only the <span>s this file adds.
#pragma once

#include <QString>

namespace mnemo::gui {

// "#rrggbb" colours of each kind of token (the theme's, light or dark).
struct SyntaxColours {
    QString keyword;
    QString type;  // built-in types; a JSON object's keys
    QString string;
    QString comment;
    QString number;
};

// The canonical name of a fence's language ("c++", "hpp" → "cpp"; "py" → "python"; "ts" →
// "typescript"; "sh", "bash", "zsh" → "shell"; "rs" → "rust"; "golang" → "go"), or the info
// string lower-cased when it is none of those.
QString canonicalLanguage(const QString& fenceInfo);

// `code` as HTML: escaped, with <span style="color:…"> around the tokens it knows. Line breaks stay
// '\n' (the caller wraps it in <pre>).
QString highlightCodeHtml(const QString& code, const QString& language, const SyntaxColours& colours);

}  // namespace mnemo::gui
