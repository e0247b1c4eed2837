#include "conversation/markdown_html.hpp"

#include <QList>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextFragment>
#include <QTextImageFormat>

namespace mnemo::gui {

QString markdownToHtml(const QString& markdown) {
    QTextDocument doc;
    // MarkdownNoHTML: raw HTML is kept as text. (QML's TextEdit.MarkdownText has no such switch:
    // it inserts raw HTML as HTML, images included.)
    doc.setMarkdown(markdown, QTextDocument::MarkdownFeatures(QTextDocument::MarkdownDialectGitHub | QTextDocument::MarkdownNoHTML));
    // Markdown images become their address as text; the view loads nothing.
    struct Image {
        int position;
        int length;
        QString name;
    };
    QList<Image> images;
    for (QTextBlock b = doc.begin(); b.isValid(); b = b.next())
        for (auto it = b.begin(); !it.atEnd(); ++it) {
            const QTextFragment f = it.fragment();
            if (f.isValid() && f.charFormat().isImageFormat())
                images.push_back({f.position(), f.length(), f.charFormat().toImageFormat().name()});
        }
    // From the end, so that the positions still to replace do not move.
    for (auto it = images.crbegin(); it != images.crend(); ++it) {
        QTextCursor c(&doc);
        c.setPosition(it->position);
        c.setPosition(it->position + it->length, QTextCursor::KeepAnchor);
        c.insertText(QStringLiteral("[image: %1]").arg(it->name), QTextCharFormat());
    }
    return doc.toHtml();
}

}  // namespace mnemo::gui
