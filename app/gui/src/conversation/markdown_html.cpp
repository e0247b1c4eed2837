#include "conversation/markdown_html.hpp"

#include <QList>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextFragment>
#include <QTextImageFormat>
#include <QTextTable>
#include <QRegularExpression>

namespace mnemo::gui {
namespace {

// A cell that holds one number ("12", "-3.5", "1,024", "42%", "3.2 ms" is not): right-aligned,
// so that a column of figures lines up on its last digit.
bool isNumber(const QString& text) {
    static const QRegularExpression number(QStringLiteral("^[-+]?[0-9][0-9,_]*(\\.[0-9]+)?%?$"));
    return number.match(text.trimmed()).hasMatch();
}

// Markdown's tables arrive with no border and no cell padding (QTextDocument's defaults), so
// columns run into each other. Each table gets collapsed hairline borders and padding.
void formatTables(QTextFrame* frame) {
    for (QTextFrame* child : frame->childFrames()) {
        if (auto* table = qobject_cast<QTextTable*>(child)) {
            QTextTableFormat f = table->format();
            f.setBorder(1);
            f.setBorderStyle(QTextFrameFormat::BorderStyle_Solid);
            f.setBorderBrush(QColor(0x88, 0x8d, 0x96));  // opaque (the HTML parser reads no rgba); reads on light and dark
            f.setBorderCollapse(true);
            f.setCellPadding(6);
            f.setCellSpacing(0);
            f.setTopMargin(6);
            f.setBottomMargin(6);
            table->setFormat(f);
            for (int r = 0; r < table->rows(); ++r)
                for (int c = 0; c < table->columns(); ++c) {
                    const QTextTableCell cell = table->cellAt(r, c);
                    QTextCursor cursor = cell.firstCursorPosition();
                    cursor.setPosition(cell.lastCursorPosition().position(), QTextCursor::KeepAnchor);
                    if (r > 0 && isNumber(cursor.selectedText())) {
                        QTextBlockFormat right = cursor.blockFormat();
                        right.setAlignment(Qt::AlignRight);
                        cursor.mergeBlockFormat(right);
                    }
                }
        }
        formatTables(child);
    }
}

}  // namespace

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
    formatTables(doc.rootFrame());
    return doc.toHtml();
}

}  // namespace mnemo::gui
