// ChatController driven as the QML drives it, on the default model: streaming into the
// conversation, stop, regenerate, edit, a device switch mid-conversation, failed loads, and
// conversations restored at start.
#include <QDir>
#include <algorithm>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <sys/stat.h>

#include "chat_controller.hpp"
#include "gui_test_util.hpp"

using namespace mnemo::gui;
using namespace mnemo::gui::test;

namespace {

Question trained(int n) { return trainedQuestion(n); }

bool waitLoaded(ChatController& c) { return QTest::qWaitFor([&] { return !c.model()->loading(); }, 60000) && c.model()->loaded(); }
bool waitAnswered(ChatController& c) { return QTest::qWaitFor([&] { return !c.busy(); }, 60000); }

void makeGreedy(ChatController& c) {
    c.settings()->setProperty("temperature", 0.0);
    c.settings()->setProperty("maxTokens", 32);
}

}  // namespace

class TestChatController : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void saysWhyItCannotSendWithoutAModel() {
        QTemporaryDir folder;
        ChatController c(folder.path());
        QVERIFY(!c.send(QStringLiteral("Hello?")));
        QVERIFY(c.statusIsError());
        QVERIFY2(c.status().contains(QStringLiteral("No model is loaded")), qPrintable(c.status()));
        QCOMPARE(c.conversation()->count(), 0);
        QCOMPARE(c.model()->line(), QStringLiteral("No model loaded"));
    }

    void streamsAnAnswerIntoTheConversation() {
        QTemporaryDir folder;
        ChatController c(folder.path());
        c.model()->loadModel(defaultModelDir());
        QVERIFY(c.model()->loading());
        QVERIFY(waitLoaded(c));
        QVERIFY2(c.model()->line().contains(QStringLiteral("memory3")), qPrintable(c.model()->line()));
        QVERIFY(c.model()->line().contains(QStringLiteral("cpu:0")));
        makeGreedy(c);

        QSignalSpy changes(c.conversation(), &QAbstractItemModel::dataChanged);
        const Question q = trained(0);
        QVERIFY(c.send(q.question));
        QVERIFY(c.busy());  // send returns at once; the answer streams in
        QCOMPARE(c.conversation()->count(), 2);
        QVERIFY(c.conversation()->at(1).streaming);
        QCOMPARE(c.title(), q.question);
        QVERIFY(waitAnswered(c));
        const Message& a = c.conversation()->at(1);
        QCOMPARE(a.text.trimmed(), q.answer);
        QVERIFY(!a.streaming);
        QCOMPARE(a.finish, QStringLiteral("end of turn"));
        QVERIFY(a.tokensPerSecond > 0);
        QVERIFY(a.device.startsWith(QStringLiteral("cpu:0")));
        QVERIFY(changes.size() >= 2);  // at least one piece of text, then the result
        QVERIFY2(c.performance().contains(QStringLiteral("tokens/s")), qPrintable(c.performance()));
        // Saved as soon as it was answered.
        QVERIFY(QFile::exists(folder.filePath(c.conversationId() + QStringLiteral(".json"))));
    }

    void stopKeepsWhatArrivedAndIgnoresTheRest() {
        QTemporaryDir folder;
        ChatController c(folder.path());
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        // Almost flat sampling: a long answer to stop in the middle.
        c.settings()->setProperty("temperature", 20.0);
        c.settings()->setProperty("topK", 0);
        c.settings()->setProperty("topP", 1.0);
        c.settings()->setProperty("minP", 0.0);
        c.settings()->setProperty("maxTokens", 1500);
        // A seed known to ramble on (each answer draws its own otherwise, and one in a few
        // hundred ends at once, before Stop).
        c.settings()->setProperty("fixedSeed", true);
        c.settings()->setProperty("seed", 0xC0FFEE);
        QVERIFY(c.send(trained(0).question));
        QVERIFY(QTest::qWaitFor([&] { return !c.conversation()->at(1).text.isEmpty(); }, 60000));
        c.stop();
        QVERIFY(!c.busy());  // at once, without waiting for the worker
        const QString kept = c.conversation()->at(1).text;
        QCOMPARE(c.conversation()->at(1).finish, QStringLiteral("stopped"));
        QVERIFY(!c.conversation()->at(1).streaming);
        QTest::qWait(300);  // tokens still in flight are ignored
        QCOMPARE(c.conversation()->at(1).text, kept);
        // ...but the stopped answer gets its measurements from the worker's result.
        QVERIFY(QTest::qWaitFor([&] { return c.conversation()->at(1).tokens > 0; }, 5000));
        QVERIFY(c.conversation()->at(1).tokensPerSecond > 0);
        QCOMPARE(c.conversation()->at(1).finish, QStringLiteral("stopped"));
        // Stopped after its first token (a slow machine, a sanitizer build) it has no decode rate.
        const QString rate = c.conversation()->at(1).tokens > 1 ? QStringLiteral("tokens/s") : QStringLiteral("one token");
        QVERIFY2(c.performance().contains(rate), qPrintable(c.performance()));

        // The next question is answered normally.
        makeGreedy(c);
        c.newConversation();
        const Question q = trained(0);
        QVERIFY(c.send(q.question));
        QVERIFY(waitAnswered(c));
        QCOMPARE(c.conversation()->at(1).text.trimmed(), q.answer);
    }

    void regenerateReplacesTheLastAnswer() {
        QTemporaryDir folder;
        ChatController c(folder.path());
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        makeGreedy(c);
        const Question q = trained(0);
        QVERIFY(c.send(q.question));
        QVERIFY(waitAnswered(c));
        QVERIFY(c.regenerate());
        QCOMPARE(c.conversation()->count(), 2);
        QVERIFY(c.conversation()->at(1).streaming);
        QVERIFY(c.conversation()->at(1).text.isEmpty());
        QVERIFY(waitAnswered(c));
        QCOMPARE(c.conversation()->count(), 2);
        QCOMPARE(c.conversation()->at(1).text.trimmed(), q.answer);  // greedy: the same answer again
    }

    void editContinuesFromTheEditedMessage() {
        QTemporaryDir folder;
        ChatController c(folder.path());
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        makeGreedy(c);
        QVERIFY(c.send(trained(0).question));
        QVERIFY(waitAnswered(c));
        QVERIFY(c.send(trained(1).question));
        QVERIFY(waitAnswered(c));
        QCOMPARE(c.conversation()->count(), 4);

        QVERIFY(!c.editMessage(1, QStringLiteral("an answer is not yours to edit")));
        QVERIFY(c.statusIsError());
        const Question q = trained(1);
        QVERIFY(c.editMessage(0, q.question));
        QCOMPARE(c.conversation()->count(), 2);  // everything after the edited message is gone
        QCOMPARE(c.conversation()->at(0).text, q.question);
        QVERIFY(waitAnswered(c));
        QCOMPARE(c.conversation()->at(1).text.trimmed(), q.answer);
    }

    // Issue 29: while an answer streamed, the strip showed the previous answer's figures; after
    // another model was opened it mixed both ("context 592 / 2176").
    void theStripShowsTheAnswerInProgressAndForgetsAnotherModel() {
        QTemporaryDir folder, copy;
        QVERIFY(copyDefaultModel(copy.path()));
        ChatController c(folder.path());
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        makeGreedy(c);
        QCOMPARE(c.performance(), QStringLiteral("No answer yet"));
        QVERIFY(c.send(trained(0).question));
        QVERIFY(waitAnswered(c));
        const QString first = c.performance();
        QVERIFY2(first.contains(QStringLiteral("tokens/s")) && first.contains(QStringLiteral(" tokens ·")), qPrintable(first));
        QStringList seen;
        connect(&c, &ChatController::performanceChanged, this, [&] { seen << c.performance(); });
        QVERIFY(c.send(trained(1).question));
        QVERIFY2(c.performance().startsWith(QStringLiteral("Answering…")), qPrintable(c.performance()));
        QVERIFY(waitAnswered(c));
        for (const QString& shown : seen.mid(0, seen.size() - 1))  // all but the final figures
            QVERIFY2(shown.startsWith(QStringLiteral("Answering…")), qPrintable(shown));
        QVERIFY(seen.join(QLatin1Char('\n')).contains(QStringLiteral("first token")));  // live, once a piece came
        // The final figures: a decode rate, or for a one-token answer (which has none) "one token".
        const int tokens = c.conversation()->at(3).tokens;
        QVERIFY2(c.performance().startsWith(tokens > 1 ? QStringLiteral("%1 tokens/s").arg(c.conversation()->at(3).tokensPerSecond, 0, 'f', 1)
                                                       : QStringLiteral("one token · first token")),
                 qPrintable(QStringLiteral("%1 tokens: %2").arg(tokens).arg(c.performance())));
        disconnect(&c, &ChatController::performanceChanged, this, nullptr);

        c.model()->loadModel(copy.path());  // another folder: another model for the app
        QVERIFY(waitLoaded(c));
        QCOMPARE(c.model()->dir(), copy.path());
        QCOMPARE(c.performance(), QStringLiteral("No answer yet"));
    }

    // Issue 29: a red error stayed after Ctrl+N or opening another conversation.
    void anErrorDoesNotOutliveItsConversation() {
        QTemporaryDir folder;
        ChatController c(folder.path());
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        makeGreedy(c);
        QVERIFY(c.send(trained(0).question));
        QVERIFY(waitAnswered(c));
        const QString first = c.conversationId();
        QVERIFY(!c.editMessage(1, QStringLiteral("not yours")));
        QVERIFY(c.statusIsError());
        c.newConversation();
        QVERIFY(!c.statusIsError());
        QCOMPARE(c.status(), QString());
        QVERIFY(!c.editMessage(5, QStringLiteral("no such message")));
        QVERIFY(c.statusIsError());
        QVERIFY(c.openConversation(first));
        QVERIFY(!c.statusIsError());
    }

    // Issue 29: exporting moved the conversation to the top of the list.
    void exportingChangesNothingInTheConversation() {
        QTemporaryDir folder, out;
        ChatController c(folder.path());
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        makeGreedy(c);
        QVERIFY(c.send(trained(0).question));
        QVERIFY(waitAnswered(c));
        const QString older = c.conversationId();
        QTest::qWait(20);  // `updated` has milliseconds
        c.newConversation();
        QVERIFY(c.send(trained(1).question));
        QVERIFY(waitAnswered(c));
        const QString newer = c.conversationId();
        QVERIFY(c.openConversation(older));
        const QDateTime updated = c.conversations()->find(older)->updated;
        QVERIFY(c.exportConversation(out.filePath(QStringLiteral("a.md")), QStringLiteral("markdown")));
        QVERIFY(c.exportConversation(out.filePath(QStringLiteral("a.json")), QStringLiteral("json")));
        QCOMPARE(c.conversations()->idAt(0), newer);
        QCOMPARE(c.conversations()->find(older)->updated, updated);
    }

    // Issue 29: Delete had no confirmation (the QML asks) and no undo.
    void aDeletedConversationCanBeBroughtBack() {
        QTemporaryDir folder;
        const QString kept = folder.filePath(QStringLiteral("left-by-a-crash.json.deleted"));
        {
            QFile f(kept);
            QVERIFY(f.open(QIODevice::WriteOnly));
        }
        ChatController c(folder.path());
        QVERIFY2(!QFile::exists(kept), "a deletion the app could not finish is done at the next start");
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        makeGreedy(c);
        QVERIFY(c.send(trained(0).question));
        QVERIFY(waitAnswered(c));
        const QString id = c.conversationId();
        const QString file = folder.filePath(id + QStringLiteral(".json"));
        QVERIFY(c.deleteConversation(id));
        QCOMPARE(c.conversations()->rowCount(), 0);
        QCOMPARE(c.conversation()->count(), 0);  // it was open: a new one is
        QVERIFY(c.deletion()->pending());
        QCOMPARE(c.deletion()->title(), trained(0).question);
        QVERIFY(!QFile::exists(file));
        QVERIFY(c.undoDelete());
        QVERIFY(QFile::exists(file));
        QCOMPARE(c.conversations()->idAt(0), id);
        QCOMPARE(c.conversationId(), id);  // open again, as it was
        QCOMPARE(c.conversation()->count(), 2);
        QVERIFY(!c.deletion()->pending());

        // When the time is up it is gone for good.
        c.deletion()->setUndoMilliseconds(50);
        QVERIFY(c.deleteConversation(id));
        QVERIFY(QTest::qWaitFor([&] { return !c.deletion()->pending(); }, 5000));
        QVERIFY(!c.undoDelete());
        QVERIFY(QDir(folder.path()).entryList(QDir::Files).isEmpty());
    }

    // Issue 29: a conversation longer than the context was a hard error. The answer fails with
    // the offer; taking it drops the oldest messages from then on and answers.
    void offersToDropTheOldestMessagesWhenTheContextIsFull() {
        QTemporaryDir folder;
        ChatController c(folder.path());
        c.settings()->setProperty("contextLength", 64);
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        QCOMPARE(c.model()->info().contextLength, 64);
        makeGreedy(c);
        c.settings()->setProperty("maxTokens", 8);
        const Question q = trained(0);
        for (int i = 0; i < 20 && !c.contextOverflow(); ++i) {
            QVERIFY(c.send(q.question));
            QVERIFY(waitAnswered(c));
        }
        QVERIFY2(c.contextOverflow(), qPrintable(c.status()));
        QVERIFY(c.statusIsError());
        const int messages = c.conversation()->count();
        QVERIFY(c.dropOldestAndContinue());
        QVERIFY(!c.contextOverflow());
        QVERIFY(waitAnswered(c));
        QVERIFY(c.settings()->property("dropOldestTurns").toBool());
        QCOMPARE(c.conversation()->count(), messages);  // the failed answer is replaced, not kept
        const Message& a = c.conversation()->at(messages - 1);
        QVERIFY2(a.error.isEmpty(), qPrintable(a.error));
        QCOMPARE(a.text.trimmed(), q.answer);
        QVERIFY(a.droppedMessages >= 2);
        QCOMPARE(c.conversation()->data(c.conversation()->index(messages - 1), ConversationModel::DroppedMessagesRole).toInt(),
                 a.droppedMessages);
    }

    // Issue 29: a context of 100,000 was taken for a model trained on fewer positions.
    void clampsAContextPastTheTrainedOneAndSaysSo() {
        QTemporaryDir folder;
        ChatController c(folder.path());
        c.settings()->setProperty("contextLength", 100000);
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        const int trainedLength = c.model()->trainedContext();
        QVERIFY(trainedLength > 0);
        QCOMPARE(c.model()->info().contextLength, trainedLength);
        QVERIFY(!c.statusIsError());
        QVERIFY2(c.status().contains(QStringLiteral("100000")) && c.status().contains(QString::number(trainedLength)),
                 qPrintable(c.status()));
    }

    void switchesCpuToVulkanKeepingTheConversation() {
        const QString why = noVulkanReason();
        if (!why.isEmpty()) QSKIP(qPrintable(why));
        QTemporaryDir folder;
        ChatController c(folder.path());
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        makeGreedy(c);
        const Question q = trained(0);
        QVERIFY(c.send(q.question));
        QVERIFY(waitAnswered(c));
        const QString id = c.conversationId();

        const int vulkan = c.devices()->rowOf(QStringLiteral("vulkan"), 0);
        QVERIFY(vulkan > 0);
        c.model()->chooseDevice(vulkan);
        QVERIFY(c.model()->loading());
        QVERIFY(waitLoaded(c));
        QVERIFY2(!c.statusIsError(), qPrintable(c.status()));
        QCOMPARE(c.model()->deviceRow(), vulkan);
        QVERIFY(c.model()->line().contains(QStringLiteral("vulkan:0")));
        QCOMPARE(c.conversationId(), id);  // the same conversation, every message kept
        QCOMPARE(c.conversation()->count(), 2);
        QCOMPARE(c.conversation()->at(1).text.trimmed(), q.answer);

        QVERIFY(c.regenerate());  // answered again, now on Vulkan
        QVERIFY(waitAnswered(c));
        QCOMPARE(c.conversation()->at(1).text.trimmed(), q.answer);
        QVERIFY2(c.conversation()->at(1).device.startsWith(QStringLiteral("vulkan:0")), qPrintable(c.conversation()->at(1).device));
    }

    void failedLoadKeepsTheModelRunningAndSaysWhy() {
        QTemporaryDir folder;
        ChatController c(folder.path());
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        const QString line = c.model()->line();
        QTemporaryDir broken;
        c.model()->loadModel(broken.path());  // an empty folder
        QVERIFY(QTest::qWaitFor([&] { return !c.model()->loading(); }, 60000));
        QVERIFY(c.statusIsError());
        QVERIFY2(c.status().contains(QStringLiteral("has no config.json")), qPrintable(c.status()));
        QVERIFY2(c.status().contains(QStringLiteral("Still running on cpu:0")), qPrintable(c.status()));
        QCOMPARE(c.model()->line(), line);

        // A row that cannot be chosen (a backend without devices, or not in this build) says why.
        for (int row = 0; row < c.devices()->rowCount(); ++row) {
            if (c.devices()->isEnabled(row)) continue;
            c.model()->chooseDevice(row);
            QVERIFY(c.statusIsError());
            QVERIFY2(c.status().contains(QStringLiteral("cannot be chosen")), qPrintable(c.status()));
            QCOMPARE(c.model()->deviceRow(), c.devices()->rowOf(QStringLiteral("cpu"), 0));
            break;
        }

        makeGreedy(c);
        const Question q = trained(0);
        QVERIFY(c.send(q.question));
        QVERIFY(waitAnswered(c));
        QCOMPARE(c.conversation()->at(1).text.trimmed(), q.answer);
    }

    void keepsSamplingSettingsPerModelAndRecentModels() {
        QTemporaryDir folder;
        const QString ini = folder.filePath(QStringLiteral("settings.ini"));
        {
            ChatController c(folder.path(), ini);
            QVERIFY(c.model()->recentModels().isEmpty());
            c.model()->loadModel(defaultModelDir());
            QVERIFY(waitLoaded(c));
            c.settings()->setProperty("temperature", 0.3);
            c.settings()->setProperty("topK", 7);
            QCOMPARE(c.kb()->property("retrieval").toString(), QStringLiteral("bm25"));  // the default
            c.kb()->setProperty("retrieval", QStringLiteral("vector"));
        }
        ChatController c(folder.path(), ini);
        QCOMPARE(c.model()->recentModels(), QStringList{defaultModelDir()});
        QCOMPARE(c.settings()->property("temperature").toDouble(), 0.8);  // the defaults until the model loads
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        QCOMPARE(c.settings()->property("temperature").toDouble(), 0.3);
        QCOMPARE(c.settings()->property("topK").toInt(), 7);
        QCOMPARE(c.kb()->property("retrieval").toString(), QStringLiteral("vector"));
        QCOMPARE(c.settings()->sampling().topK, 7);
    }

    void keepsContextLengthThreadsAndTheKnowledgeServerAndLoadsWithThem() {
        QTemporaryDir folder;
        const QString ini = folder.filePath(QStringLiteral("settings.ini"));
        const QString token = folder.filePath(QStringLiteral("no-such-token.txt"));
        {
            ChatController c(folder.path(), ini);
            c.model()->loadModel(defaultModelDir());
            QVERIFY(waitLoaded(c));
            QVERIFY(c.model()->info().contextLength != 512);
            c.settings()->setProperty("contextLength", 512);
            c.settings()->setProperty("threads", 1);
            c.model()->reloadModel();  // they apply when the model loads
            QVERIFY(waitLoaded(c));
            QCOMPARE(c.model()->info().contextLength, 512);
            QVERIFY2(c.model()->line().contains(QStringLiteral("context 512")), qPrintable(c.model()->line()));
            c.kb()->setTimeoutMs(300);
            c.kb()->connectServer(QStringLiteral("grpc://127.0.0.1:1"), token, QString());
            QVERIFY(waitLoaded(c));
            QCOMPARE(c.model()->info().contextLength, 512);  // a reload for memories keeps them
        }
        ChatController c(folder.path(), ini);
        QCOMPARE(c.kb()->url(), QStringLiteral("grpc://127.0.0.1:1"));  // the panel starts from the last server
        QCOMPARE(c.kb()->tokenFile(), token);
        c.model()->loadModel(defaultModelDir());
        // Read before the load starts, so that the load uses them.
        QCOMPARE(c.settings()->property("contextLength").toInt(), 512);
        QCOMPARE(c.settings()->property("threads").toInt(), 1);
        QVERIFY(waitLoaded(c));
        QCOMPARE(c.model()->info().contextLength, 512);
        // The server in use with this folder is connected again (its token file is missing here:
        // refused, and the model answers without memories); test_kb.cpp checks it with a real server.
        QCOMPARE(c.model()->lastLoad().kbUrl, QStringLiteral("grpc://127.0.0.1:1"));
        QVERIFY(c.kb()->status().missing());
    }

    void fastestMeasuresEachDeviceAndCachesTheChoice() {
        QTemporaryDir folder;
        const QString ini = folder.filePath(QStringLiteral("settings.ini"));
        {
            ChatController c(folder.path(), ini);
            c.model()->loadModel(defaultModelDir());
            QVERIFY(waitLoaded(c));
            c.model()->chooseDevice(DeviceModel::kFastestRow);
            QVERIFY(c.model()->loading());  // measuring, on the benchmark's thread
            QVERIFY(waitLoaded(c));
            QVERIFY2(!c.statusIsError(), qPrintable(c.status()));
            QCOMPARE(c.fastestDevice()->benchmarkRuns(), 1);
            const FastestChoice a = c.fastestDevice()->choice();
            QVERIFY(a.valid() && !a.fromCache);
            QCOMPARE(a.measured.size(), c.devices()->choosable().size());
            double best = 0.0;
            for (const DeviceMeasurement& m : a.measured) {
                QVERIFY2(m.ok(), qPrintable(m.label + QStringLiteral(": ") + m.error));
                QVERIFY(m.tokensPerSecond > 0);
                best = std::max(best, m.tokensPerSecond);
            }
            for (const DeviceMeasurement& m : a.measured)
                if (m.backend == a.backend && m.device == a.device) QCOMPARE(m.tokensPerSecond, best);
            QCOMPARE(c.model()->info().backend, a.backend);  // and the model runs there
            QCOMPARE(c.model()->info().device, a.device);
            QCOMPARE(c.model()->deviceRow(), DeviceModel::kFastestRow);
            QVERIFY2(c.fastestDevice()->text().contains(QStringLiteral("tokens/s (chosen)")), qPrintable(c.fastestDevice()->text()));
            QCOMPARE(c.devices()->at(DeviceModel::kFastestRow).detail, c.fastestDevice()->text());
            qInfo("%s", qPrintable(c.fastestDevice()->text()));
        }
        ChatController c(folder.path(), ini);
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        c.model()->chooseDevice(DeviceModel::kFastestRow);
        QVERIFY(waitLoaded(c));
        QCOMPARE(c.fastestDevice()->benchmarkRuns(), 0);  // the same model and devices: the figures come from the cache
        QVERIFY(c.fastestDevice()->choice().fromCache);
        QVERIFY2(c.fastestDevice()->text().contains(QStringLiteral("cached")), qPrintable(c.fastestDevice()->text()));
        QCOMPARE(c.model()->info().backend, c.fastestDevice()->choice().backend);
        // A device chosen by hand ends Fastest.
        const int cpu = c.devices()->rowOf(QStringLiteral("cpu"), 0);
        c.model()->chooseDevice(cpu);
        QVERIFY(waitLoaded(c));
        QVERIFY(!c.fastestDevice()->active());
        QCOMPARE(c.model()->deviceRow(), cpu);
    }

    void findsCodeBlocksToCopy() {
        ChatController c(QDir::tempPath() + QStringLiteral("/mnemo-chat-unused"));
        QCOMPARE(c.codeBlocks(QStringLiteral("Try:\n\n```sh\nmnemo run\n```\ntext\n~~~~\na\n```\nb\n~~~~\n")),
                 (QStringList{QStringLiteral("mnemo run"), QStringLiteral("a\n```\nb")}));
        QCOMPARE(c.codeBlocks(QStringLiteral("```\nstill streaming")), QStringList{QStringLiteral("still streaming")});
        QVERIFY(c.codeBlocks(QStringLiteral("no code")).isEmpty());
    }

    void anOvertakenLoadStillShowsWhatRuns() {
        QTemporaryDir folder;
        ChatController c(folder.path());
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
        QTemporaryDir copy;
        QVERIFY(copyDefaultModel(copy.path()));
        QTemporaryDir empty;
        c.model()->loadModel(copy.path());   // loads fine on the worker...
        c.model()->loadModel(empty.path());  // ...but is overtaken by this one, which fails
        QVERIFY(QTest::qWaitFor([&] { return !c.model()->loading(); }, 60000));
        QVERIFY(c.statusIsError());
        QVERIFY2(c.status().contains(QStringLiteral("has no config.json")), qPrintable(c.status()));
        QCOMPARE(c.model()->dir(), copy.path());  // what the worker runs now, not the first model
    }

    // A settings file and a conversation the app cannot use are named in notices() until
    // dismissed, and in the status at start; the app runs all the same.
    void namesTheFilesItCannotUse() {
        QTemporaryDir folder;
        const QString ini = folder.filePath(QStringLiteral("settings.ini"));
        const QString fifo = folder.filePath(QStringLiteral("fifo.json"));
        QCOMPARE(::mkfifo(QFile::encodeName(ini).constData(), 0600), 0);
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        ChatController c(folder.path(), ini);
        QSignalSpy changed(&c, &ChatController::noticesChanged);
        c.restoreLatest();
        QCOMPARE(c.notices().size(), 2);
        QVERIFY2(c.notices().at(0).startsWith(ini + QStringLiteral(": ")), qPrintable(c.notices().join(QLatin1Char('\n'))));
        QVERIFY2(c.notices().at(1).startsWith(fifo + QStringLiteral(": ")), qPrintable(c.notices().join(QLatin1Char('\n'))));
        QVERIFY(c.statusIsError());
        QVERIFY2(c.status().contains(ini) && c.status().contains(fifo), qPrintable(c.status()));
        c.dismissNotices();
        QVERIFY(c.notices().isEmpty());
        QCOMPARE(changed.size(), 1);
        c.model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(c));
    }

    void restoresTheLatestConversationAtStart() {
        QTemporaryDir folder;
        QString id, answer;
        {
            ChatController c(folder.path());
            c.model()->loadModel(defaultModelDir());
            QVERIFY(waitLoaded(c));
            makeGreedy(c);
            c.setSystemPrompt(QStringLiteral("Answer in one word."));
            QVERIFY(c.send(trained(0).question));
            QVERIFY(waitAnswered(c));
            id = c.conversationId();
            answer = c.conversation()->at(1).text;
        }
        {
            QFile broken(folder.filePath(QStringLiteral("broken.json")));
            QVERIFY(broken.open(QIODevice::WriteOnly));
            broken.write("{ not json");
        }
        ChatController c(folder.path());
        c.restoreLatest();
        QCOMPARE(c.conversationId(), id);
        QVERIFY(c.statusIsError());  // the file kept aside is reported at start
        QVERIFY2(c.status().contains(QStringLiteral("kept aside as broken.json.corrupt")), qPrintable(c.status()));
        QCOMPARE(c.conversation()->count(), 2);
        QCOMPARE(c.systemPrompt(), QStringLiteral("Answer in one word."));
        QCOMPARE(c.conversation()->at(1).text, answer);
        QVERIFY(c.deleteConversation(id));
        QCOMPARE(c.conversations()->rowCount(), 0);
        QCOMPARE(c.conversation()->count(), 0);
    }
};

QTEST_MAIN(TestChatController)
#include "test_chat_controller.moc"
