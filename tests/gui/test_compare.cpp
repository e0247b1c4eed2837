// The compare view's controller on the default model: CPU against CPU must agree exactly (max
// |Δlogit| 0, no divergence), CPU against Vulkan gives sane figures, a backend that cannot run is
// shown with its reason, a run never blocks the GUI thread and can be cancelled. Each column ends
// at the reference backend's end of turn, as the chat's answer does, and a comparison reads the
// chat's memories: with a memory folder it gives the answer the chat gives.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>

#include "chat_controller.hpp"
#include "compare/compare_controller.hpp"
#include "gui_test_util.hpp"

using namespace mnemo::gui;
using namespace mnemo::gui::test;

namespace {

bool waitEnded(CompareController& c) { return QTest::qWaitFor([&] { return !c.running(); }, 120000); }

// Starting returns at once: the comparison runs on the compare thread.
bool startTimed(CompareController& c, const QStringList& backends, qint64* ms) {
    QElapsedTimer t;
    t.start();
    const bool ok = c.start(defaultModelDir(), trainedQuestion(0).question, backends);
    *ms = t.elapsed();
    return ok;
}

void checkFigures(const CompareColumn& col) {
    QVERIFY2(col.ok(), qPrintable(col.spec + QStringLiteral(": ") + col.error));
    QVERIFY(!col.deviceName.isEmpty());
    QVERIFY2(col.tokensPerSecond > 0 && std::isfinite(col.tokensPerSecond), qPrintable(QString::number(col.tokensPerSecond)));
    QVERIFY(col.promptTokensPerSecond > 0);
    QVERIFY(col.peakBytes > 0);
    QVERIFY(col.opTimesKnown);
    QVERIFY(col.opTotalMs() > 0);
    QCOMPARE(col.opTimes.first().category, QStringLiteral("matmul"));
    QVERIFY(col.opTimes.first().ms > 0);  // a transformer spends time in matmuls
}

}  // namespace

class TestCompare : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void cpuAgainstCpuAgreesExactly() {
        CompareController c;
        c.setProperty("steps", 8);
        c.setProperty("stopAtEndOfTurn", false);  // exactly 8 steps
        QSignalSpy reports(&c, &CompareController::reportChanged);
        qint64 ms = 0;
        QVERIFY(startTimed(c, {QStringLiteral("cpu"), QStringLiteral("cpu")}, &ms));
        QVERIFY2(ms < 200, qPrintable(QStringLiteral("start() took %1 ms").arg(ms)));
        QVERIFY(c.running());
        QVERIFY(waitEnded(c));
        QVERIFY2(!c.statusIsError(), qPrintable(c.status()));
        QCOMPARE(reports.size(), 1);
        const CompareReport& r = c.report();
        QCOMPARE(r.columns.size(), 2);
        QCOMPARE(r.reference, 0);
        QCOMPARE(r.steps, 8);
        QVERIFY(r.promptTokens > 5);
        QCOMPARE(r.modelType, QStringLiteral("memory3"));
        for (const CompareColumn& col : r.columns) checkFigures(col);
        QVERIFY(r.columns[0].reference);
        QCOMPARE(r.columns[1].maxAbsDlogit, 0.0);
        QCOMPARE(r.columns[1].divergenceStep, -1);
        QCOMPARE(r.columns[0].text, r.columns[1].text);
        // The prompt went in the chat template, as the chat sends it: the greedy answer is the chat's.
        QVERIFY2(r.columns[0].text.trimmed().startsWith(trainedQuestion(0).answer), qPrintable(r.columns[0].text));

