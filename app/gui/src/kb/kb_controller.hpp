// The memory source of the loaded model (chat.kb, the "Knowledge…" panel; named for the
// knowledge server, its main source): a knowledge server (mnemo-kb serve: address, token file, CA
// file), a memory folder (mnemo memorize) or none, how chunks find memories (retrieval, kept per
// model folder), and the live state: connected, unreachable, unauthorised or refused, with the
// reason. Each choice reloads the model on the same device
// through the ModelController; a server that does not answer never stops the chat. The state comes
// with every load and every answer, and the client's own warnings reach the status as they happen,
// in words, with their severity (a recovery is news, an outage a warning).
//
// The server in use is remembered with the model folder it serves (AppSettings): opening that
// folder again, at the next start too, connects it again; "No memories" or a memory folder ends it.
#pragma once

#include <QObject>

#include "engine/kb_status.hpp"
#include "kb/documents/documents_controller.hpp"
#include "model/model_controller.hpp"
#include "settings/app_settings.hpp"

namespace mnemo::gui {

class KbController : public QObject {
    Q_OBJECT
    // "off", "folder", "connected", "unreachable", "unauthorised" or "refused".
    Q_PROPERTY(QString state READ state NOTIFY changed)
    Q_PROPERTY(QString text READ text NOTIFY changed)  // the state in a sentence, with the reason in words
    Q_PROPERTY(QString details READ details NOTIFY changed)  // the address as given and the client's own text
    Q_PROPERTY(QString url READ url NOTIFY changed)    // the server last asked for (the panel's fields)
    Q_PROPERTY(QString tokenFile READ tokenFile NOTIFY changed)
    Q_PROPERTY(QString caFile READ caFile NOTIFY changed)
    Q_PROPERTY(QString memoryFolder READ memoryFolder NOTIFY changed)
    // "bm25" or "vector", used at the next connection or memory folder. BM25 unless chosen
    // otherwise: lexical retrieval works with any model, vector retrieval only with trained
    // retrieval vectors, which the default model does not have.
    Q_PROPERTY(QString retrieval READ retrieval WRITE setRetrieval NOTIFY retrievalChanged)
    // The "Documents…" panel: documents added to, listed in and deleted from these memories.
    Q_PROPERTY(mnemo::gui::DocumentsController* documents READ documents CONSTANT)

public:
    KbController(ModelController& model, AppSettings& settings, QObject* parent = nullptr);

    QString state() const { return kbStateName(status_.state); }
    QString text() const { return kbStatusText(status_); }
    QString details() const { return kbStatusDetails(status_); }
    const KbStatus& status() const { return status_; }
    QString url() const { return server_.url; }
    QString tokenFile() const { return server_.tokenFile; }
    QString caFile() const { return server_.caFile; }
    QString memoryFolder() const { return model_.info().memoryFolder; }
    QString retrieval() const { return retrieval_; }
    DocumentsController* documents() { return documents_; }
    void setRetrieval(const QString& retrieval);
    // The deadline of every knowledge-server call, connecting included (tests shorten it).
    void setTimeoutMs(int ms) { timeoutMs_ = ms; }
    // The state as an answer found it (after every answer).
    void update(const KbStatus& k);

    // Reloads the model with the memories of a memory folder, on the same device; an empty
    // folder reloads it without memories.
    Q_INVOKABLE void useMemoryFolder(const QString& folderOrUrl);
    // Reloads the model with memories from a knowledge server on the same device. A server that
    // does not answer or refuses the token does not stop the chat: the model answers without
    // memories, `state` says why, and so does every answer.
    Q_INVOKABLE void connectServer(const QString& url, const QString& tokenFileOrUrl, const QString& caFileOrUrl);
    // Reloads the model without memories (no server, no folder).
    Q_INVOKABLE void useNoMemories();

Q_SIGNALS:
    void changed();
    void retrievalChanged();
    void statusMessage(const QString& text, bool error);
    // A status line with its severity and technical details (the server's state, the client's warnings).
    void statusNotice(const mnemo::gui::StatusNotice& notice);

private:
    void set(const KbStatus& k);
    void onModelReplaced(const ModelInfo& info);
    // The server in use with a folder opened by loadModel, connected again (ModelController::setMemoryChoice).
    void chooseFor(LoadRequest& r) const;
    // The server's settings as they are now, kept between runs.
    void saveServer();
    void readRetrieval(const QString& modelDir);

    ModelController& model_;
    AppSettings& settings_;
    KbStatus status_;
    KbServerSettings server_;
    QString retrieval_ = QStringLiteral("bm25");
    int timeoutMs_ = 2000;
    DocumentsController* documents_;  // a child: destroyed (its worker thread joined) with this
};

}  // namespace mnemo::gui
