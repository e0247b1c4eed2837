#include "engine/kb_status.hpp"

namespace mnemo::gui {

QString kbStateName(KbState s) {
    switch (s) {
        case KbState::Off: return QStringLiteral("off");
        case KbState::Folder: return QStringLiteral("folder");
        case KbState::Connected: return QStringLiteral("connected");
        case KbState::Unreachable: return QStringLiteral("unreachable");
        case KbState::Unauthorised: return QStringLiteral("unauthorised");
        case KbState::Refused: return QStringLiteral("refused");
    }
    return {};
}

KbState kbStateOfError(const QString& message) {
    if (message.contains(QLatin1String("UNAUTHENTICATED")) || message.contains(QLatin1String("PERMISSION_DENIED")))
        return KbState::Unauthorised;
    if (message.contains(QLatin1String("UNAVAILABLE")) || message.contains(QLatin1String("DEADLINE_EXCEEDED")))
        return KbState::Unreachable;
    return KbState::Refused;
}

QString kbStatusText(const KbStatus& s) {
    switch (s.state) {
        case KbState::Off: return QStringLiteral("No memories: the model answers from its weights alone");
        case KbState::Folder: return QStringLiteral("Memory folder %1: %2").arg(s.where, s.message);
        case KbState::Connected: {
            QString t = QStringLiteral("Connected to %1 (bank version %2)").arg(s.where).arg(s.bankVersion);
            if (s.failedChunks > 0) t += QStringLiteral("; %1 chunks got no memories during an outage").arg(s.failedChunks);
            return t;
        }
        case KbState::Unreachable:
            return QStringLiteral("Unreachable: %1 does not answer; the chat goes on without memories. %2").arg(s.where, s.message);
        case KbState::Unauthorised:
            return QStringLiteral("Unauthorised: %1 does not accept the token; the chat goes on without memories. %2").arg(s.where, s.message);
        case KbState::Refused: return QStringLiteral("Not connected to %1: %2").arg(s.where, s.message);
    }
    return {};
}

}  // namespace mnemo::gui
