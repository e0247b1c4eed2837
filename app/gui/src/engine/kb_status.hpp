// Where the loaded model's explicit memories come from and whether that works: nothing, a memory
// folder, or a knowledge server (mnemo-kb) that is connected, unreachable, refuses the token, or
// was refused (a bank for another model, a malformed address, an unreadable token file). The
// worker reports it at every load and after every answer; the "Knowledge…" panel (KbController) shows it.
//
// What the user reads is written here, once: the server by its host and port, the problem in
// words ("connection refused"), what the chat does about it. The client's own text (the gRPC
// status and its message) is kept for a tooltip (kbStatusDetails, StatusNotice::details).
#pragma once

#include <QMetaType>
#include <QString>

#include "mnemo/kb/kb_source.hpp"
#include "status_severity.hpp"

namespace mnemo::gui {

enum class KbState { Off, Folder, Connected, Unreachable, Unauthorised, Refused };

struct KbStatus {
    KbState state = KbState::Off;
    QString where;        // the server's URL or the memory folder
    QString message;      // what it serves, or why it does not (the client's own text)
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

// The server as a user names it: "127.0.0.1:7070" for grpc://127.0.0.1:7070 (the scheme, and
// with it plaintext or TLS, is in the details).
QString kbServerName(const QString& url);

// Why a call failed, in words, from the client's error text: "connection refused", "no answer in
// time", "the host name is not known", "the token was not accepted"... Empty when the text names
// nothing known (the caller then shows the client's own text).
QString kbProblemInWords(const QString& error);

// The client's error in words when it names something known, else the error itself.
QString kbProblemOrError(const QString& error);

// Why memories are missing, without what the chat does about it: "Knowledge server 127.0.0.1:1 is
// not answering (connection refused)". Empty unless s.missing().
QString kbMissingReason(const KbStatus& s);

// One line for the panel and the status line: "Knowledge server 127.0.0.1:7070: connected, bank
// version 1", "Knowledge server 127.0.0.1:1 is not answering (connection refused); answering
// without memories"...
QString kbStatusText(const KbStatus& s);
// The technical side of the same state (the URL as given and the client's message), for a tooltip.
QString kbStatusDetails(const KbStatus& s);

// What the client's warning (an outage, a recovery, a new bank) says to the user, and how much it
// matters: a recovery or a new bank is news, an outage a warning (the chat goes on without memories).
StatusNotice kbEventNotice(KbEvent event, const QString& url, const QString& detail);

}  // namespace mnemo::gui

Q_DECLARE_METATYPE(mnemo::gui::KbStatus)
