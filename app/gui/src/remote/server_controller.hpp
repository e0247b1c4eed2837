// The picker's "server" entry (chat.server, the "Server" panel): a running `mnemo serve` (or any
// OpenAI-compatible API) answers instead of a local device. It takes the server's address and an
// optional API key — typed (kept in memory only) or read from a file (only the file's path is
// kept) — asks the server which model it serves (GET /v1/models), and on success hands the chat
// over to it (ModelController::useServer). A server that cannot be reached, refuses the key or is
// not an API changes nothing: the status line says why, and the chat goes on where it was.
#pragma once

#include <QObject>

#include "model/model_controller.hpp"
#include "remote/remote_worker.hpp"
#include "settings/app_settings.hpp"

namespace mnemo::gui {

class ServerController : public QObject {
    Q_OBJECT
    // "off" (not in use), "connecting", "connected" or "failed".
    Q_PROPERTY(QString state READ state NOTIFY changed)
    Q_PROPERTY(QString text READ text NOTIFY changed)         // the state in a sentence, with the reason
    Q_PROPERTY(QString url READ url NOTIFY changed)           // the server last asked for (the panel's field)
    Q_PROPERTY(QString keyFile READ keyFile NOTIFY changed)
    Q_PROPERTY(QString modelId READ modelId NOTIFY changed)   // the served model, once connected

public:
    ServerController(ModelController& model, AppSettings& settings, QObject* parent = nullptr);

    QString state() const;
    QString text() const;
    QString url() const { return saved_.url; }
    QString keyFile() const { return saved_.keyFile; }
    QString modelId() const { return model_.server() ? model_.server()->modelId : QString(); }
    // Answers from the server come from here (the chat connects to its signals).
    RemoteWorker* worker() { return &worker_; }

    // Connects to the server at `url` (http://HOST:PORT/v1 or https://…; a missing /v1 is added)
    // with `key` if given, else the key in `keyFileOrUrl` if given, else none. On success the chat
    // answers there.
    Q_INVOKABLE void connectServer(const QString& url, const QString& key, const QString& keyFileOrUrl);

Q_SIGNALS:
    void changed();
    void statusMessage(const QString& text, bool error);

private:
    void fail(const QString& reason);
    void onProbed(quint64 id, const QString& modelId);

    ModelController& model_;
    AppSettings& settings_;
    RemoteWorker worker_;
    ApiServerSettings saved_;
    QUrl asked_;          // the base being connected to
    QByteArray askedKey_;
    quint64 nextProbe_ = 0;
    quint64 probe_ = 0;   // the probe in flight (0: none)
    QString failure_;     // why the last connection failed ("" when it did not)
};

}  // namespace mnemo::gui