        // What the view shows.
        CompareModel* m = c.columns();
        QCOMPARE(m->rowCount(), 2);
        const QModelIndex second = m->index(1);
        QCOMPARE(m->data(second, CompareModel::MaxAbsDlogitRole).toString(), QStringLiteral("0"));
        QCOMPARE(m->data(second, CompareModel::DivergenceRole).toString(), QStringLiteral("none: the same tokens at every step"));
        QCOMPARE(m->data(m->index(0), CompareModel::MaxAbsDlogitRole).toString(), QStringLiteral("reference"));
        QVERIFY(m->data(second, CompareModel::TokensPerSecondRole).toString().endsWith(QStringLiteral(" tokens/s")));
        QCOMPARE(m->data(second, CompareModel::OpTimesRole).toList().size(), r.columns[1].opTimes.size());
        QVERIFY(c.maxOpMs() > 0);
        QVERIFY2(c.summary().contains(QStringLiteral("reference cpu:0")), qPrintable(c.summary()));
    }

    void cpuAgainstVulkanGivesSaneFigures() {
        const QString why = noVulkanReason();
        if (!why.isEmpty()) QSKIP(qPrintable(why));
        CompareController c;
        c.setProperty("steps", 8);
        qint64 ms = 0;
        QVERIFY(startTimed(c, {QStringLiteral("cpu"), QStringLiteral("vulkan")}, &ms));
        QVERIFY(ms < 200);
        QVERIFY(waitEnded(c));
        QVERIFY2(!c.statusIsError(), qPrintable(c.status()));
        const CompareReport& r = c.report();
        QCOMPARE(r.columns.size(), 2);
        for (const CompareColumn& col : r.columns) checkFigures(col);
        QCOMPARE(r.columns[1].spec, QStringLiteral("vulkan:0"));
        // Another device computes in another order: close, not necessarily equal, and never NaN.
        QVERIFY2(std::isfinite(r.columns[1].maxAbsDlogit) && r.columns[1].maxAbsDlogit < 0.05,
                 qPrintable(QString::number(r.columns[1].maxAbsDlogit)));
        if (r.columns[1].divergenceStep >= 0) {
            // Only a near tie may flip a greedy token: the reference's margin says how near.
            QVERIFY2(r.columns[1].divergenceMargin < 0.1, qPrintable(CompareModel::divergenceText(r.columns[1])));
        }
        qInfo("cpu %.1f tokens/s, vulkan %.1f tokens/s, max |dlogit| %.3g, divergence: %s", r.columns[0].tokensPerSecond,
              r.columns[1].tokensPerSecond, r.columns[1].maxAbsDlogit, qPrintable(CompareModel::divergenceText(r.columns[1])));
    }

    void aBackendThatCannotRunIsShownWithItsReason() {
        CompareController c;
        c.setProperty("steps", 4);
        QVERIFY(c.start(defaultModelDir(), trainedQuestion(0).question,
                        {QStringLiteral("cpu"), QStringLiteral("cpu:7"), QStringLiteral("cpu")}));
        QVERIFY(waitEnded(c));
        const CompareReport& r = c.report();
        QCOMPARE(r.columns.size(), 3);
        QVERIFY(r.columns[0].ok() && r.columns[2].ok());
        QVERIFY(!r.columns[1].ok());
        QVERIFY2(r.columns[1].error.contains(QStringLiteral("device 7")), qPrintable(r.columns[1].error));
        QVERIFY(c.statusIsError());
        QVERIFY2(c.status().contains(QStringLiteral("cpu:7")) && c.status().contains(QStringLiteral("device 7")), qPrintable(c.status()));
        QCOMPARE(c.columns()->data(c.columns()->index(1), CompareModel::ErrorRole).toString(), r.columns[1].error);
        QCOMPARE(r.columns[2].maxAbsDlogit, 0.0);  // the reference is still the first that ran
    }

    void saysWhyItCannotStart() {
        CompareController c;
        QVERIFY(!c.start(defaultModelDir(), QStringLiteral("Hi"), {QStringLiteral("cpu")}));
        QVERIFY(c.statusIsError());
        QVERIFY(c.status().contains(QStringLiteral("at least two")));
        QVERIFY(!c.start(QString(), QStringLiteral("Hi"), {QStringLiteral("cpu"), QStringLiteral("cpu")}));
        QVERIFY(c.status().contains(QStringLiteral("No model")));
        QVERIFY(!c.start(defaultModelDir(), QStringLiteral("  "), {QStringLiteral("cpu"), QStringLiteral("cpu")}));
        QVERIFY(!c.running());
        // Options the engine refuses come back as a failure with the reason, not a crash.
        QVERIFY(c.start(defaultModelDir(), QStringLiteral("Hi"), {QStringLiteral("cpu"), QStringLiteral("cpu:x")}));
        QVERIFY(waitEnded(c));
        QVERIFY(c.statusIsError());
        QVERIFY2(c.status().contains(QStringLiteral("cpu:x")), qPrintable(c.status()));
        QCOMPARE(c.report().columns.size(), 0);
    }

    void cancelsARunInProgress() {
        CompareController c;
        c.setProperty("steps", 1000);  // long enough to be cancelled in the middle
        c.setProperty("stopAtEndOfTurn", false);
        QSignalSpy reports(&c, &CompareController::reportChanged);
        QVERIFY(c.start(defaultModelDir(), trainedQuestion(0).question,
                        {QStringLiteral("cpu"), QStringLiteral("cpu"), QStringLiteral("cpu"), QStringLiteral("cpu")}));
        QVERIFY(QTest::qWaitFor([&] { return c.status().startsWith(QStringLiteral("Running on")); }, 30000));
        c.cancel();
        QVERIFY(!c.running());  // at once: the view does not wait for the worker
        QVERIFY(c.status().startsWith(QStringLiteral("Cancelled")));
        QTest::qWait(500);
        QCOMPARE(reports.size(), 0);  // what the cancelled run still sends is ignored
        // The next run starts as usual.
        c.setProperty("steps", 3);
        QVERIFY(c.start(defaultModelDir(), trainedQuestion(0).question, {QStringLiteral("cpu"), QStringLiteral("cpu")}));
        QVERIFY(waitEnded(c));
        QCOMPARE(reports.size(), 1);
        QCOMPARE(c.report().steps, 3);
    }

    // Issue 29: the columns went on past the answer ("Zeajusy / assistant / assistant / user").
    // Now every column stops at the reference backend's end of turn and reads as the chat's answer.
    void eachColumnEndsAtTheEndOfTheTurn() {
        CompareController c;
        c.setProperty("steps", 64);  // the limit, far past the answer
        QVERIFY(c.start(defaultModelDir(), trainedQuestion(0).question, {QStringLiteral("cpu"), QStringLiteral("cpu")}));
        QVERIFY(waitEnded(c));
        QVERIFY2(!c.statusIsError(), qPrintable(c.status()));
        const CompareReport& r = c.report();
        QVERIFY(r.endedTurn);
        QVERIFY2(r.steps > 1 && r.steps < 64, qPrintable(QString::number(r.steps)));
        for (const CompareColumn& col : r.columns) {
            QCOMPARE(col.text.trimmed(), trainedQuestion(0).answer);  // the answer, and nothing after it
            QVERIFY2(!col.text.contains(QStringLiteral("assistant")) && !col.text.contains(QStringLiteral("user")), qPrintable(col.text));
        }
        QCOMPARE(r.columns[1].divergenceStep, -1);  // the second backend ends its turn at the same step
        CompareModel* m = c.columns();
        QCOMPARE(m->data(m->index(0), CompareModel::StepsRole).toString(),
                 QStringLiteral("ended its turn at step %1; every column stops there").arg(r.steps));
        QVERIFY2(m->data(m->index(1), CompareModel::StepsRole).toString().contains(QStringLiteral("to the end of its turn")),
                 qPrintable(m->data(m->index(1), CompareModel::StepsRole).toString()));
        QVERIFY2(c.summary().contains(QStringLiteral("to the reference's end of turn")), qPrintable(c.summary()));
    }

    // The chat with a memory folder and the compare view answer the same: a held-out person's
    // birthplace (assets/world/questions-unseen_names.jsonl), a name the default model never produced
    // in training, comes only from memories.
    void aComparisonReadsTheChatsMemories() {
        QTemporaryDir dir;
        const QString memorized = memorizeCorpus(dir.path(),
                                                 "The birthplace of Quear Mousaim is Thaimubort.\n\nBy trade Quear Mousaim is a baker.\n\n"
                                                 "The birthplace of Gream Zaicuv is Chybraivisk.\n\nThe birth year of Quear Mousaim is 1793.\n");
        QVERIFY2(memorized.isEmpty(), qPrintable(memorized));
        const QString question = QStringLiteral("Where was Gream Zaicuv born?");

        ChatController chat(dir.filePath(QStringLiteral("conversations")));
        chat.model()->loadModel(defaultModelDir());
        QVERIFY(QTest::qWaitFor([&] { return !chat.model()->loading(); }, 60000) && chat.model()->loaded());
        chat.kb()->useMemoryFolder(dir.filePath(QStringLiteral("mem")));
        QVERIFY(QTest::qWaitFor([&] { return !chat.model()->loading(); }, 60000));
        QCOMPARE(chat.kb()->state(), QStringLiteral("folder"));
        chat.settings()->setProperty("temperature", 0.0);
        chat.settings()->setProperty("maxTokens", 32);
        QVERIFY(chat.send(question));
        QVERIFY(QTest::qWaitFor([&] { return !chat.busy(); }, 60000));
        const QString answer = chat.conversation()->at(1).text.trimmed();
        QVERIFY2(answer.contains(QStringLiteral("Chybraivisk")), qPrintable(answer));  // right, with its memories

        CompareController* c = chat.compare();
        QCOMPARE(c->memories(), QStringLiteral("memory folder %1").arg(dir.filePath(QStringLiteral("mem"))));
        c->setProperty("steps", 32);
        QVERIFY(c->start(chat.model()->dir(), question, {QStringLiteral("cpu"), QStringLiteral("cpu")}));
        QVERIFY(waitEnded(*c));
        QVERIFY2(!c->statusIsError(), qPrintable(c->status()));
        for (const CompareColumn& col : c->report().columns) QCOMPARE(col.text.trimmed(), answer);
        QVERIFY2(c->summary().contains(QStringLiteral("memory folder")), qPrintable(c->summary()));

        // Without memories the same comparison answers otherwise: the memories took part.
        CompareController bare;
        bare.setProperty("steps", 32);
        QVERIFY(bare.start(chat.model()->dir(), question, {QStringLiteral("cpu"), QStringLiteral("cpu")}));
        QVERIFY(waitEnded(bare));
        QVERIFY2(!bare.report().columns[0].text.contains(QStringLiteral("Chybraivisk")), qPrintable(bare.report().columns[0].text));
        QVERIFY2(bare.summary().contains(QStringLiteral("no memories")), qPrintable(bare.summary()));
    }
};

QTEST_MAIN(TestCompare)
#include "test_compare.moc"
