#include "conversation/code_blocks.hpp"

namespace mnemo::gui {

QStringList fencedCodeBlocks(const QString& markdown) {
    QStringList blocks;
    QString fence;  // the open fence ("```", "~~~~"), empty outside a block
    QStringList lines;
    for (const QString& line : markdown.split(QLatin1Char('\n'))) {
        const QString t = line.trimmed();
        if (fence.isEmpty()) {
            if (t.startsWith(QLatin1String("```")) || t.startsWith(QLatin1String("~~~"))) {
                const QChar c = t.at(0);
                int n = 0;
                while (n < t.size() && t.at(n) == c) ++n;
                fence = QString(n, c);
                lines.clear();
            }
        } else if (t.startsWith(fence) && t.mid(fence.size()).trimmed().isEmpty()) {
            blocks << lines.join(QLatin1Char('\n'));
            fence.clear();
        } else {
            lines << line;
        }
    }
    if (!fence.isEmpty()) blocks << lines.join(QLatin1Char('\n'));  // still streaming, or never closed
    return blocks;
}

}  // namespace mnemo::gui
