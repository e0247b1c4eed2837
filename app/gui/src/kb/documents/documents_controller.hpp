// The "Documents…" panel (chat.kb.documents): teach the model new documents from the window.
// The documents go where the chat's memories come from: the knowledge server it is connected to
// (the admin calls of mnemo-kb serve, with the chat's token file, which needs the admin scope),
// else its memory folder, else a new memory folder for the model under the app's data folder,
// which is attached once the first documents are in. Adding, replacing and deleting run on the
// DocumentsWorker's thread, never on the GUI thread; Cancel stops an add at its next step and
// leaves the folder (or the server's bank) as it was. After a memory folder changes the model is
// reloaded with it (KbController::useMemoryFolder), so the next answer reads the new memories; a
// server publishes a new bank version, which its next retrieval serves.
#pragma once

#include <QObject>
#include <QVariantList>
#include <memory>
#include <optional>

#include "kb/documents/document_list_model.hpp"
#include "kb/documents/documents_worker.hpp"
#include "status_severity.hpp"

namespace mnemo::gui {

class KbController;
class ModelController;

class DocumentsController : public QObject {
    Q_OBJECT
    Q_PROPERTY(mnemo::gui::DocumentListModel* documents READ documents CONSTANT)
    // Where documents go, in a sentence (the folder or the server; a folder still to be made).
    Q_PROPERTY(QString where READ where NOTIFY whereChanged)
    Q_PROPERTY(bool server READ server NOTIFY whereChanged)
    Q_PROPERTY(bool canChange READ canChange NOTIFY whereChanged)  // a model (or server) to add to, and no job running
    Q_PROPERTY(bool busy READ busy NOTIFY busyChanged)
    Q_PROPERTY(bool adding READ adding NOTIFY busyChanged)  // the job is an add (it shows a progress bar and Cancel)
    Q_PROPERTY(double progress READ progress NOTIFY progressChanged)  // 0..1; -1 while the total is unknown
    Q_PROPERTY(QString progressText READ progressText NOTIFY progressChanged)
    Q_PROPERTY(QString message READ message NOTIFY messageChanged)  // how the last job ended
    Q_PROPERTY(bool messageIsError READ messageIsError NOTIFY messageChanged)
    Q_PROPERTY(int highlightedRow READ highlightedRow NOTIFY highlightedRowChanged)
    // Where a new memory folder for a model is made: <app data>/memories (tests set another).
    Q_PROPERTY(QString memoriesRoot READ memoriesRoot WRITE setMemoriesRoot NOTIFY whereChanged)

public:
    DocumentsController(ModelController& model, KbController& kb, QObject* parent = nullptr);
    ~DocumentsController() override;

    DocumentListModel* documents() { return &list_; }
    QString where() const;
    bool server() const;
    bool canChange() const { return !busy() && target().has_value(); }
    bool busy() const { return job_ != 0; }
    bool adding() const { return busy() && jobIsAdd_; }
    double progress() const;
    QString progressText() const;
    QString message() const { return message_; }
    bool messageIsError() const { return messageIsError_; }
    int highlightedRow() const { return highlightedRow_; }
    QString memoriesRoot() const { return memoriesRoot_; }
    void setMemoriesRoot(const QString& root);
    // The memory folder made for `modelDir` when the chat has no memories yet.
    QString newFolderFor(const QString& modelDir) const;

    // Adds the documents of files, folders or .jsonl files (paths or file: URLs, as QML's
    // dialogs give them).
    Q_INVOKABLE void add(const QVariantList& pathsOrUrls);
    Q_INVOKABLE void addPath(const QString& pathOrUrl) { add({pathOrUrl}); }
    // Memorizes the one document of `pathOrUrl` under `docId`, in place of what it held.
    Q_INVOKABLE void replace(const QString& docId, const QString& pathOrUrl);
    Q_INVOKABLE void remove(const QString& docId);
    Q_INVOKABLE void refresh();
    Q_INVOKABLE void cancel();
    // A reference's document (the references panel): marked in the list, and the panel asked
    // to open (showRequested).
    Q_INVOKABLE void showDocument(const QString& docId);
    // A reference's source, when it is a file on this machine that exists: opened with the
    // desktop's application for it.
    Q_INVOKABLE bool isLocalFile(const QString& source) const;
    Q_INVOKABLE bool openSource(const QString& source) const;

Q_SIGNALS:
    void whereChanged();
    void busyChanged();
    void progressChanged();
    void messageChanged();
    void highlightedRowChanged();
    void showRequested(const QString& docId);
    // A job ended (listed, added, replaced, deleted, or failed: `message` says which).
    void jobEnded();
    // A memory folder's documents changed: the chat should read it from its next answer (the
    // model reloaded with it; ChatController waits for an answer in progress to end first).
    void memoryFolderChanged(const QString& folder);
    // The panel's message for the status line, in words, the server's own text as its details.
    void statusNotice(const mnemo::gui::StatusNotice& notice);
    // To the worker (queued).
    void requestAdd(quint64 id, mnemo::gui::DocumentsTarget target, QStringList paths, QString replaceDocId);
    void requestRemove(quint64 id, mnemo::gui::DocumentsTarget target, QStringList docIds);
    void requestList(quint64 id, mnemo::gui::DocumentsTarget target);

private:
    // Where documents go now; nothing when no model is loaded (or the chat answers from mnemo serve).
    std::optional<DocumentsTarget> target() const;
    bool start(bool isAdd, const QString& starting);
    void onProgress(quint64 id, const DocumentsProgress& p);
    void onFinished(quint64 id, const DocumentsOutcome& outcome);
    void onFailed(quint64 id, const QString& reason, bool cancelled);
    void endJob(const QString& message, bool error);
    void say(const QString& message, bool error);  // the panel's message and the status line
    // A knowledge server's failure: the panel and the status line say what failed in words
    // ("connection refused"), the client's text goes to the details.
    void sayServerFailure(const DocumentsTarget& t, const QString& what, const QString& reason, StatusSeverity severity);
    void setHighlightedRow(int row);

    ModelController& model_;
    KbController& kb_;
    DocumentListModel list_;
    QString memoriesRoot_;
    quint64 nextId_ = 0;
    quint64 job_ = 0;      // the add or delete in progress, 0: none
    quint64 listJob_ = 0;  // the newest listing asked for, 0: none
    bool jobIsAdd_ = false;
    DocumentsTarget jobTarget_;
    DocumentsProgress progress_;
    QString message_;
    bool messageIsError_ = false;
    int highlightedRow_ = -1;
    QString lastTargetKey_;  // what the list was read from, to read it again when that changes

    // Last, so that it is destroyed first: the worker stops before what it reports to.
    std::unique_ptr<DocumentsThread> thread_;
};

}  // namespace mnemo::gui
