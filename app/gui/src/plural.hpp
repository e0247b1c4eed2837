// A count with its noun, singular or plural as English needs: "1 token", "2 tokens", "0 tokens".
// Every count the app writes goes through it (a "1 tokens" was reported in issue 29).
#pragma once

#include <QString>

namespace mnemo::gui {

// `plural` defaults to the singular with an "s" ("message" -> "messages").
inline QString countText(qint64 n, const QString& singular, const QString& plural = {}) {
    const QString noun = n == 1 || n == -1 ? singular : (plural.isEmpty() ? singular + QLatin1Char('s') : plural);
    return QString::number(n) + QLatin1Char(' ') + noun;
}

}  // namespace mnemo::gui
