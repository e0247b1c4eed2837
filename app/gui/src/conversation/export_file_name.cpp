#include "conversation/export_file_name.hpp"

namespace mnemo::gui {

QString exportFileName(const QString& title, const QString& format) {
    static const QString forbidden = QStringLiteral("/\\:*?\"<>|");
    QString name;
    for (const QChar c : title) name += (c.category() == QChar::Other_Control || forbidden.contains(c)) ? QLatin1Char(' ') : c;
    name = name.simplified().left(80).trimmed();
    // A leading dot would hide the file; trailing dots are dropped by Windows.
    while (name.startsWith(QLatin1Char('.'))) name.remove(0, 1);
    while (name.endsWith(QLatin1Char('.'))) name.chop(1);
    if (name.isEmpty()) name = QStringLiteral("conversation");
    return name + (format == QLatin1String("json") ? QStringLiteral(".json") : QStringLiteral(".md"));
}

}  // namespace mnemo::gui
