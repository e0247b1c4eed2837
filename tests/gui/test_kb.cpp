// The knowledge server from the app: a loopback `mnemo-kb serve` of the default model's bank
// (assets/world/bank) gives each answer its references with scores; an unreachable server, a
// wrong token and a server that stops mid-conversation each leave the chat answering without
// memories and say so, in the knowledge status and under the answer.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <sys/stat.h>

#include "chat_controller.hpp"
#include "gui_test_util.hpp"

using namespace mnemo::gui;
using namespace mnemo::gui::test;

namespace {

bool waitLoaded(ChatController& c) { return QTest::qWaitFor([&] { return !c.model()->loading(); }, 60000) && c.model()->loaded(); }
bool waitAnswered(ChatController& c) { return QTest::qWaitFor([&] { return !c.busy(); }, 60000); }

QString writeFile(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
    QFile f(dir.filePath(name));
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(text);
    return f.fileName();
}

// A chat on the default model, greedy, short answers.
std::unique_ptr<ChatController> openChat(const QTemporaryDir& conversations) {
    auto c = std::make_unique<ChatController>(conversations.path());
    c->model()->loadModel(defaultModelDir());
    if (!waitLoaded(*c)) return nullptr;
    c->settings()->setProperty("temperature", 0.0);
    c->settings()->setProperty("maxTokens", 16);
    return c;
}

const QString kQuestion = QStringLiteral("Where was Tour Hujert born?");

}  // namespace

class TestKb : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QProcess server_;
    QString url_;        // grpc://127.0.0.1:PORT once the server runs
    QString tokenFile_;
    QString noServer_;   // why there is no loopback server ("" when there is one)

