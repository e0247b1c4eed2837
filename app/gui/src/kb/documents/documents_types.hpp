// The values that cross between the documents panel's controller (GUI thread) and its
// DocumentsWorker: where the documents go (a memory folder memorized in this process, or a
// knowledge server's admin calls), how far a job has come, and what it left. Plain copyable values
// registered as Qt metatypes (registerDocumentsTypes), as the model worker's are.
#pragma once

#include <QList>
#include <QMetaType>
#include <QString>
#include <QStringList>

namespace mnemo::gui {

// Where the documents are: a memory folder (with the model that memorizes into it, on the device
// the chat uses) or a knowledge server (mnemo-kb serve, admin scope).
struct DocumentsTarget {
    bool server = false;
    QString folder;     // the memory folder (created by the first add when it does not exist)
    QString modelDir;   // the model that memorizes, and where it runs
    QString backend = QStringLiteral("cpu");
    int device = 0;
    int threads = 0;
    QString url;        // the knowledge server
    QString tokenFile;  // its admin token's file
    QString caFile;
    int timeoutMs = 30000;

    QString describe() const;  // "memory folder DIR" or "knowledge server URL"
};

struct DocumentRow {
    QString docId;
    QString title;
    QString source;
    qint64 references = 0;
    qint64 tokens = 0;     // a memory folder's; 0 when unknown
    quint64 version = 0;   // a server's: the bank version that added it; 0 for a memory folder
};

struct DocumentsProgress {
    qint64 done = 0;    // references memorized
    qint64 total = 0;
    double rate = 0;    // references per second; 0 until known
    double etaSeconds = -1;
    QString stage;      // "reading", "memorizing", "writing", or the server's ("sending", "memorizing", "publishing")
};

struct DocumentsOutcome {
    QString message;              // one sentence for the status line
    QList<DocumentRow> documents; // the target's documents afterwards
    bool changed = false;         // memories were added or removed (a folder to reload)
};

// Registers every type above with Qt's meta-type system (idempotent); queued connections need it.
void registerDocumentsTypes();

}  // namespace mnemo::gui

Q_DECLARE_METATYPE(mnemo::gui::DocumentsTarget)
Q_DECLARE_METATYPE(mnemo::gui::DocumentRow)
Q_DECLARE_METATYPE(mnemo::gui::DocumentsProgress)
Q_DECLARE_METATYPE(mnemo::gui::DocumentsOutcome)
