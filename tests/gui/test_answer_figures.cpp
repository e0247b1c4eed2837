// The performance strip's figures (AnswerFigures) without a model: live figures while an answer
// streams (the first token's time, the pieces so far, and the decode rate once there is a quarter
// of a second of it), the final ones after, a one-token answer without a rate, a stop, and another
// answerer forgetting everything.
#include <QTest>

#include "answer_figures.hpp"

using namespace mnemo::gui;

class TestAnswerFigures : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void liveFiguresThenTheFinalOnes() {
        AnswerFigures f;
        f.setAnswerer(QStringLiteral("cpu:0"));
        QCOMPARE(f.text(2048, 0), QStringLiteral("No answer yet"));
        f.answerStarted();
        QCOMPARE(f.text(2048, 0), QStringLiteral("Answering… reading the conversation"));
        f.pieceArrived();
        QVERIFY2(f.text(2048, 0).endsWith(QStringLiteral("~1 token so far")), qPrintable(f.text(2048, 0)));
        for (int i = 0; i < 9; ++i) f.pieceArrived();
        QVERIFY2(!f.text(2048, 0).contains(QStringLiteral("tokens/s")), qPrintable(f.text(2048, 0)));  // too soon for a rate
        QTest::qWait(static_cast<int>(AnswerFigures::kLiveRateAfterSeconds * 1000) + 50);
        const QString live = f.text(2048, 0);
        QVERIFY2(live.contains(QStringLiteral("~10 tokens so far · ~")) && live.endsWith(QStringLiteral(" tokens/s")), qPrintable(live));
        // 9 pieces after the first over a bit more than 0.25 s: at most 36 tokens/s.
        const double rate = live.section(QStringLiteral(" · ~"), -1).section(QLatin1Char(' '), 0, 0).toDouble();
        QVERIFY2(rate > 0 && rate <= 36.0, qPrintable(live));

        GenerationResult r;
        r.tokens = 10;
        r.tokensPerSecond = 123.45;
        r.firstTokenSeconds = 0.02;
        r.contextUsed = 40;
        f.answerEnded(r);
        QVERIFY2(f.text(2048, 0).startsWith(QStringLiteral("123.5 tokens/s · first token 20 ms · context 40 / 2048 tokens · ")),
                 qPrintable(f.text(2048, 0)));
    }

    void oneTokenHasNoRateAndAStopForgetsTheOldFigures() {
        AnswerFigures f;
        f.setAnswerer(QStringLiteral("cpu:0"));
        f.answerStarted();
        GenerationResult r;
        r.tokens = 1;
        r.tokensPerSecond = 4.8;  // what the worker measures over no time after the first token
        f.answerEnded(r);
        QVERIFY2(f.text(2048, 0).startsWith(QStringLiteral("one token · first token")), qPrintable(f.text(2048, 0)));
        f.answerStarted();
        f.answerAbandoned(QStringLiteral("Stopped"));
        QCOMPARE(f.text(2048, 0), QStringLiteral("Stopped"));
        QVERIFY(f.setAnswerer(QStringLiteral("vulkan:0")));
        QCOMPARE(f.text(2048, 0), QStringLiteral("No answer yet"));
    }
};

QTEST_GUILESS_MAIN(TestAnswerFigures)
#include "test_answer_figures.moc"
