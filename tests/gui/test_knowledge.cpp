// The knowledge server from the app: a loopback `mnemo-kb serve` of the default model's bank
// (assets/world/bank) gives each answer its references with scores; an unreachable server, a
// wrong token and a server that stops mid-conversation each leave the chat answering without
// memories and say so, in the knowledge status and under the answer.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include "chat_controller.hpp"
#include "gui_test_util.hpp"

using namespace mnemo::gui;
using namespace mnemo::gui::test;

namespace {

bool waitLoaded(ChatController& c) { return QTest::qWaitFor([&] { return !c.loading(); }, 60000) && c.modelLoaded(); }
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
    c->loadModel(defaultModelDir());
    if (!waitLoaded(*c)) return nullptr;
    c->setProperty("temperature", 0.0);
    c->setProperty("maxTokens", 16);
    return c;
}

const QString kQuestion = QStringLiteral("Where was Tour Hujert born?");

}  // namespace

class TestKnowledge : public QObject {
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
        QCOMPARE(c->knowledgeState(), QStringLiteral("off"));
        c->connectKnowledgeServer(url_, tokenFile_, QString());
        QVERIFY(waitLoaded(*c));
        QCOMPARE(c->knowledgeState(), QStringLiteral("connected"));
        QVERIFY2(c->knowledgeText().contains(url_) && c->knowledgeText().contains(QStringLiteral("bank version 1")),
                 qPrintable(c->knowledgeText()));
        QVERIFY2(!c->statusIsError(), qPrintable(c->status()));
        QVERIFY2(c->modelLine().contains(QStringLiteral("memories: knowledge server")), qPrintable(c->modelLine()));
        QCOMPARE(c->kbUrl(), url_);

        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        const Message& a = c->conversation()->at(1);
        QVERIFY(a.error.isEmpty());
        QVERIFY2(a.notice.isEmpty(), qPrintable(a.notice));
        QVERIFY(!a.recalls.isEmpty());
        for (const Recall& r : a.recalls) {
            QVERIFY(r.hasScore);           // the server ranks: each reference has its score
            QVERIFY(!r.text.isEmpty());    // and its text, for the references panel
            QCOMPARE(r.source, QStringLiteral("knowledge.jsonl"));
        }
        qInfo("answer %s with %d references, first: %s (score %.3f)", qPrintable(a.text.trimmed()), static_cast<int>(a.recalls.size()),
              qPrintable(a.recalls.first().title), a.recalls.first().score);

        c->disconnectKnowledge();
        QVERIFY(waitLoaded(*c));
        QCOMPARE(c->knowledgeState(), QStringLiteral("off"));
        QVERIFY(!c->modelLine().contains(QStringLiteral("memories:")));
    }

    void anUnreachableServerLeavesTheChatAnsweringAndSaysSo() {
        QTemporaryDir conversations;
        auto c = openChat(conversations);
        QVERIFY(c);
        c->setKnowledgeTimeoutMs(500);
        const QString nowhere = QStringLiteral("grpc://127.0.0.1:1");  // nothing listens on port 1
        c->connectKnowledgeServer(nowhere, QString(), QString());
        QVERIFY(waitLoaded(*c));  // the model loads all the same
#ifdef MNEMO_KB_SERVER
        QCOMPARE(c->knowledgeState(), QStringLiteral("unreachable"));
        QVERIFY2(c->knowledgeText().startsWith(QStringLiteral("Unreachable: grpc://127.0.0.1:1 does not answer")), qPrintable(c->knowledgeText()));
#endif
        QVERIFY(c->statusIsError());
        QVERIFY2(c->status().contains(QStringLiteral("without memories")) && c->status().contains(nowhere), qPrintable(c->status()));

        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        const Message& a = c->conversation()->at(1);
        QVERIFY(a.error.isEmpty());
        QVERIFY(!a.text.trimmed().isEmpty());  // it answers
        QVERIFY(a.recalls.isEmpty());
        QVERIFY2(a.notice.startsWith(QStringLiteral("Answered without memories")) && a.notice.contains(nowhere), qPrintable(a.notice));
        QCOMPARE(c->conversation()->data(c->conversation()->index(1), ConversationModel::NoticeRole).toString(), a.notice);
    }

    void aWrongTokenIsUnauthorised() {
        if (!noServer_.isEmpty()) QSKIP(qPrintable(noServer_));
        QTemporaryDir conversations;
        auto c = openChat(conversations);
        QVERIFY(c);
        const QString wrong = writeFile(dir_, QStringLiteral("wrong-token.txt"), "mkb_not_a_token_this_server_knows\n");
        c->connectKnowledgeServer(url_, wrong, QString());
        QVERIFY(waitLoaded(*c));
        QCOMPARE(c->knowledgeState(), QStringLiteral("unauthorised"));
        QVERIFY2(c->knowledgeText().contains(QStringLiteral("does not accept the token")) &&
                     c->knowledgeText().contains(QStringLiteral("UNAUTHENTICATED")),
                 qPrintable(c->knowledgeText()));
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
        c->connectKnowledgeServer(QStringLiteral("grpc://127.0.0.1:1"), missing, QString());
        QVERIFY(waitLoaded(*c));
        QVERIFY(c->knowledge().missing());
        QVERIFY2(c->knowledgeText().contains(missing), qPrintable(c->knowledgeText()));
    }

    // Last: it stops the server.
    void aServerThatStopsMidConversationIsNoticedUnderTheAnswer() {
        if (!noServer_.isEmpty()) QSKIP(qPrintable(noServer_));
        QTemporaryDir conversations;
        auto c = openChat(conversations);
        QVERIFY(c);
        c->setKnowledgeTimeoutMs(1000);
        c->connectKnowledgeServer(url_, tokenFile_, QString());
        QVERIFY(waitLoaded(*c));
        QCOMPARE(c->knowledgeState(), QStringLiteral("connected"));
        server_.kill();
        QVERIFY(server_.waitForFinished(10000));
        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        const Message& a = c->conversation()->at(1);
        QVERIFY(!a.text.trimmed().isEmpty());
        QVERIFY(a.recalls.isEmpty());
        QVERIFY2(a.notice.contains(QStringLiteral("chunks got no memories")) && a.notice.contains(url_), qPrintable(a.notice));
        QCOMPARE(c->knowledgeState(), QStringLiteral("unreachable"));
    }

    void cleanupTestCase() {
        if (server_.state() != QProcess::NotRunning) {
            server_.kill();
            server_.waitForFinished(10000);
        }
    }
};

QTEST_MAIN(TestKnowledge)
#include "test_knowledge.moc"
