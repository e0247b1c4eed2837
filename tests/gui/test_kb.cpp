// The knowledge server from the app: a loopback `mnemo-kb serve` of the default model's bank
// (assets/world/bank) gives each answer its references with scores; an unreachable server, a
// wrong token and a server that stops mid-conversation each leave the chat answering without
// memories and say so, in the knowledge status and under the answer, in words (the client's own
// text in the details), as a warning; a server that answers again is news, not an error. The
// server in use is connected again when its model folder is opened again (a restart, a reload, a
// device switch), and not after "No memories".
#include <QDir>
#include <QElapsedTimer>
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

// What gRPC says when nothing listens on the port (issue 29: shown as it was).
const QString kRefused = QStringLiteral(
    "knowledge server grpc://127.0.0.1:7070: RetrieveMemories failed: UNAVAILABLE: failed to connect to all addresses; last error: "
    "UNKNOWN: ipv4:127.0.0.1:7070: Failed to connect to remote host: Connection refused");

}  // namespace

class TestKb : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QProcess server_;
    QString url_;        // grpc://127.0.0.1:PORT once the server runs
    QString tokenFile_;
    QString noServer_;   // why there is no loopback server ("" when there is one)

    // Serves assets/world/bank on 127.0.0.1:`port` (0: any free port) and sets url_.
    bool startServer(const QString& port) {
        const QString portFile = dir_.filePath(QStringLiteral("port"));
        QFile::remove(portFile);
        server_.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        server_.start(QStringLiteral(MNEMO_BUILD_BIN "/mnemo-kb"),
                      {QStringLiteral("serve"), QStringLiteral(MNEMO_SOURCE_DIR "/assets/world/bank"), QStringLiteral("--listen"),
                       QStringLiteral("127.0.0.1:") + port, QStringLiteral("--insecure"), QStringLiteral("--tokens"),
                       dir_.filePath(QStringLiteral("tokens")), QStringLiteral("--port-file"), portFile, QStringLiteral("--log-quiet")});
        if (!server_.waitForStarted(10000)) return false;
        if (!QTest::qWaitFor([&] { return QFile::exists(portFile) || server_.state() == QProcess::NotRunning; }, 30000)) {
            qWarning("mnemo-kb serve wrote no port file in 30 s");
            return false;
        }
        QFile file(portFile);
        if (!file.open(QIODevice::ReadOnly)) {
            qWarning("mnemo-kb serve ended before serving");
            return false;
        }
        url_ = QStringLiteral("grpc://127.0.0.1:%1").arg(QString::fromLatin1(file.readAll().trimmed()));
        return true;
    }

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
        QVERIFY(startServer(QStringLiteral("0")));
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
        QVERIFY2(c->kb()->text().contains(kbServerName(url_)) && c->kb()->text().contains(QStringLiteral("bank version 1")),
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

    // The client's warnings as the status line shows them: once, in words, with their severity.
    void theClientsWarningsReadInWords() {
        const StatusNotice outage = kbEventNotice(mnemo::KbEvent::Outage, QStringLiteral("grpc://127.0.0.1:7070"), kRefused);
        QCOMPARE(outage.text,
                 QStringLiteral("Knowledge server 127.0.0.1:7070 is not answering (connection refused); answering without memories. Retrying."));
        QCOMPARE(outage.severity, StatusSeverity::Warning);
        QVERIFY2(outage.details.contains(kRefused), qPrintable(outage.details));  // the raw text stays, for the tooltip
        const StatusNotice back = kbEventNotice(mnemo::KbEvent::Recovered, QStringLiteral("grpc://127.0.0.1:7070"), QString());
        QCOMPARE(back.text, QStringLiteral("Knowledge server 127.0.0.1:7070 answers again: memories are back."));
        QCOMPARE(back.severity, StatusSeverity::Info);
        const StatusNotice bank = kbEventNotice(mnemo::KbEvent::BankChanged, QStringLiteral("grpcs://kb.example:443"), QStringLiteral("7"));
        QCOMPARE(bank.text, QStringLiteral("Knowledge server kb.example:443 now serves bank version 7."));
        QCOMPARE(bank.severity, StatusSeverity::Info);
        for (const StatusNotice& n : {outage, back, bank}) {
            QVERIFY2(!n.text.contains(QStringLiteral("knowledge server"), Qt::CaseSensitive), qPrintable(n.text));  // named once
            QVERIFY2(!n.text.contains(QStringLiteral("UNAVAILABLE")), qPrintable(n.text));
        }
        const StatusNotice revoked = kbEventNotice(mnemo::KbEvent::Outage, QStringLiteral("grpc://127.0.0.1:7070"),
                                                   QStringLiteral("RetrieveMemories failed: UNAUTHENTICATED: unknown token"));
        QCOMPARE(revoked.text, QStringLiteral("Knowledge server 127.0.0.1:7070 no longer accepts the token; answering without memories. Retrying."));
        QCOMPARE(kbProblemInWords(QStringLiteral("Info failed: DEADLINE_EXCEEDED: Deadline Exceeded")), QStringLiteral("no answer in time"));
        QCOMPARE(kbProblemInWords(QStringLiteral("UNAVAILABLE: DNS resolution failed for nowhere.invalid:1")),
                 QStringLiteral("the host name is not known"));
        QCOMPARE(kbProblemInWords(QStringLiteral("bank version 1 was made for a llama model")), QString());  // nothing known: shown as it is
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
        // Connecting waits up to the deadline for a server that may be starting: nothing listening reads as no answer in time.
        QCOMPARE(c->kb()->text(), QStringLiteral("Knowledge server 127.0.0.1:1 is not answering (no answer within 500 ms); answering without memories"));
        QVERIFY2(c->kb()->details().contains(nowhere) && c->kb()->details().contains(QStringLiteral("DEADLINE_EXCEEDED")), qPrintable(c->kb()->details()));
        // The status line says it once, in words; the client's text is in its details.
        QVERIFY2(c->status().contains(QStringLiteral("without memories: Knowledge server 127.0.0.1:1 is not answering (no answer within 500 ms)")),
                 qPrintable(c->status()));
        QVERIFY2(!c->status().contains(QStringLiteral("DEADLINE_EXCEEDED")), qPrintable(c->status()));
        QVERIFY2(c->statusDetails().contains(QStringLiteral("DEADLINE_EXCEEDED")), qPrintable(c->statusDetails()));
#endif
        // A warning: the chat goes on, without memories.
        QCOMPARE(c->statusSeverity(), QStringLiteral("warning"));
        QVERIFY(!c->statusIsError());
        QVERIFY2(c->status().contains(QStringLiteral("without memories")) && c->status().contains(QStringLiteral("127.0.0.1:1")),
                 qPrintable(c->status()));

        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        const Message& a = c->conversation()->at(1);
        QVERIFY(a.error.isEmpty());
        QVERIFY(!a.text.trimmed().isEmpty());  // it answers
        QVERIFY(a.references.isEmpty());
        QVERIFY2(a.notice.startsWith(QStringLiteral("Answered without memories: Knowledge server 127.0.0.1:1")), qPrintable(a.notice));
        QCOMPARE(c->conversation()->data(c->conversation()->index(1), ConversationModel::NoticeRole).toString(), a.notice);
    }

    // The server in use is kept with its model folder: a new ChatController on the same settings
    // file (a restart) connects it again when that folder opens, and so do a reload and opening
    // the folder again; after "No memories" a restart does not.
    void theServerInUseIsConnectedAgainAfterARestartAndAReload() {
        if (!noServer_.isEmpty()) QSKIP(qPrintable(noServer_));
        QTemporaryDir folder;
        const QString ini = folder.filePath(QStringLiteral("settings.ini"));
        {
            ChatController c(folder.path(), ini);
            c.model()->loadModel(defaultModelDir());
            QVERIFY(waitLoaded(c));
            c.kb()->connectServer(url_, tokenFile_, QString());
            QVERIFY(waitLoaded(c));
            QCOMPARE(c.kb()->state(), QStringLiteral("connected"));
        }
        ChatController c(folder.path(), ini);
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        QCOMPARE(c.kb()->state(), QStringLiteral("connected"));  // not silently without memories
        QCOMPARE(c.model()->lastLoad().kbTokenFile, tokenFile_);
        QCOMPARE(c.model()->lastLoad().retrieval, QStringLiteral("bm25"));  // the retrieval it ran with
        QVERIFY2(c.model()->line().contains(QStringLiteral("memories: knowledge server")), qPrintable(c.model()->line()));

        c.model()->reloadModel();  // the settings' Reload
        QVERIFY(waitLoaded(c));
        QCOMPARE(c.kb()->state(), QStringLiteral("connected"));
        c.model()->loadModel(defaultModelDir());  // the folder opened again (recent models)
        QVERIFY(waitLoaded(c));
        QCOMPARE(c.kb()->state(), QStringLiteral("connected"));
        const int vulkan = [&] {
            for (int row = 0; row < c.devices()->rowCount(); ++row)
                if (c.devices()->at(row).backend == QStringLiteral("vulkan") && c.devices()->at(row).enabled) return row;
            return -1;
        }();
        if (vulkan >= 0) {  // a device switch
            c.model()->chooseDevice(vulkan);
            QVERIFY(waitLoaded(c));
            QCOMPARE(c.model()->info().backend, QStringLiteral("vulkan"));
            QCOMPARE(c.kb()->state(), QStringLiteral("connected"));
        }
        QVERIFY(c.send(kQuestion));
        QVERIFY(waitAnswered(c));
        QVERIFY(!c.conversation()->at(1).references.isEmpty());  // it answers with memories

        c.kb()->useNoMemories();  // remembered too
        QVERIFY(waitLoaded(c));
        QCOMPARE(c.kb()->state(), QStringLiteral("off"));
        ChatController again(folder.path(), ini);
        QCOMPARE(again.kb()->url(), url_);  // the panel still offers it
        again.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(again));
        QCOMPARE(again.kb()->state(), QStringLiteral("off"));
    }

    // A bank is made for one model: another model folder opens without the server.
    void anotherModelFolderOpensWithoutTheServer() {
        QTemporaryDir folder;
        const QString ini = folder.filePath(QStringLiteral("settings.ini"));
        AppSettings(ini).setKbServer({QStringLiteral("grpc://127.0.0.1:1"), {}, {}, QStringLiteral("/some/other/model"), QStringLiteral("bm25")});
        ChatController c(folder.path(), ini);
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        QCOMPARE(c.kb()->state(), QStringLiteral("off"));
        QVERIFY(c.model()->lastLoad().kbUrl.isEmpty());
    }

    // A server in use that does not answer at start never stops the load: the model loads
    // without memories and says so, as a warning.
    void anUnreachableServerInUseAtStartStillLoads() {
        QTemporaryDir folder;
        const QString ini = folder.filePath(QStringLiteral("settings.ini"));
        AppSettings(ini).setKbServer({QStringLiteral("grpc://127.0.0.1:1"), {}, {}, defaultModelDir(), QStringLiteral("bm25")});
        ChatController c(folder.path(), ini);
        c.kb()->setTimeoutMs(500);
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        QCOMPARE(c.model()->lastLoad().kbUrl, QStringLiteral("grpc://127.0.0.1:1"));
        QVERIFY(c.kb()->status().missing());
        QCOMPARE(c.statusSeverity(), QStringLiteral("warning"));
        QVERIFY2(c.status().contains(QStringLiteral("without memories")), qPrintable(c.status()));
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
        QVERIFY2(c->kb()->text().contains(QStringLiteral("does not accept the token")), qPrintable(c->kb()->text()));
        QVERIFY2(c->kb()->details().contains(QStringLiteral("UNAUTHENTICATED")), qPrintable(c->kb()->details()));
        QCOMPARE(c->statusSeverity(), QStringLiteral("warning"));
        QVERIFY(c->send(kQuestion));
        QVERIFY(waitAnswered(*c));
        QVERIFY(!c->conversation()->at(1).text.trimmed().isEmpty());
        QVERIFY2(c->conversation()->at(1).notice.contains(QStringLiteral("does not accept the token")), qPrintable(c->conversation()->at(1).notice));
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
        QVERIFY2(a.notice.contains(QStringLiteral("got no memories")) && a.notice.contains(kbServerName(url_)), qPrintable(a.notice));
        QCOMPARE(c->kb()->state(), QStringLiteral("unreachable"));
        // The outage in the status line: once, in words, a warning; the client's text in the details.
        QVERIFY2(c->status().startsWith(QStringLiteral("Knowledge server %1 is not answering (").arg(kbServerName(url_))) &&
                     c->status().endsWith(QStringLiteral("answering without memories. Retrying.")),
                 qPrintable(c->status()));
        QVERIFY2(!c->status().contains(QStringLiteral("knowledge server grpc")) && !c->status().contains(QStringLiteral("UNAVAILABLE")),
                 qPrintable(c->status()));
        QCOMPARE(c->statusSeverity(), QStringLiteral("warning"));
        QVERIFY2(c->statusDetails().contains(url_), qPrintable(c->statusDetails()));

        // The server comes back on the same port: the next answer has its memories again, and the
        // status line says so as news, not in red.
        QVERIFY(startServer(url_.section(QLatin1Char(':'), -1)));
        // The client calls again once its backoff (doubling up to 8 s) has passed, at the next
        // chunk an answer retrieves for: ask until it does.
        QElapsedTimer waited;
        waited.start();
        while (!c->status().contains(QStringLiteral("memories are back")) && waited.elapsed() < 30000) {
            QVERIFY(c->regenerate());
            QVERIFY(waitAnswered(*c));
            QTest::qWait(1000);  // the warning comes by a queued signal
        }
        QVERIFY2(c->status().contains(QStringLiteral("memories are back")), qPrintable(c->status()));
        QCOMPARE(c->status(), QStringLiteral("Knowledge server %1 answers again: memories are back.").arg(kbServerName(url_)));
        QCOMPARE(c->statusSeverity(), QStringLiteral("info"));
        QVERIFY(!c->statusIsError());
        QCOMPARE(c->kb()->state(), QStringLiteral("connected"));
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
