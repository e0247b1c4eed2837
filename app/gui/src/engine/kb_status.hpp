// Where the loaded model's explicit memories come from and whether that works: nothing, a memory
// folder, or a knowledge server (mnemo-kb) that is connected, unreachable, refuses the token, or
// was refused (a bank for another model, a malformed address, an unreadable token file). The
// worker reports it at every load and after every answer; the "Knowledge…" panel (KbController) shows it.
#pragma once

#include <QMetaType>
#include <QString>

namespace mnemo::gui {

enum class KbState { Off, Folder, Connected, Unreachable, Unauthorised, Refused };

struct KbStatus {
    KbState state = KbState::Off;
    QString where;        // the server's URL or the memory folder
    QString message;      // what it serves, or why it does not
    quint64 bankVersion = 0;
    quint64 failedChunks = 0;  // chunks that got no memories since connecting (outage or backoff)

    // The chat goes on without memories: the server was asked for and does not give them.
    bool missing() const {
        return state == KbState::Unreachable || state == KbState::Unauthorised || state == KbState::Refused;
    }
};

// "off", "folder", "connected", "unreachable", "unauthorised", "refused" (what QML compares).
QString kbStateName(KbState s);

// The state a failed connection or call puts the server in, from the client's message, which
// names the gRPC status code: UNAUTHENTICATED or PERMISSION_DENIED (a token the server does not
// accept), UNAVAILABLE or DEADLINE_EXCEEDED (nothing answers), anything else refused.
KbState kbStateOfError(const QString& message);

// One line for the panel and the status line: "connected to grpc://127.0.0.1:5000: bank 1"...
QString kbStatusText(const KbStatus& s);

}  // namespace mnemo::gui

Q_DECLARE_METATYPE(mnemo::gui::KbStatus)
