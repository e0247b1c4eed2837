#include "engine/kb_status.hpp"

#include <QList>
#include <QRegularExpression>
#include <utility>

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

QString kbServerName(const QString& url) {
    for (const QLatin1String scheme : {QLatin1String("grpcs://"), QLatin1String("grpc://")})
        if (url.startsWith(scheme)) return url.mid(scheme.size());
    return url;
}

QString kbProblemInWords(const QString& error) {
    // The socket's own words first (gRPC wraps them in UNAVAILABLE), then the status codes. Each
    // pattern is how gRPC's core or the client (grpc_kb_client.cpp) writes it.
    static const QList<std::pair<QLatin1String, QLatin1String>> kWords = {
        {QLatin1String("Connection refused"), QLatin1String("connection refused")},
        {QLatin1String("No route to host"), QLatin1String("no route to the host")},
        {QLatin1String("Network is unreachable"), QLatin1String("the network is unreachable")},
        {QLatin1String("DNS resolution failed"), QLatin1String("the host name is not known")},
        {QLatin1String("Name or service not known"), QLatin1String("the host name is not known")},
        {QLatin1String("Connection reset"), QLatin1String("the connection was reset")},
        {QLatin1String("Socket closed"), QLatin1String("the connection was closed")},
        {QLatin1String("Broken pipe"), QLatin1String("the connection was closed")},
        {QLatin1String("handshake"), QLatin1String("the secure connection (TLS) failed: check grpcs:// or grpc:// and the CA file")},
        {QLatin1String("certificate"), QLatin1String("the server's certificate is not trusted: check the CA file")},
        {QLatin1String("UNAUTHENTICATED"), QLatin1String("the token was not accepted")},
        {QLatin1String("PERMISSION_DENIED"), QLatin1String("the token may not read this bank")},
        {QLatin1String("DEADLINE_EXCEEDED"), QLatin1String("no answer in time")},
        {QLatin1String("RESOURCE_EXHAUSTED"), QLatin1String("the server is overloaded")},
        {QLatin1String("UNAVAILABLE"), QLatin1String("it cannot be reached")},
    };
    for (const auto& [pattern, words] : kWords) {
        if (!error.contains(pattern, Qt::CaseInsensitive)) continue;
        // Connecting waits for the server up to the deadline, so nothing listening reads as a
        // deadline there: the client names the time it waited (grpc_kb_source.cpp).
        if (pattern == QLatin1String("DEADLINE_EXCEEDED")) {
            static const QRegularExpression waited(QStringLiteral("no answer within (\\d+) ms"));
            const QRegularExpressionMatch m = waited.match(error);
            if (m.hasMatch()) return QStringLiteral("no answer within %1 ms").arg(m.captured(1));
        }
        return words;
    }
    return {};
}

QString kbProblemOrError(const QString& error) {
    // A refused bank or an unreadable token file names the model, the file and the field itself:
    // that text is for the user already.
    const QString words = kbProblemInWords(error);
    return words.isEmpty() ? error : words;
}

namespace {

QString server(const QString& url) { return QStringLiteral("Knowledge server %1").arg(kbServerName(url)); }

}  // namespace

QString kbMissingReason(const KbStatus& s) {
    switch (s.state) {
        case KbState::Unreachable: return QStringLiteral("%1 is not answering (%2)").arg(server(s.where), kbProblemOrError(s.message));
        case KbState::Unauthorised: return QStringLiteral("%1 does not accept the token").arg(server(s.where));
        case KbState::Refused: return QStringLiteral("%1 is not used: %2").arg(server(s.where), kbProblemOrError(s.message));
        default: return {};
    }
}

QString kbStatusText(const KbStatus& s) {
    switch (s.state) {
        case KbState::Off: return QStringLiteral("No memories: the model answers from its weights alone");
        case KbState::Folder: return QStringLiteral("Memory folder %1: %2").arg(s.where, s.message);
        case KbState::Connected: {
            QString t = QStringLiteral("%1: connected, bank version %2").arg(server(s.where)).arg(s.bankVersion);
            if (s.failedChunks > 0) t += QStringLiteral("; %1 chunks got no memories during an outage").arg(s.failedChunks);
            return t;
        }
        case KbState::Unreachable:
        case KbState::Unauthorised:
        case KbState::Refused: return kbMissingReason(s) + QStringLiteral("; answering without memories");
    }
    return {};
}

QString kbStatusDetails(const KbStatus& s) {
    switch (s.state) {
        case KbState::Off: return {};
        case KbState::Folder: return s.where;
        case KbState::Connected: return QStringLiteral("%1\n%2").arg(s.where, s.message);
        case KbState::Unreachable:
        case KbState::Unauthorised:
        case KbState::Refused: return QStringLiteral("%1\n%2").arg(s.where, s.message);
    }
    return {};
}

StatusNotice kbEventNotice(KbEvent event, const QString& url, const QString& detail) {
    switch (event) {
        case KbEvent::Outage:
            if (kbStateOfError(detail) == KbState::Unauthorised)  // a token revoked while in use
                return {QStringLiteral("%1 no longer accepts the token; answering without memories. Retrying.").arg(server(url)),
                        QStringLiteral("%1\n%2").arg(url, detail), StatusSeverity::Warning};
            return {QStringLiteral("%1 is not answering (%2); answering without memories. Retrying.").arg(server(url), kbProblemOrError(detail)),
                    QStringLiteral("%1\n%2").arg(url, detail), StatusSeverity::Warning};
        case KbEvent::Recovered:
            return {QStringLiteral("%1 answers again: memories are back.").arg(server(url)), url, StatusSeverity::Info};
        case KbEvent::BankChanged:
            return {QStringLiteral("%1 now serves bank version %2.").arg(server(url), detail), url, StatusSeverity::Info};
        case KbEvent::Incompatible:
            return {QStringLiteral("%1 now serves a bank this model cannot read; answering without memories. Retrying.").arg(server(url)),
                    QStringLiteral("%1\n%2").arg(url, detail), StatusSeverity::Warning};
        // One of several servers (a host name with several addresses): the others answer, so the
        // memories go on; news rather than a warning.
        case KbEvent::ServerDown:
            return {QStringLiteral("%1: one of its addresses is not answering; the others take its questions.").arg(server(url)),
                    QStringLiteral("%1\n%2").arg(url, detail), StatusSeverity::Info};
        case KbEvent::ServerUp:
            return {QStringLiteral("%1: an address that was not answering is back.").arg(server(url)), QStringLiteral("%1\n%2").arg(url, detail),
                    StatusSeverity::Info};
    }
    return {};
}

}  // namespace mnemo::gui
