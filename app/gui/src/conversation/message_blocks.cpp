#include "conversation/message_blocks.hpp"

#include <QStringList>
#include <QVariantMap>

#include "conversation/markdown_html.hpp"

namespace mnemo::gui {
namespace {

// A run of the fence's character at least as long as the fence, and nothing after it.
bool closesFence(const QString& trimmedLine, const QString& fence) {
    qsizetype n = 0;
    while (n < trimmedLine.size() && trimmedLine.at(n) == fence.at(0)) ++n;
    return n >= fence.size() && n == trimmedLine.size();
}

}  // namespace

QList<MessageBlock> splitMessageBlocks(const QString& markdown) {
    QList<MessageBlock> blocks;
    QStringList lines;  // of the block being read
    QString fence;      // the open fence ("```", "~~~~"); empty in prose
    QString language;
    const auto flushProse = [&] {
        const QString text = lines.join(QLatin1Char('\n'));
        if (!text.trimmed().isEmpty()) blocks.push_back({MessageBlock::Kind::Markdown, text, {}, true});
        lines.clear();
    };
    for (const QString& line : markdown.split(QLatin1Char('\n'))) {
        const QString t = line.trimmed();
        if (fence.isEmpty()) {
            if (t.startsWith(QLatin1String("```")) || t.startsWith(QLatin1String("~~~"))) {
                flushProse();
                const QChar c = t.at(0);
                qsizetype n = 0;
                while (n < t.size() && t.at(n) == c) ++n;
                fence = QString(n, c);
                language = t.mid(n).trimmed().section(QLatin1Char(' '), 0, 0);
            } else {
                lines << line;
            }
        } else if (closesFence(t, fence)) {
            blocks.push_back({MessageBlock::Kind::Code, lines.join(QLatin1Char('\n')), language, true});
            lines.clear();
            fence.clear();
        } else {
            lines << line;
        }
    }
    if (!fence.isEmpty())  // still streaming, or never closed: the code so far
        blocks.push_back({MessageBlock::Kind::Code, lines.join(QLatin1Char('\n')), language, false});
    else
        flushProse();
    return blocks;
}

QVariantList messageBlocksForView(const QString& markdown) {
    QVariantList out;
    for (const MessageBlock& b : splitMessageBlocks(markdown)) {
        if (b.kind == MessageBlock::Kind::Markdown)
            out << QVariantMap{{QStringLiteral("kind"), QStringLiteral("markdown")}, {QStringLiteral("html"), markdownToHtml(b.text)}};
        else
            out << QVariantMap{{QStringLiteral("kind"), QStringLiteral("code")},
                               {QStringLiteral("code"), b.text},
                               {QStringLiteral("language"), b.language}};
    }
    return out;
}

}  // namespace mnemo::gui
