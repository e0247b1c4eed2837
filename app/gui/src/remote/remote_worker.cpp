#include "remote/remote_worker.hpp"

#include <QNetworkReply>
#include <QNetworkRequest>
#include <algorithm>

namespace mnemo::gui {

namespace {

constexpr qsizetype kMaxErrorBody = 64 * 1024;  // an error page is read up to this, for its message
constexpr int kProbeTimeoutMs = 10000;

}  // namespace

struct RemoteWorker::Answer {
    quint64 id = 0;
    QPointer<QNetworkReply> reply;
    SseParser parser;
    QElapsedTimer clock;
    QString text;
    int pieces = 0;                 // non-empty pieces of text received
    double firstTokenSeconds = -1;  // from the request to the first piece, as the client saw it
    double lastPieceSeconds = 0;
    bool checkedType = false;       // the reply is a 200 event stream (checked at its first bytes)
    QByteArray errorBody;           // the body of a reply that is not an event stream
    std::optional<QString> finish;
    ChatChunk end;                  // the finishing chunk: timings and references
    ChatChunk usage;                // the usage chunk (stream_options.include_usage)
};

RemoteWorker::RemoteWorker(QObject* parent) : QObject(parent) {
    // A reply's bytes arrive as the server writes them; nothing here needs a cache or cookies.
    network_.setRedirectPolicy(QNetworkRequest::NoLessSafeRedirectPolicy);
}

RemoteWorker::~RemoteWorker() {
    // An answer in flight is aborted (the server frees its slot); nobody is left to report to.
    if (answer_ && answer_->reply) {
        answer_->reply->disconnect(this);
        answer_->reply->abort();
    }
}

void RemoteWorker::setServer(const QUrl& base, const QString& modelId, const QByteArray& key) {
    base_ = base;
    modelId_ = modelId;
    key_ = key;
}

QNetworkRequest RemoteWorker::requestFor(const QUrl& url, const QByteArray& key) const {
    QNetworkRequest req(url);
    if (!key.isEmpty()) req.setRawHeader("Authorization", "Bearer " + key);
    return req;
}

QString RemoteWorker::replyError(QNetworkReply* reply, const QByteArray& body) const {
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QString where = reply->url().toString(QUrl::RemoveUserInfo);
    if (status > 0) {
        QString message = errorMessageOf(body);
        if (message.isEmpty()) message = QString::fromUtf8(body.left(300)).simplified();
        if (message.isEmpty()) message = reply->attribute(QNetworkRequest::HttpReasonPhraseAttribute).toString();
        return QStringLiteral("HTTP %1 from %2: %3").arg(status).arg(where, message);
    }
    if (reply->error() == QNetworkReply::OperationCanceledError || reply->error() == QNetworkReply::TimeoutError)
        return QStringLiteral("%1 sent nothing for %2 s; the request was given up").arg(where).arg(silenceMs_ / 1000.0);
    return QStringLiteral("cannot reach %1: %2").arg(where, reply->errorString());
}

void RemoteWorker::probe(quint64 id, const QUrl& base, const QByteArray& key) {
    QNetworkRequest req = requestFor(endpoint(base, QStringLiteral("models")), key);
    req.setTransferTimeout(kProbeTimeoutMs);
    QNetworkReply* reply = network_.get(req);
    connect(reply, &QNetworkReply::finished, this, [this, reply, id] {
        reply->deleteLater();
        const QByteArray body = reply->read(kMaxErrorBody);
        if (reply->error() != QNetworkReply::NoError) {
            Q_EMIT probeFailed(id, replyError(reply, body));
            return;
        }
        QString why;
        const QString model = firstModelId(body, why);
        if (model.isEmpty()) Q_EMIT probeFailed(id, QStringLiteral("%1: %2").arg(reply->url().toString(QUrl::RemoveUserInfo), why));
        else Q_EMIT probed(id, model);
    });
}

void RemoteWorker::generate(quint64 id, QList<ChatTurn> turns, SamplingSettings settings) {
    if (answer_) endStopped();  // one answer at a time: a newer request replaces the one in flight
    if (id <= stopThrough_) {   // stopped while it was queued
        GenerationResult r;
        r.reason = FinishReason::Stopped;
        r.remote = true;
        Q_EMIT generationFinished(id, r);
        return;
    }
    if (base_.isEmpty()) {
        Q_EMIT generationFailed(id, QStringLiteral("no server is connected"));
        return;
    }
    auto a = std::make_unique<Answer>();
    a->id = id;
    a->clock.start();
    QNetworkRequest req = requestFor(endpoint(base_, QStringLiteral("chat/completions")), key_);
    req.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    req.setRawHeader("Accept", "text/event-stream");
    // A silence this long means the connection is lost: the server writes a keep-alive comment
    // every 2 s while it works on the answer (a long prompt, a queue).
    req.setTransferTimeout(silenceMs_);
    a->reply = network_.post(req, chatRequestBody(modelId_, turns, settings));
    connect(a->reply, &QNetworkReply::readyRead, this, &RemoteWorker::onReadyRead);
    connect(a->reply, &QNetworkReply::finished, this, &RemoteWorker::onReplyFinished);
    answer_ = std::move(a);
}

void RemoteWorker::requestStop(quint64 id) {
    stopThrough_ = std::max(stopThrough_, id);
    if (answer_ && answer_->id <= id) endStopped();
}

void RemoteWorker::onReadyRead() {
    if (!answer_ || sender() != answer_->reply) return;
    Answer& a = *answer_;
    QNetworkReply* reply = a.reply;
    if (!a.checkedType) {
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        const QString type = reply->header(QNetworkRequest::ContentTypeHeader).toString();
        if (status != 200 || !type.startsWith(QLatin1String("text/event-stream"))) {
            // An error reply (its JSON names the reason) or not an API at all: read for onReplyFinished.
            if (a.errorBody.size() < kMaxErrorBody) a.errorBody += reply->read(kMaxErrorBody - a.errorBody.size());
            reply->readAll();
            return;
        }
        a.checkedType = true;
    }
    QList<SseEvent> events;
    try {
        events = a.parser.feed(reply->readAll());
    } catch (const std::exception& e) {
        failAnswer(QStringLiteral("the answer stream from %1 is broken: %2").arg(base_.toString(), QString::fromUtf8(e.what())));
        return;
    }
    for (const SseEvent& e : events) {
        takeEvent(e);
        if (!answer_) return;  // finished or failed on this event
    }
}

void RemoteWorker::takeEvent(const SseEvent& e) {
    Answer& a = *answer_;
    if (e.comment) {
        // ": prompt 64/973" while the server reads a long prompt.
        if (e.data.startsWith("prompt ")) {
            const QList<QByteArray> parts = e.data.mid(7).split('/');
            if (parts.size() == 2) Q_EMIT promptProgress(a.id, parts[0].toInt(), parts[1].toInt());
        }
        return;
    }
    if (e.data == "[DONE]") {
        finishAnswer();
        return;
    }
    QString why;
    const std::optional<ChatChunk> c = parseChatChunk(e.data, why);
    if (!c) {
        failAnswer(QStringLiteral("%1 sent %2").arg(base_.toString(), why));
        return;
    }
    if (!c->error.isEmpty()) {  // the server failed after the stream began (it sends [DONE] next)
        failAnswer(QStringLiteral("the server %1 stopped the answer: %2").arg(base_.toString(), c->error));
        return;
    }
    if (!c->text.isEmpty()) {
        const double now = static_cast<double>(a.clock.nsecsElapsed()) * 1e-9;
        if (a.firstTokenSeconds < 0) a.firstTokenSeconds = now;
        a.lastPieceSeconds = now;
        a.text += c->text;
        ++a.pieces;
        Q_EMIT token(a.id, c->text);
    }
    if (c->finish) {
        a.finish = c->finish;
        a.end = *c;
    }
    if (c->hasUsage) a.usage = *c;
}

void RemoteWorker::onReplyFinished() {
    if (!answer_ || sender() != answer_->reply) return;
    Answer& a = *answer_;
    QNetworkReply* reply = a.reply;
    if (reply->error() != QNetworkReply::NoError || !a.checkedType) {
        QByteArray body = a.errorBody;
        if (body.size() < kMaxErrorBody) body += reply->read(kMaxErrorBody - body.size());
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        if (reply->error() == QNetworkReply::NoError && status == 200)
            failAnswer(QStringLiteral("%1 did not answer with an event stream (Content-Type: %2): is it an OpenAI-compatible API?")
                           .arg(reply->url().toString(QUrl::RemoveUserInfo),
                                reply->header(QNetworkRequest::ContentTypeHeader).toString()));
        else
            failAnswer(replyError(reply, body));
        return;
    }
    onReadyRead();  // bytes that came with the end
    if (!answer_) return;
    failAnswer(QStringLiteral("the answer stream from %1 ended before its [DONE]: the connection closed mid-answer "
                              "(%2 pieces of text had arrived)")
                   .arg(base_.toString())
                   .arg(a.pieces));
}

namespace {

// What the chat shows for an answer from the server: the server's own timings where it sent
// them; for a stopped answer (no timings came) the rate the pieces arrived at.
GenerationResult resultOf(const QElapsedTimer& clock, const QString& text, int pieces, double first, double last, const ChatChunk& end,
                          const ChatChunk& usage) {
    GenerationResult r;
    r.remote = true;
    r.text = text;
    r.historyText = text;  // mnemo serve renders its own answers as generated (docs/serve.md)
    r.references = end.references;
    r.seconds = static_cast<double>(clock.nsecsElapsed()) * 1e-9;
    r.firstTokenSeconds = first >= 0 ? first : r.seconds;
    r.tokens = end.hasTimings ? end.predictedTokens : usage.hasUsage ? usage.usageCompletionTokens : pieces;
    r.promptTokens = end.hasTimings ? end.promptTokens : usage.usagePromptTokens;
    if (end.hasTimings && end.predictedPerSecond > 0) r.tokensPerSecond = end.predictedPerSecond;
    else if (pieces > 1 && last > first) r.tokensPerSecond = (pieces - 1) / (last - first);
    if (usage.hasUsage) r.contextUsed = usage.usagePromptTokens + usage.usageCompletionTokens;
    return r;
}

}  // namespace

void RemoteWorker::finishAnswer() {
    std::unique_ptr<Answer> a = std::move(answer_);
    a->reply->disconnect(this);
    a->reply->deleteLater();  // its connection goes back to the pool once the reply ends
    GenerationResult r = resultOf(a->clock, a->text, a->pieces, a->firstTokenSeconds, a->lastPieceSeconds, a->end, a->usage);
    r.reason = finishReasonOf(a->finish.value_or(QStringLiteral("stop")));
    r.device = QStringLiteral("server %1 (%2)").arg(base_.toString(), modelId_);
    Q_EMIT generationFinished(a->id, r);
}

void RemoteWorker::failAnswer(const QString& reason) {
    std::unique_ptr<Answer> a = std::move(answer_);
    a->reply->disconnect(this);
    a->reply->abort();  // an error event or a broken stream: the server need not go on
    a->reply->deleteLater();
    Q_EMIT generationFailed(a->id, reason);
}

void RemoteWorker::endStopped() {
    std::unique_ptr<Answer> a = std::move(answer_);
    a->reply->disconnect(this);
    a->reply->abort();  // closes the connection: the server stops generating at its next write
    a->reply->deleteLater();
    GenerationResult r = resultOf(a->clock, a->text, a->pieces, a->firstTokenSeconds, a->lastPieceSeconds, a->end, a->usage);
    r.reason = FinishReason::Stopped;
    r.device = QStringLiteral("server %1 (%2)").arg(base_.toString(), modelId_);
    Q_EMIT generationFinished(a->id, r);
}

}  // namespace mnemo::gui