private Q_SLOTS:
    void initTestCase() {
#ifndef MNEMO_KB_SERVER
        noServer_ = QStringLiteral("this build has no knowledge server (configure with MNEMO_SERVER=ON and gRPC)");
#else
        const QString kb = QStringLiteral(MNEMO_BUILD_BIN "/mnemo-kb");
        QProcess token;
        token.start(kb, {QStringLiteral("token"), QStringLiteral("new"), QStringLiteral("--name"), QStringLiteral("gui"),
                         QStringLiteral("--scope"), QStringLiteral("read"), QStringLiteral("--tokens"), dir_.filePath(QStringLiteral("tokens"))});
        QVERIFY(token.waitForFinished(30000));
        const QByteArray out = token.readAllStandardOutput().trimmed();
        QVERIFY2(token.exitCode() == 0 && out.startsWith("mkb_"), token.readAllStandardError().constData());
        tokenFile_ = writeFile(dir_, QStringLiteral("token.txt"), out + "\n");
        const QString portFile = dir_.filePath(QStringLiteral("port"));
        server_.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        server_.start(kb, {QStringLiteral("serve"), QStringLiteral(MNEMO_SOURCE_DIR "/assets/world/bank"), QStringLiteral("--listen"),
                           QStringLiteral("127.0.0.1:0"), QStringLiteral("--insecure"), QStringLiteral("--tokens"),
                           dir_.filePath(QStringLiteral("tokens")), QStringLiteral("--port-file"), portFile, QStringLiteral("--log-quiet")});
        QVERIFY(server_.waitForStarted(10000));
        QVERIFY2(QTest::qWaitFor([&] { return QFile::exists(portFile) || server_.state() == QProcess::NotRunning; }, 30000),
                 "mnemo-kb serve wrote no port file in 30 s");
        QFile port(portFile);
        QVERIFY2(port.open(QIODevice::ReadOnly), "mnemo-kb serve ended before serving");
        url_ = QStringLiteral("grpc://127.0.0.1:%1").arg(QString::fromLatin1(port.readAll().trimmed()));
#endif
    }

    void answersWithTheReferencesOfALoopbackServer() {
        if (!noServer_.isEmpty()) QSKIP(qPrintable(noServer_));
        QTemporaryDir conversations;
        auto c = openChat(conversations);
        QVERIFY(c);
        QCOMPARE(c->kb()->state(), QStringLiteral("off"));
        c->kb()->connectServer(url_, tokenFile_, QString());
        QVERIFY(waitLoaded(*c));
        QCOMPARE(c->kb()->state(), QStringLiteral("connected"));
        QVERIFY2(c->kb()->text().contains(url_) && c->kb()->text().contains(QStringLiteral("bank version 1")),
                 qPrintable(c->kb()->text()));
        QVERIFY2(!c->statusIsError(), qPrintable(c->status()));
        QVERIFY2(c->model()->line().contains(QStringLiteral("memories: knowledge server")), qPrintable(c->model()->line()));
        QCOMPARE(c->kb()->url(), url_);

        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        const Message& a = c->conversation()->at(1);
        QVERIFY(a.error.isEmpty());
        QVERIFY2(a.notice.isEmpty(), qPrintable(a.notice));
        QVERIFY(!a.references.isEmpty());
        for (const mnemo::RetrievedReference& r : a.references) {
            QVERIFY(r.has_score);          // the server ranks: each reference has its score
            QVERIFY(!r.text.empty());      // and its text, for the references panel
            QCOMPARE(r.source, std::string("knowledge.jsonl"));
            QVERIFY(!r.doc_id.empty());    // the document and the bank version of its text
            QVERIFY(r.doc_version > 0);
        }
        qInfo("answer %s with %d references, first: %s (score %.3f)", qPrintable(a.text.trimmed()), static_cast<int>(a.references.size()),
              a.references.first().title.c_str(), static_cast<double>(a.references.first().score));

        c->kb()->useNoMemories();
        QVERIFY(waitLoaded(*c));
        QCOMPARE(c->kb()->state(), QStringLiteral("off"));
        QVERIFY(!c->model()->line().contains(QStringLiteral("memories:")));
    }

    void anUnreachableServerLeavesTheChatAnsweringAndSaysSo() {
        QTemporaryDir conversations;
        auto c = openChat(conversations);
        QVERIFY(c);
        c->kb()->setTimeoutMs(500);
        const QString nowhere = QStringLiteral("grpc://127.0.0.1:1");  // nothing listens on port 1
        c->kb()->connectServer(nowhere, QString(), QString());
        QVERIFY(waitLoaded(*c));  // the model loads all the same
#ifdef MNEMO_KB_SERVER
        QCOMPARE(c->kb()->state(), QStringLiteral("unreachable"));
        QVERIFY2(c->kb()->text().startsWith(QStringLiteral("Unreachable: grpc://127.0.0.1:1 does not answer")), qPrintable(c->kb()->text()));
#endif
        QVERIFY(c->statusIsError());
        QVERIFY2(c->status().contains(QStringLiteral("without memories")) && c->status().contains(nowhere), qPrintable(c->status()));

        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        const Message& a = c->conversation()->at(1);
        QVERIFY(a.error.isEmpty());
        QVERIFY(!a.text.trimmed().isEmpty());  // it answers
        QVERIFY(a.references.isEmpty());
        QVERIFY2(a.notice.startsWith(QStringLiteral("Answered without memories")) && a.notice.contains(nowhere), qPrintable(a.notice));
        QCOMPARE(c->conversation()->data(c->conversation()->index(1), ConversationModel::NoticeRole).toString(), a.notice);
    }

    void aWrongTokenIsUnauthorised() {
        if (!noServer_.isEmpty()) QSKIP(qPrintable(noServer_));
        QTemporaryDir conversations;
        auto c = openChat(conversations);
        QVERIFY(c);
        const QString wrong = writeFile(dir_, QStringLiteral("wrong-token.txt"), "mkb_not_a_token_this_server_knows\n");
        c->kb()->connectServer(url_, wrong, QString());
        QVERIFY(waitLoaded(*c));
        QCOMPARE(c->kb()->state(), QStringLiteral("unauthorised"));
        QVERIFY2(c->kb()->text().contains(QStringLiteral("does not accept the token")) &&
                     c->kb()->text().contains(QStringLiteral("UNAUTHENTICATED")),
                 qPrintable(c->kb()->text()));
        QVERIFY(c->statusIsError());
        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        QVERIFY(!c->conversation()->at(1).text.trimmed().isEmpty());
        QVERIFY2(c->conversation()->at(1).notice.contains(QStringLiteral("Unauthorised")), qPrintable(c->conversation()->at(1).notice));
    }

    void aTokenFileThatCannotBeReadIsRefusedWithItsName() {
        QTemporaryDir conversations;
        auto c = openChat(conversations);
        QVERIFY(c);
        const QString missing = dir_.filePath(QStringLiteral("no-such-token.txt"));
        c->kb()->connectServer(QStringLiteral("grpc://127.0.0.1:1"), missing, QString());
        QVERIFY(waitLoaded(*c));
        QVERIFY(c->kb()->status().missing());
        QVERIFY2(c->kb()->text().contains(missing), qPrintable(c->kb()->text()));
    }

    // A token file that is a FIFO is refused, named, without waiting for a writer: the model
    // loads and answers without memories (it would otherwise never finish loading).
    void aTokenFileThatIsAFifoIsRefusedWithoutWaiting() {
        QTemporaryDir conversations;
        auto c = openChat(conversations);
        QVERIFY(c);
        const QString fifo = dir_.filePath(QStringLiteral("token-fifo"));
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        c->kb()->setTimeoutMs(500);
        c->kb()->connectServer(QStringLiteral("grpc://127.0.0.1:1"), fifo, QString());
        QVERIFY(waitLoaded(*c));
        QVERIFY(c->kb()->status().missing());
        QVERIFY2(c->kb()->text().contains(fifo) && c->kb()->text().contains(QStringLiteral("FIFO")),
                 qPrintable(c->kb()->text()));
    }

    // Last: it stops the server.
    void aServerThatStopsMidConversationIsNoticedUnderTheAnswer() {
        if (!noServer_.isEmpty()) QSKIP(qPrintable(noServer_));
        QTemporaryDir conversations;
        auto c = openChat(conversations);
        QVERIFY(c);
        c->kb()->setTimeoutMs(1000);
        c->kb()->connectServer(url_, tokenFile_, QString());
        QVERIFY(waitLoaded(*c));
        QCOMPARE(c->kb()->state(), QStringLiteral("connected"));
        server_.kill();
        QVERIFY(server_.waitForFinished(10000));
        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        const Message& a = c->conversation()->at(1);
        QVERIFY(!a.text.trimmed().isEmpty());
        QVERIFY(a.references.isEmpty());
        QVERIFY2(a.notice.contains(QStringLiteral("chunks got no memories")) && a.notice.contains(url_), qPrintable(a.notice));
        QCOMPARE(c->kb()->state(), QStringLiteral("unreachable"));
    }

    void cleanupTestCase() {
        if (server_.state() != QProcess::NotRunning) {
            server_.kill();
            server_.waitForFinished(10000);
        }
    }
};

QTEST_MAIN(TestKb)
#include "test_kb.moc"
