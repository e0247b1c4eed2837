// The chat's answers from a running `mnemo serve` (or any OpenAI-compatible server) instead of a
// local model: it gives the chat what a ModelWorker gives (token(), generationFinished(),
// generationFailed(), with the same ids and the same GenerationResult: text, references,
// tokens/s), from POST /v1/chat/completions streamed as server-sent events.
//
// It lives on the GUI thread. QNetworkAccessManager is asynchronous (its HTTP connections run on
// Qt's own network thread and hand data over by signals), and what is done here per read —
// splitting a few hundred bytes into events and reading their JSON — takes microseconds, so a
// thread of its own would add queued hops and nothing else. The chat still talks to it by queued
// signals, as to a ModelWorker, so nothing it reports arrives inside the call that asked for it.
//
// Stop aborts the HTTP request: the server sees the connection close at its next write and frees
// the request's slot (mnemo serve counts it in mnemo_requests_cancelled_total).
#pragma once

#include <QElapsedTimer>
#include <QNetworkAccessManager>
#include <QObject>
#include <QPointer>
#include <QUrl>
#include <memory>

#include "engine/worker_types.hpp"
#include "remote/openai_chat.hpp"
#include "remote/sse_parser.hpp"

class QNetworkReply;

namespace mnemo::gui {

class RemoteWorker : public QObject {
    Q_OBJECT
public:
    explicit RemoteWorker(QObject* parent = nullptr);
    ~RemoteWorker() override;

    // Where answers come from from now on: the API's base URL (…/v1), the model id sent in each
    // request, and the API key sent as "Authorization: Bearer" (empty: none). Kept in memory only.
    void setServer(const QUrl& base, const QString& modelId, const QByteArray& key);
    QUrl server() const { return base_; }
    QString modelId() const { return modelId_; }
    // The longest a stream may stay silent before it counts as lost (mnemo serve sends a
    // keep-alive comment every 2 s); tests shorten it.
    void setSilenceTimeoutMs(int ms) { silenceMs_ = ms; }

    // Asks `base` which model it serves (GET /v1/models): emits probed() or probeFailed().
    void probe(quint64 id, const QUrl& base, const QByteArray& key);
    // Stops generation `id` (and any earlier one still queued): its request is aborted, and
    // generationFinished() reports it stopped with the text that had arrived.
    void requestStop(quint64 id);

public Q_SLOTS:
    // Answers the last user turn of `turns` (the whole conversation is sent: the server keeps no
    // conversation state). Emits token() per piece, then generationFinished() or generationFailed().
    void generate(quint64 id, QList<mnemo::gui::ChatTurn> turns, mnemo::gui::SamplingSettings settings);

Q_SIGNALS:
    void token(quint64 id, QString piece);
    void generationFinished(quint64 id, mnemo::gui::GenerationResult result);
    void generationFailed(quint64 id, QString reason);
    // The server read `done` of the prompt's `total` tokens (its ": prompt N/M" comments).
    void promptProgress(quint64 id, int done, int total);
    void probed(quint64 id, QString modelId);
    void probeFailed(quint64 id, QString reason);

private:
    struct Answer;  // the generation in flight
    void onReadyRead();
    void onReplyFinished();
    void takeEvent(const SseEvent& e);
    void finishAnswer();
    void failAnswer(const QString& reason);
    void endStopped();
    QNetworkRequest requestFor(const QUrl& url, const QByteArray& key) const;
    // "HTTP 401 from http://…: the API key is not one…", "cannot reach http://…: Connection refused".
    QString replyError(QNetworkReply* reply, const QByteArray& body) const;

    QNetworkAccessManager network_;
    QUrl base_;
    QString modelId_;
    QByteArray key_;
    int silenceMs_ = 60000;
    quint64 stopThrough_ = 0;  // generations with an id <= this are stopped
    std::unique_ptr<Answer> answer_;
};

}  // namespace mnemo::gui
