// mnemo-chat with a running `mnemo serve` as its model (the device picker's server entry): the
// real server (bin/mnemo, started here on a free loopback port with a small memory folder and an
// API key) answers the chat piece by piece, as its own non-streamed greedy answer, with the
// references it read and its timings; Stop ends the request on the server (its
// mnemo_requests_cancelled_total rises); a wrong address, a refused key and a request the server
// refuses each reach the status line and leave the chat usable; a device chosen again answers
// locally. A scripted socket plays what a real server does not: a stream that ends without
// [DONE], and a stream held open until Stop.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include "chat_controller.hpp"
#include "gui_test_util.hpp"
#include "remote/remote_worker.hpp"

using namespace mnemo::gui;
using namespace mnemo::gui::test;

namespace {

const QString kMnemo = QStringLiteral(MNEMO_BUILD_BIN "/mnemo");
const QString kQuestion = QStringLiteral("Where was Quear Mousaim born?");

bool waitAnswered(ChatController& c) { return QTest::qWaitFor([&] { return !c.busy(); }, 60000); }
bool waitServerState(ChatController& c, const QString& s) {
    return QTest::qWaitFor([&] { return c.server()->state() != QStringLiteral("connecting"); }, 20000) && c.server()->state() == s;
}

// One HTTP exchange, waited for: {status, body}.
std::pair<int, QByteArray> exchange(QNetworkAccessManager& net, const QUrl& url, const QByteArray& key, const QByteArray* post) {
    QNetworkRequest req(url);
    if (!key.isEmpty()) req.setRawHeader("Authorization", "Bearer " + key);
    req.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    QNetworkReply* r = post ? net.post(req, *post) : net.get(req);
    if (!QTest::qWaitFor([&] { return r->isFinished(); }, 30000)) return {-1, {}};
    r->deleteLater();
    return {r->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt(), r->readAll()};
}

// A scripted server: answers the first request with `head` at once, then does what the test says.
class ScriptedServer : public QObject {
public:
    explicit ScriptedServer(QByteArray head) : head_(std::move(head)) {
        server_.listen(QHostAddress::LocalHost, 0);
        connect(&server_, &QTcpServer::newConnection, this, [this] {
            socket_ = server_.nextPendingConnection();
            connect(socket_, &QTcpSocket::readyRead, this, [this] {
                request_ += socket_->readAll();
                if (!answered_ && request_.contains("\r\n\r\n") && request_.contains("\"messages\"")) {
                    answered_ = true;
                    socket_->write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + head_);
                    socket_->flush();
                }
            });
            connect(socket_, &QTcpSocket::disconnected, this, [this] { clientGone_ = true; });
        });
    }
    QString url() const { return QStringLiteral("http://127.0.0.1:%1/v1").arg(server_.serverPort()); }
    bool answered() const { return answered_; }
    bool clientGone() const { return clientGone_; }
    void close() {
        socket_->flush();
        socket_->disconnectFromHost();
    }

private:
    QTcpServer server_;
    QTcpSocket* socket_ = nullptr;
    QByteArray head_;
    QByteArray request_;
    bool answered_ = false;
    bool clientGone_ = false;
};

const QByteArray kTwoPieces =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Thai\"},\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"mub\"},\"finish_reason\":null}]}\n\n";

}  // namespace

