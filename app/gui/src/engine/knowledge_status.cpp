#include "engine/knowledge_status.hpp"

namespace mnemo::gui {

QString knowledgeStateName(KnowledgeState s) {
    switch (s) {
        case KnowledgeState::Off: return QStringLiteral("off");
        case KnowledgeState::Folder: return QStringLiteral("folder");
        case KnowledgeState::Connected: return QStringLiteral("connected");
        case KnowledgeState::Unreachable: return QStringLiteral("unreachable");
        case KnowledgeState::Unauthorised: return QStringLiteral("unauthorised");
        case KnowledgeState::Refused: return QStringLiteral("refused");
    }
    return {};
}

KnowledgeState knowledgeStateOfError(const QString& message) {
    if (message.contains(QLatin1String("UNAUTHENTICATED")) || message.contains(QLatin1String("PERMISSION_DENIED")))
        return KnowledgeState::Unauthorised;
    if (message.contains(QLatin1String("UNAVAILABLE")) || message.contains(QLatin1String("DEADLINE_EXCEEDED")))
        return KnowledgeState::Unreachable;
    return KnowledgeState::Refused;
}

QString knowledgeStatusText(const KnowledgeStatus& s) {
    switch (s.state) {
        case KnowledgeState::Off: return QStringLiteral("No memories: the model answers from its weights alone");
        case KnowledgeState::Folder: return QStringLiteral("Memory folder %1: %2").arg(s.where, s.message);
        case KnowledgeState::Connected: {
            QString t = QStringLiteral("Connected to %1 (bank version %2)").arg(s.where).arg(s.bankVersion);
            if (s.failedChunks > 0) t += QStringLiteral("; %1 chunks got no memories during an outage").arg(s.failedChunks);
            return t;
        }
        case KnowledgeState::Unreachable:
            return QStringLiteral("Unreachable: %1 does not answer; the chat goes on without memories. %2").arg(s.where, s.message);
        case KnowledgeState::Unauthorised:
            return QStringLiteral("Unauthorised: %1 does not accept the token; the chat goes on without memories. %2").arg(s.where, s.message);
        case KnowledgeState::Refused: return QStringLiteral("Not connected to %1: %2").arg(s.where, s.message);
    }
    return {};
}

}  // namespace mnemo::gui
