// The documents panel's engine side, on a thread of its own (DocumentsThread): adding documents
// to a memory folder (memorized in this process by app::memorize_documents, with a session of the
// chat's model opened for the job and closed after it, so the chat keeps answering meanwhile) or
// to a knowledge server (mnemo::kb_add_documents), listing and removing them. Each job has an id;
// cancelling sets the flag the memorizing loop, the session and the server call check, and a
// cancelled add changes nothing: a folder is swapped in only once complete, and a server keeps
// serving its previous bank.
#pragma once

#include <QObject>

#include "engine/owned_thread.hpp"
#include "engine/run_cancellation.hpp"
#include "kb/documents/documents_types.hpp"

namespace mnemo::gui {

class DocumentsWorker : public QObject {
    Q_OBJECT
public:
    DocumentsWorker();

    // Any thread: cancels job `id` (and any earlier one still queued).
    void requestStop(quint64 id) { cancellation_.stopThrough(id); }

public Q_SLOTS:
    // Reads `paths` (.txt/.md files, .jsonl files, folders) and adds their documents. With
    // `replaceDocId`, the paths must give one document, which takes that id (and so replaces it).
    void add(quint64 id, mnemo::gui::DocumentsTarget target, QStringList paths, QString replaceDocId);
    void remove(quint64 id, mnemo::gui::DocumentsTarget target, QStringList docIds);
    void list(quint64 id, mnemo::gui::DocumentsTarget target);

Q_SIGNALS:
    void progress(quint64 id, mnemo::gui::DocumentsProgress progress);
    void finished(quint64 id, mnemo::gui::DocumentsOutcome outcome);
    // `cancelled`: stopped on request; the target is as it was.
    void failed(quint64 id, QString reason, bool cancelled);

private:
    DocumentsOutcome addLocal(quint64 id, const DocumentsTarget& target, const QStringList& paths, const QString& replaceDocId);
    DocumentsOutcome addServer(quint64 id, const DocumentsTarget& target, const QStringList& paths, const QString& replaceDocId);
    QList<DocumentRow> documentsOf(const DocumentsTarget& target) const;

    RunCancellation cancellation_;
};

class DocumentsThread : public OwnedThread<DocumentsWorker> {
public:
    DocumentsThread() : OwnedThread("mnemo-documents", &DocumentsWorker::requestStop) {}
};

}  // namespace mnemo::gui