class TestRemoteServer : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QProcess server_;
    QString url_;        // http://127.0.0.1:PORT/v1 once it runs
    QByteArray key_;     // the API key it accepts
    QString noServer_;   // why there is no server ("" when there is one)
    QNetworkAccessManager net_;

    std::unique_ptr<ChatController> openChat(const QString& settingsFile = {}) {
        auto c = std::make_unique<ChatController>(dir_.filePath(QStringLiteral("conversations")), settingsFile);
        c->settings()->setProperty("temperature", 0.0);
        c->settings()->setProperty("maxTokens", 64);
        return c;
    }

    // The server's greedy, non-streamed answer to one question.
    QString serverAnswer(const QString& question) {
        const QByteArray body = QJsonDocument(QJsonObject{{QStringLiteral("messages"),
                                                           QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                                                  {QStringLiteral("content"), question}}}},
                                                          {QStringLiteral("temperature"), 0},
                                                          {QStringLiteral("max_tokens"), 64}})
                                    .toJson(QJsonDocument::Compact);
        const auto [status, reply] = exchange(net_, QUrl(url_ + QStringLiteral("/chat/completions")), key_, &body);
        if (status != 200) return QStringLiteral("HTTP %1: %2").arg(status).arg(QString::fromUtf8(reply));
        return QJsonDocument::fromJson(reply)["choices"][0]["message"]["content"].toString();
    }

    // mnemo_requests_cancelled_total from GET /metrics; -1 when it cannot be read.
    int cancelledRequests() {
        const auto [status, text] = exchange(net_, QUrl(QString(url_).replace(QStringLiteral("/v1"), QStringLiteral("/metrics"))), key_, nullptr);
        const QRegularExpressionMatch m =
            QRegularExpression(QStringLiteral("^mnemo_requests_cancelled_total (\\d+)"), QRegularExpression::MultilineOption)
                .match(QString::fromUtf8(text));
        return status == 200 && m.hasMatch() ? m.captured(1).toInt() : -1;
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        if (!QFile::exists(kMnemo)) {
            noServer_ = QStringLiteral("%1 is not built: the server tests need `mnemo serve`").arg(kMnemo);
            return;
        }
        // A memory folder of the world's first sixty paragraphs (one fact each, twenty entities,
        // Quear Mousaim among them): the look-alikes around his facts are what the model's
        // relative cut is for. (A folder of a handful of facts is CliAsk.AHandfulOfFactsIsNotCutAway.)
        QFile knowledge(QStringLiteral(MNEMO_SOURCE_DIR "/assets/world/knowledge.txt"));
        QVERIFY(knowledge.open(QIODevice::ReadOnly));
        QFile corpus(dir_.filePath(QStringLiteral("corpus.txt")));
        QVERIFY(corpus.open(QIODevice::WriteOnly));
        int paragraphs = 0;
        while (!knowledge.atEnd() && paragraphs < 60) {
            const QByteArray line = knowledge.readLine().trimmed();
            if (!line.isEmpty()) {
                corpus.write(line + "\n\n");
                ++paragraphs;
            }
        }
        corpus.close();
        QCOMPARE(paragraphs, 60);
        QProcess memorize;
        memorize.setProcessChannelMode(QProcess::MergedChannels);
        memorize.start(kMnemo, {QStringLiteral("memorize"), QStringLiteral("--corpus"), corpus.fileName(), QStringLiteral("-o"),
                                dir_.filePath(QStringLiteral("memories"))});
        QVERIFY(memorize.waitForFinished(120000));
        QVERIFY2(memorize.exitCode() == 0, memorize.readAll().constData());

        QProcess newKey;
        newKey.start(kMnemo, {QStringLiteral("serve"), QStringLiteral("--new-api-key"), QStringLiteral("gui"), QStringLiteral("--api-key-file"),
                              dir_.filePath(QStringLiteral("keys"))});
        QVERIFY(newKey.waitForFinished(30000));
        key_ = newKey.readAllStandardOutput().trimmed();
        QVERIFY2(newKey.exitCode() == 0 && key_.startsWith("mnemo_"), newKey.readAllStandardError().constData());

        server_.start(kMnemo, {QStringLiteral("serve"), QStringLiteral("--port"), QStringLiteral("0"), QStringLiteral("--memories"),
                               dir_.filePath(QStringLiteral("memories")), QStringLiteral("--api-key-file"), dir_.filePath(QStringLiteral("keys"))});
        QVERIFY(server_.waitForStarted(10000));
        QByteArray err;
        const QRegularExpression listening(QStringLiteral("listening on (http://127\\.0\\.0\\.1:\\d+/v1)"));
        QVERIFY2(QTest::qWaitFor(
                     [&] {
                         err += server_.readAllStandardError();
                         return listening.match(QString::fromUtf8(err)).hasMatch() || server_.state() == QProcess::NotRunning;
                     },
                     60000),
                 "mnemo serve printed no address in 60 s");
        url_ = listening.match(QString::fromUtf8(err)).captured(1);
        QVERIFY2(!url_.isEmpty(), err.constData());
    }

    void cleanupTestCase() {
        if (server_.state() == QProcess::NotRunning) return;
        // An idle keep-alive connection holds the server's exit back until it times out (5 s).
        net_.clearConnectionCache();
        server_.terminate();
        if (!server_.waitForFinished(10000)) server_.kill();
    }

    void streamsTheServersGreedyAnswerWithItsReferences() {
        if (!noServer_.isEmpty()) QSKIP(qPrintable(noServer_));
        auto c = openChat();
        QVERIFY(!c->model()->canAnswer());  // no local model: the server is the model
        c->model()->chooseDevice(c->devices()->serverRow());
        QCOMPARE(c->server()->state(), QStringLiteral("off"));  // choosing the entry asks; nothing connects yet
        c->server()->connectServer(url_, QString::fromUtf8(key_), {});
        QVERIFY2(waitServerState(*c, QStringLiteral("connected")), qPrintable(c->server()->text()));
        QVERIFY(c->model()->remote() && c->model()->canAnswer());
        QCOMPARE(c->server()->modelId(), QStringLiteral("mnemo-default"));
        QVERIFY2(c->model()->line().contains(QStringLiteral("mnemo-default")) && c->model()->line().contains(url_),
                 qPrintable(c->model()->line()));
        QCOMPARE(c->model()->deviceRow(), c->devices()->serverRow());
        QVERIFY(!c->statusIsError());

        QSignalSpy pieces(c->server()->worker(), &RemoteWorker::token);
        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        const Message& a = c->conversation()->at(1);
        QVERIFY2(a.error.isEmpty(), qPrintable(a.error));
        const QString expected = serverAnswer(kQuestion);
        QCOMPARE(a.text, expected);
        QCOMPARE(a.text, QStringLiteral("Thaimubort"));  // from the memories
        QVERIFY2(pieces.size() >= 2, "the answer came in one piece, not streamed");
        QString joined;
        for (const QList<QVariant>& p : pieces) joined += p.at(1).toString();
        QCOMPARE(joined, expected);
        QCOMPARE(a.finish, finishReasonText(FinishReason::EndOfTurn));
        QVERIFY(a.device.startsWith(QStringLiteral("server ")));

        QVERIFY(!a.references.isEmpty());
        bool birthplace = false;
        for (const mnemo::RetrievedReference& r : a.references) {
            QVERIFY(r.chunk >= 1);
            QCOMPARE(r.doc_id, std::string("corpus.txt"));
            birthplace |= r.text == "The birthplace of Quear Mousaim is Thaimubort.";
        }
        QVERIFY(birthplace);
        QVERIFY(a.tokens > 0);
        QVERIFY(a.tokensPerSecond > 0);
        QVERIFY2(c->performance().contains(QStringLiteral("tokens/s on the server")), qPrintable(c->performance()));

        // The next turn carries the whole conversation: the server answers the follow-up.
        QVERIFY(c->send(QStringLiteral("What does Quear Mousaim do for a living?")));
        QVERIFY(waitAnswered(*c));
        QVERIFY2(c->conversation()->at(3).error.isEmpty(), qPrintable(c->conversation()->at(3).error));
        QCOMPARE(c->conversation()->at(3).text, QStringLiteral("baker"));
    }

    // The prompt is long enough for the server to report its reading in pieces; Stop at the
    // first report closes the connection, and the server counts the request as cancelled.
    void stopEndsTheRequestOnTheServer() {
        if (!noServer_.isEmpty()) QSKIP(qPrintable(noServer_));
        auto c = openChat();
        c->server()->connectServer(url_, QString::fromUtf8(key_), {});
        QVERIFY2(waitServerState(*c, QStringLiteral("connected")), qPrintable(c->server()->text()));
        const int before = cancelledRequests();
        QVERIFY(before >= 0);
        QSignalSpy progress(c->server()->worker(), &RemoteWorker::promptProgress);
        QSignalSpy pieces(c->server()->worker(), &RemoteWorker::token);
        QVERIFY(c->send(kQuestion.repeated(200)));  // ~1,600 tokens
        QVERIFY2(QTest::qWaitFor([&] { return !progress.isEmpty() || !c->busy(); }, 30000), "no prefill progress in 30 s");
        QVERIFY2(c->busy(), "the answer ended before it could be stopped");
        c->stop();
        QVERIFY(!c->busy());
        QCOMPARE(c->conversation()->at(1).finish, finishReasonText(FinishReason::Stopped));
        QVERIFY2(QTest::qWaitFor([&] { return cancelledRequests() > before; }, 15000), "the server did not count the request cancelled");
        QVERIFY(pieces.isEmpty());  // it was stopped while the server still read the prompt

        // The chat goes on on the same server (in a new conversation: the long prompt would
        // still be part of this one).
        c->newConversation();
        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        QCOMPARE(c->conversation()->at(1).text, QStringLiteral("Thaimubort"));
    }

    void aWrongAddressOrAWrongKeyIsAnErrorAndChangesNothing() {
        if (!noServer_.isEmpty()) QSKIP(qPrintable(noServer_));
        auto c = openChat();
        c->server()->connectServer(QStringLiteral("http://127.0.0.1:1/v1"), {}, {});  // nothing listens on port 1
        QVERIFY(waitServerState(*c, QStringLiteral("failed")));
        QVERIFY(c->statusIsError());
        QVERIFY2(c->status().contains(QStringLiteral("cannot reach http://127.0.0.1:1/v1/models")), qPrintable(c->status()));
        QVERIFY(!c->model()->remote());

        c->server()->connectServer(QStringLiteral("grpc://127.0.0.1:1"), {}, {});
        QCOMPARE(c->server()->state(), QStringLiteral("failed"));
        QVERIFY2(c->status().contains(QStringLiteral("not a server address")), qPrintable(c->status()));

        c->server()->connectServer(url_, QStringLiteral("mnemo_not_a_key_this_server_knows"), {});
        QVERIFY(waitServerState(*c, QStringLiteral("failed")));
        QVERIFY2(c->server()->text().contains(QStringLiteral("HTTP 401")) &&
                     c->server()->text().contains(QStringLiteral("the API key is not one this server accepts")),
                 qPrintable(c->server()->text()));
        QVERIFY(c->statusIsError());
        QVERIFY(!c->model()->remote());

        c->server()->connectServer(url_, {}, {});  // no key at all
        QVERIFY(waitServerState(*c, QStringLiteral("failed")));
        QVERIFY2(c->status().contains(QStringLiteral("needs an API key")), qPrintable(c->status()));

        // Connected, then a wrong address: the chat still answers on the server it had.
        c->server()->connectServer(url_, QString::fromUtf8(key_), {});
        QVERIFY(waitServerState(*c, QStringLiteral("connected")));
        c->server()->connectServer(QStringLiteral("http://127.0.0.1:1"), {}, {});
        QVERIFY(QTest::qWaitFor([&] { return c->server()->state() != QStringLiteral("connecting"); }, 20000));
        QVERIFY2(c->status().contains(QStringLiteral("Still answering on ") + url_), qPrintable(c->status()));
        QVERIFY(c->model()->remote());
        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        QCOMPARE(c->conversation()->at(1).text, QStringLiteral("Thaimubort"));
    }

    // The key from a file: only the address and the file's path reach the settings file.
    void aKeyFileIsUsedAndNoKeyIsSaved() {
        if (!noServer_.isEmpty()) QSKIP(qPrintable(noServer_));
        const QString ini = dir_.filePath(QStringLiteral("settings.ini"));
        const QString keyFile = dir_.filePath(QStringLiteral("api.key"));
        {
            QFile f(keyFile);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(key_ + "\n");
        }
        {
            auto c = openChat(ini);
            c->server()->connectServer(url_, {}, keyFile);
            QVERIFY2(waitServerState(*c, QStringLiteral("connected")), qPrintable(c->server()->text()));
            c->server()->connectServer(url_, QString::fromUtf8(key_), {});  // typed: no file kept
            QVERIFY2(waitServerState(*c, QStringLiteral("connected")), qPrintable(c->server()->text()));
            QCOMPARE(c->server()->keyFile(), QString());
            c->server()->connectServer(url_, {}, keyFile);
            QVERIFY2(waitServerState(*c, QStringLiteral("connected")), qPrintable(c->server()->text()));
        }
        QFile f(ini);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray saved = f.readAll();
        QVERIFY2(!saved.contains(key_), "the API key was written to the settings file");
        QVERIFY2(saved.contains(url_.toUtf8()) && saved.contains("api.key"), saved.constData());
        auto again = openChat(ini);  // the panel starts from what was kept
        QCOMPARE(again->server()->url(), url_);
        QCOMPARE(again->server()->keyFile(), keyFile);

        const QString missing = dir_.filePath(QStringLiteral("no-such.key"));
        again->server()->connectServer(url_, {}, missing);
        QCOMPARE(again->server()->state(), QStringLiteral("failed"));
        QVERIFY2(again->status().contains(missing), qPrintable(again->status()));
    }

    // A request the server refuses (temperature above its 2.0): its error.message in the status
    // line, the answer marked failed, the chat usable for the next question.
    void aRefusedRequestShowsTheServersMessage() {
        if (!noServer_.isEmpty()) QSKIP(qPrintable(noServer_));
        auto c = openChat();
        c->server()->connectServer(url_, QString::fromUtf8(key_), {});
        QVERIFY(waitServerState(*c, QStringLiteral("connected")));
        c->settings()->setProperty("temperature", 3.0);
        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        QVERIFY(c->statusIsError());
        QVERIFY2(c->status().contains(QStringLiteral("HTTP 400")) && c->status().contains(QStringLiteral("temperature")),
                 qPrintable(c->status()));
        QCOMPARE(c->conversation()->at(1).finish, QStringLiteral("failed"));
        c->settings()->setProperty("temperature", 0.0);
        QVERIFY(c->regenerate());
        QVERIFY(waitAnswered(*c));
        QCOMPARE(c->conversation()->at(1).text, QStringLiteral("Thaimubort"));
    }

    // The local model, then the server, then the local device again.
    void aDeviceChosenAgainAnswersLocally() {
        if (!noServer_.isEmpty()) QSKIP(qPrintable(noServer_));
        auto c = openChat();
        c->model()->loadModel(defaultModelDir());
        QVERIFY(QTest::qWaitFor([&] { return !c->model()->loading(); }, 60000) && c->model()->loaded());
        const int cpu = c->model()->deviceRow();
        QVERIFY(cpu > 0);
        const QString localLine = c->model()->line();
        c->server()->connectServer(url_, QString::fromUtf8(key_), {});
        QVERIFY(waitServerState(*c, QStringLiteral("connected")));
        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        QVERIFY2(c->conversation()->at(1).device.startsWith(QStringLiteral("server ")), qPrintable(c->conversation()->at(1).device));
        c->model()->chooseDevice(cpu);
        QVERIFY(!c->model()->remote());
        QCOMPARE(c->server()->state(), QStringLiteral("off"));
        QCOMPARE(c->model()->line(), localLine);
        QCOMPARE(c->model()->deviceRow(), cpu);
        QVERIFY(c->send(QStringLiteral("Where was Tour Hujert born?")));
        QVERIFY(waitAnswered(*c));
        QVERIFY2(c->conversation()->at(3).device.startsWith(QStringLiteral("cpu:0")), qPrintable(c->conversation()->at(3).device));
        QVERIFY(c->conversation()->at(3).error.isEmpty());
    }

    // What a real server does not do: close the stream before [DONE].
    void aStreamWithoutDoneIsAnError() {
        ScriptedServer fake(kTwoPieces);
        RemoteWorker w;
        w.setServer(QUrl(fake.url()), QStringLiteral("m"), {});
        QSignalSpy pieces(&w, &RemoteWorker::token);
        QSignalSpy failed(&w, &RemoteWorker::generationFailed);
        QSignalSpy finished(&w, &RemoteWorker::generationFinished);
        w.generate(1, {{QStringLiteral("user"), kQuestion}}, SamplingSettings{});
        QVERIFY(QTest::qWaitFor([&] { return fake.answered(); }, 10000));
        QVERIFY(QTest::qWaitFor([&] { return pieces.size() == 2; }, 10000));
        fake.close();  // two pieces, then the connection ends: no finish, no [DONE]
        QVERIFY(QTest::qWaitFor([&] { return !failed.isEmpty() || !finished.isEmpty(); }, 10000));
        QVERIFY(finished.isEmpty());
        const QString why = failed.first().at(1).toString();
        QVERIFY2(why.contains(QStringLiteral("ended before its [DONE]")) && why.contains(QStringLiteral("2 pieces")), qPrintable(why));
    }

    // Stop while the server holds the stream open: the connection closes at once, and the
    // answer ends stopped with the text that had arrived.
    void stopClosesTheConnection() {
        ScriptedServer fake(kTwoPieces);
        RemoteWorker w;
        w.setServer(QUrl(fake.url()), QStringLiteral("m"), {});
        QSignalSpy pieces(&w, &RemoteWorker::token);
        QSignalSpy finished(&w, &RemoteWorker::generationFinished);
        w.generate(7, {{QStringLiteral("user"), kQuestion}}, SamplingSettings{});
        QVERIFY(QTest::qWaitFor([&] { return pieces.size() == 2; }, 10000));
        QVERIFY(!fake.clientGone());
        w.requestStop(7);
        QCOMPARE(finished.size(), 1);
        const GenerationResult r = finished.first().at(1).value<GenerationResult>();
        QCOMPARE(r.reason, FinishReason::Stopped);
        QCOMPARE(r.text, QStringLiteral("Thaimub"));
        QVERIFY(r.remote);
        QVERIFY2(QTest::qWaitFor([&] { return fake.clientGone(); }, 5000), "the connection stayed open after Stop");
        // A request stopped before it was sent never reaches the server.
        w.requestStop(9);
        w.generate(8, {{QStringLiteral("user"), kQuestion}}, SamplingSettings{});
        QCOMPARE(finished.size(), 2);
        QCOMPARE(finished.last().at(1).value<GenerationResult>().reason, FinishReason::Stopped);
    }
};

QTEST_MAIN(TestRemoteServer)
#include "test_remote_server.moc"
