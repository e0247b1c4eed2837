#include "conversation/conversation.hpp"

namespace mnemo::gui {

QString titleFrom(const QString& prompt) {
    QString t = prompt.simplified();
    constexpr int kMax = 48;
    if (t.size() > kMax) {
        t.truncate(kMax);
        const int space = t.lastIndexOf(QLatin1Char(' '));
        if (space > kMax / 2) t.truncate(space);
        t += QStringLiteral("…");
    }
    return t.isEmpty() ? QStringLiteral("New conversation") : t;
}

}  // namespace mnemo::gui
