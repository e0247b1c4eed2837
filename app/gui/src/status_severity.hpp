// How much a status line matters: news (a model loaded, the knowledge server answers again), a
// warning (the chat goes on, with less: no memories for now), or an error (what was asked failed).
// The status line colours it; an error is what statusIsError means.
#pragma once

#include <QMetaType>
#include <QString>

namespace mnemo::gui {

enum class StatusSeverity { Info, Warning, Error };

// "info", "warning", "error" (what QML compares).
inline QString statusSeverityName(StatusSeverity s) {
    switch (s) {
        case StatusSeverity::Info: return QStringLiteral("info");
        case StatusSeverity::Warning: return QStringLiteral("warning");
        case StatusSeverity::Error: return QStringLiteral("error");
    }
    return {};
}

// A status line with its severity and, apart, the technical detail behind it (a server's own
// error text) for a tooltip: the line itself is written for the user.
struct StatusNotice {
    QString text;
    QString details;
    StatusSeverity severity = StatusSeverity::Info;
};

}  // namespace mnemo::gui

Q_DECLARE_METATYPE(mnemo::gui::StatusNotice)
