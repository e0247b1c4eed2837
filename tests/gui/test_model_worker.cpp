// ModelWorker on its own thread, driven the way the GUI drives it: requests queued to the
// worker's thread, tokens and results back by queued signals, stop through the atomic flag.
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include "mnemo/io/gguf_convert.hpp"
#include "engine/context_fit.hpp"
#include "engine/model_worker.hpp"
#include "gui_test_util.hpp"

using namespace mnemo::gui;
using namespace mnemo::gui::test;

namespace {

SamplingSettings greedy() {
    SamplingSettings s;
    s.temperature = 0.0f;
    s.maxTokens = 32;
    return s;
}

// Sampling from an almost flat distribution: the default model then rarely ends its turn, so a
// generation runs long enough to be stopped in the middle. Flat means a temperature far above the
// logits' range: at 20 the stage-9 model's end-of-turn logit still stood out enough to end a
// rambling answer after about 65 tokens, before the stop requested at its first token arrived.
SamplingSettings rambling() {
    SamplingSettings s;
    s.temperature = 1000.0f;
    s.topK = 0;
    s.topP = 1.0f;
    s.minP = 0.0f;
    s.maxTokens = 1500;
    return s;
}

LoadRequest modelAt(const QString& dir) {
    LoadRequest r;
    r.modelDir = dir;
    return r;
}

// The default model reading, by BM25, the memory folder memorizeCorpus() made in `dir`.
LoadRequest withMemoryFolder(const QTemporaryDir& dir) {
    LoadRequest r = modelAt(defaultModelDir());
    r.memoryFolder = dir.filePath(QStringLiteral("mem"));
    r.retrieval = QStringLiteral("bm25");
    return r;
}

QList<ChatTurn> ask(const QString& question) { return {ChatTurn{QStringLiteral("user"), question}}; }

}  // namespace

class TestModelWorker : public QObject {
    Q_OBJECT

    // Queues a load and waits for its answer; returns the loaded() or loadFailed() arguments
    // when the expected one came. Signals are received on this (the GUI) thread through queued
    // connections, as the app receives them: a QSignalSpy on the worker would be filled from the
    // worker's thread.
    QList<QVariant> load(ModelWorker* w, const LoadRequest& r, bool expectSuccess) {
        const quint64 id = ++ids_;
        QList<QVariant> got;
        bool done = false, ok = false;
        const auto c1 = connect(w, &ModelWorker::loaded, this, [&](quint64 i, ModelInfo info) {
            if (i == id) got = {i, QVariant::fromValue(info)}, done = ok = true;
        });
        const auto c2 = connect(w, &ModelWorker::loadFailed, this, [&](quint64 i, QString why, bool kept) {
            if (i == id) got = {i, why, kept}, done = true;
        });
        QMetaObject::invokeMethod(w, [w, id, r] { w->load(id, r); });
        (void)QTest::qWaitFor([&] { return done; }, 60000);  // `done` says whether it came
        disconnect(c1);
        disconnect(c2);
        if (!done || ok != expectSuccess) {
            qWarning("load of %s: %s", qPrintable(r.modelDir),
                     !done ? "no answer" : qPrintable(ok ? QStringLiteral("loaded") : got.at(1).toString()));
            return {};
        }
        return got;
    }

    // Queues a generation and waits for its result (a default result when none came).
    GenerationResult generate(ModelWorker* w, const QList<ChatTurn>& turns, const SamplingSettings& s,
                              QStringList* pieces = nullptr) {
        const quint64 id = ++ids_;
        GenerationResult result;
        bool done = false;
        const auto c1 = connect(w, &ModelWorker::token, this, [&](quint64 i, QString piece) {
            if (i == id && pieces) *pieces << piece;
        });
        const auto c2 = connect(w, &ModelWorker::generationFinished, this, [&](quint64 i, GenerationResult r) {
            if (i == id) result = r, done = true;
        });
        QMetaObject::invokeMethod(w, [w, id, turns, s] { w->generate(id, turns, s); });
        (void)QTest::qWaitFor([&] { return done; }, 60000);  // `done` says whether it came
        disconnect(c1);
        disconnect(c2);
        return result;
    }

    quint64 ids_ = 0;

private Q_SLOTS:
    void streamsATrainedAnswerFromTheWorkerThread() {
        WorkerThread thread;
        ModelWorker* w = thread.worker();
        const QList<QVariant> loaded = load(w, modelAt(defaultModelDir()), true);
        QVERIFY(!loaded.isEmpty());
        const ModelInfo info = loaded.at(1).value<ModelInfo>();
        QCOMPARE(info.modelType, QStringLiteral("memory3"));
        QCOMPARE(info.backend, QStringLiteral("cpu"));
        QCOMPARE(info.chatTemplate, QStringLiteral("chatml"));
        QVERIFY(info.totalParams > 0);

        // Where each token is emitted from, and where the queued connection delivers it.
        QThread* emittedOn = nullptr;
        QThread* deliveredOn = nullptr;
        connect(w, &ModelWorker::token, this, [&] { deliveredOn = QThread::currentThread(); });
        connect(w, &ModelWorker::token, w, [&] { emittedOn = QThread::currentThread(); }, Qt::DirectConnection);

        const Question q = trainedQuestion();
        QStringList pieces;
        const GenerationResult r = generate(w, ask(q.question), greedy(), &pieces);
        QCOMPARE(r.text.trimmed(), q.answer);
        QCOMPARE(r.reason, FinishReason::EndOfTurn);
        QVERIFY(!pieces.isEmpty());
        QCOMPARE(pieces.join(QString()), r.text);  // the streamed pieces are the whole answer
        QVERIFY(r.tokens >= pieces.size());
        QVERIFY(r.firstTokenSeconds > 0 && r.firstTokenSeconds <= r.seconds);
        QVERIFY(r.tokensPerSecond > 0);
        QVERIFY(r.contextUsed > 0);
        QCOMPARE(deliveredOn, QThread::currentThread());
        QVERIFY(emittedOn != nullptr && emittedOn != QThread::currentThread());
    }

    // A follow-up feeds only its own turn: the first answer, kept as it continues the
    // conversation (historyText), renders to the tokens generated, so the cache is reused. Kept
    // as displayed (its first space dropped) it would not be, and the whole chat is fed again.
    void aFollowUpFeedsOnlyTheNewTurn() {
        WorkerThread thread;
        ModelWorker* w = thread.worker();
        QVERIFY(!load(w, modelAt(defaultModelDir()), true).isEmpty());
        const Question q = trainedQuestion();
        QList<ChatTurn> turns = ask(q.question);
        const GenerationResult first = generate(w, turns, greedy());
        QCOMPARE(first.text.trimmed(), q.answer);
        QCOMPARE(first.historyText, QStringLiteral(" ") + first.text);  // SentencePiece: the piece's space
        turns << ChatTurn{QStringLiteral("assistant"), first.historyText} << ChatTurn{QStringLiteral("user"), q.question};
        const GenerationResult second = generate(w, turns, greedy());
        QCOMPARE(second.text, first.text);
        QCOMPARE(second.promptTokens, second.contextUsed - second.tokens - first.contextUsed);  // the new turn only
        turns[1].text = first.text;  // as mnemo-chat kept it before
        const GenerationResult third = generate(w, turns, greedy());
        QCOMPARE(third.promptTokens, third.contextUsed - third.tokens);  // fed from scratch
    }

    void stopEndsAGenerationAtTheNextToken() {
        WorkerThread thread;
        ModelWorker* w = thread.worker();
        QVERIFY(!load(w, modelAt(defaultModelDir()), true).isEmpty());

        // Stop from the GUI thread as soon as the first token arrives.
        const quint64 id = ++ids_;
        GenerationResult r;
        bool done = false;
        connect(w, &ModelWorker::generationFinished, this, [&](quint64, GenerationResult g) { r = g, done = true; });
        int tokensSeen = 0;
        QElapsedTimer sinceStop;
        connect(w, &ModelWorker::token, this, [&] {
            if (tokensSeen++ == 0) {
                w->requestStop(id);
                sinceStop.start();
            }
        });
        const QList<ChatTurn> turns = ask(trainedQuestion().question);
        const SamplingSettings s = rambling();
        QMetaObject::invokeMethod(w, [w, id, turns, s] { w->generate(id, turns, s); });
        QVERIFY(QTest::qWaitFor([&] { return done; }, 60000));
        QVERIFY2(r.reason == FinishReason::Stopped, qPrintable(QStringLiteral("ended by itself after %1 tokens: %2").arg(r.tokens).arg(r.text)));
        QVERIFY2(r.tokens < s.maxTokens, qPrintable(QString::number(r.tokens)));
        QVERIFY2(sinceStop.elapsed() < 2000, qPrintable(QString::number(sinceStop.elapsed())));

        disconnect(w, nullptr, this, nullptr);
        // The worker answers correctly afterwards (the cache it was stopped in is consistent).
        const Question q = trainedQuestion();
        QCOMPARE(generate(w, ask(q.question), greedy()).text.trimmed(), q.answer);
    }

    void stopBeforeStartProducesNothing() {
        WorkerThread thread;
        ModelWorker* w = thread.worker();
        QVERIFY(!load(w, modelAt(defaultModelDir()), true).isEmpty());
        // ids_ + 1 is the id generate() gives its request: stopped before it reaches the worker.
        w->requestStop(ids_ + 1);
        QStringList pieces;
        const GenerationResult r = generate(w, ask(trainedQuestion().question), greedy(), &pieces);
        QVERIFY2(r.reason == FinishReason::Stopped, qPrintable(QStringLiteral("ended by itself after %1 tokens: %2").arg(r.tokens).arg(r.text)));
        QCOMPARE(pieces.size(), 0);
        QCOMPARE(r.tokens, 0);
    }

    void invalidModelFolderNamesTheFile() {
        WorkerThread thread;
        ModelWorker* w = thread.worker();
        QTemporaryDir dir;
        QVERIFY(copyDefaultModel(dir.path()));
        {
            QFile config(dir.filePath(QStringLiteral("config.json")));
            QVERIFY(config.open(QIODevice::WriteOnly | QIODevice::Truncate));
            config.write("{\"model_type\": \"memory3\",\n");
        }
        QList<QVariant> failed = load(w, modelAt(dir.path()), false);
        QVERIFY(!failed.isEmpty());
        QVERIFY2(failed.at(1).toString().contains(dir.path() + QStringLiteral("/config.json")),
                 qPrintable(failed.at(1).toString()));
        QCOMPARE(failed.at(2).toBool(), false);  // nothing was loaded before

        QVERIFY(QFile::remove(dir.filePath(QStringLiteral("config.json"))));
        failed = load(w, modelAt(dir.path()), false);
        QVERIFY(!failed.isEmpty());
        QVERIFY2(failed.at(1).toString().contains(QStringLiteral("has no config.json")), qPrintable(failed.at(1).toString()));

        QVERIFY(QFile::copy(defaultModelDir() + QStringLiteral("/config.json"), dir.filePath(QStringLiteral("config.json"))));
        QVERIFY(QFile::remove(dir.filePath(QStringLiteral("tokenizer.json"))));
        QVERIFY(QFile::remove(dir.filePath(QStringLiteral("tokenizer.model"))));
        failed = load(w, modelAt(dir.path()), false);
        QVERIFY(!failed.isEmpty());
        QVERIFY2(failed.at(1).toString().contains(QStringLiteral("tokenizer.json or tokenizer.model")),
                 qPrintable(failed.at(1).toString()));
    }

    // A GGUF file is a model too (mnemo quantize writes the default model as one, tokenizer and
    // chat template included): the same trained answer; a file that is not GGUF is named.
    void answersFromAGgufFileOfTheDefaultModel() {
        QTemporaryDir dir;
        const std::string gguf = dir.filePath(QStringLiteral("default.gguf")).toStdString();
        mnemo::GgufConvertOptions o;
        o.type = mnemo::ggml_type::F32;
        mnemo::convert_to_gguf(defaultModelDir().toStdString(), gguf, o);
        WorkerThread thread;
        ModelWorker* w = thread.worker();
        const QList<QVariant> loaded = load(w, modelAt(QString::fromStdString(gguf)), true);
        QVERIFY(!loaded.isEmpty());
        const ModelInfo info = loaded.at(1).value<ModelInfo>();
        QCOMPARE(info.modelType, QStringLiteral("memory3"));
        QCOMPARE(info.chatTemplate, QStringLiteral("chatml"));
        const Question q = trainedQuestion();
        QCOMPARE(generate(w, ask(q.question), greedy()).text.trimmed(), q.answer);

        QFile text(dir.filePath(QStringLiteral("notes.txt")));
        QVERIFY(text.open(QIODevice::WriteOnly));
        text.write("not a model");
        text.close();
        const QList<QVariant> failed = load(w, modelAt(text.fileName()), false);
        QVERIFY(!failed.isEmpty());
        QVERIFY2(failed.at(1).toString().contains(QStringLiteral("is neither a folder nor a GGUF file")), qPrintable(failed.at(1).toString()));
    }

    void failedDeviceLoadKeepsThePreviousModel() {
        WorkerThread thread;
        ModelWorker* w = thread.worker();
        QVERIFY(!load(w, modelAt(defaultModelDir()), true).isEmpty());
        LoadRequest bad = modelAt(defaultModelDir());
        bad.device = 99;  // the CPU backend has one device
        const QList<QVariant> failed = load(w, bad, false);
        QVERIFY(!failed.isEmpty());
        QVERIFY2(failed.at(1).toString().contains(QStringLiteral("device 99 does not exist")),
                 qPrintable(failed.at(1).toString()));
        QCOMPARE(failed.at(2).toBool(), true);
        const Question q = trainedQuestion();
        QCOMPARE(generate(w, ask(q.question), greedy()).text.trimmed(), q.answer);
    }

    void refusesAConversationLongerThanTheContext() {
        WorkerThread thread;
        ModelWorker* w = thread.worker();
        LoadRequest r = modelAt(defaultModelDir());
        r.contextLength = 16;
        QVERIFY(!load(w, r, true).isEmpty());
        QString reason;
        const quint64 id = ++ids_;
        connect(w, &ModelWorker::generationFailed, this, [&](quint64 i, QString why) { if (i == id) reason = why; });
        const QList<ChatTurn> turns = ask(QStringLiteral("Where was Tour Hujert born, and what does Tour Hujert do for a living?"));
        QMetaObject::invokeMethod(w, [w, id, turns] { w->generate(id, turns, greedy()); });
        QVERIFY(QTest::qWaitFor([&] { return !reason.isEmpty(); }, 60000));
        QVERIFY2(reason.contains(QStringLiteral("tokens but the context holds 16")), qPrintable(reason));
        disconnect(w, nullptr, this, nullptr);
    }

    // Issue 29: a context of 100,000 for a model trained on fewer positions was taken without a
    // word. It is clamped to the trained length, and the note names both numbers.
    void clampsAContextPastTheTrainedLength() {
        const Question q = trainedQuestion();
        WorkerThread thread;
        ModelWorker* w = thread.worker();
        const QList<QVariant> plain = load(w, modelAt(defaultModelDir()), true);
        QVERIFY(!plain.isEmpty());
        const ModelInfo byDefault = plain.at(1).value<ModelInfo>();
        QVERIFY2(byDefault.trainedContext > 0, "the default model says how long it was trained");
        QCOMPARE(byDefault.contextNote, QString());

        LoadRequest r = modelAt(defaultModelDir());
        r.contextLength = 100000;
        const QList<QVariant> got = load(w, r, true);
        QVERIFY(!got.isEmpty());
        const ModelInfo info = got.at(1).value<ModelInfo>();
        QCOMPARE(info.contextLength, static_cast<int>(info.trainedContext));
        QVERIFY2(info.contextNote.contains(QStringLiteral("100000")) &&
                     info.contextNote.contains(QString::number(info.trainedContext)),
                 qPrintable(info.contextNote));
        QCOMPARE(generate(w, ask(q.question), greedy()).text.trimmed(), q.answer);  // and it answers
    }

    // Issue 29: a conversation longer than the context was a hard error; with dropOldestTurns
    // the oldest prompt and answer go (never the newest prompt), the answer says how many, and
    // the newest question is still answered.
    void dropsTheOldestMessagesToFitWhenAsked() {
        const Question q = trainedQuestion();
        WorkerThread thread;
        ModelWorker* w = thread.worker();
        LoadRequest r = modelAt(defaultModelDir());
        r.contextLength = 64;
        QVERIFY(!load(w, r, true).isEmpty());
        QList<ChatTurn> turns;
        for (int i = 0; i < 3; ++i) {
            turns << ChatTurn{QStringLiteral("user"), QStringLiteral("Tell me everything you know about Tour Hujert, please, at length.")}
                  << ChatTurn{QStringLiteral("assistant"), QStringLiteral("Tour Hujert was born in Zeajusy and works as a miner there.")};
        }
        turns << ask(q.question);
        SamplingSettings s = greedy();
        s.maxTokens = 8;
        // Without the setting: the error that offers it (isContextOverflow).
        QString reason;
        const quint64 id = ++ids_;
        connect(w, &ModelWorker::generationFailed, this, [&](quint64 i, QString why) { if (i == id) reason = why; });
        QMetaObject::invokeMethod(w, [w, id, turns, s] { w->generate(id, turns, s); });
        QVERIFY(QTest::qWaitFor([&] { return !reason.isEmpty(); }, 60000));
        QVERIFY2(isContextOverflow(reason), qPrintable(reason));
        disconnect(w, nullptr, this, nullptr);

        s.dropOldestTurns = true;
        const GenerationResult g = generate(w, turns, s);
        QVERIFY2(g.droppedMessages >= 2 && g.droppedMessages % 2 == 0, qPrintable(QString::number(g.droppedMessages)));
        QVERIFY(g.droppedMessages < turns.size());
        QVERIFY(g.contextUsed <= 64);
        QCOMPARE(g.text.trimmed(), q.answer);
    }

    void missingMemoryFolderIsNamed() {
        WorkerThread thread;
        ModelWorker* w = thread.worker();
        LoadRequest r = modelAt(defaultModelDir());
        r.memoryFolder = QStringLiteral("/nonexistent/memories");
        const QList<QVariant> failed = load(w, r, false);
        QVERIFY(!failed.isEmpty());
        QVERIFY2(failed.at(1).toString().contains(QStringLiteral("/nonexistent/memories")), qPrintable(failed.at(1).toString()));
    }

    void answersTheSameOnVulkan() {
        const QString why = noVulkanReason();
        if (!why.isEmpty()) QSKIP(qPrintable(why));
        WorkerThread thread;
        ModelWorker* w = thread.worker();
        LoadRequest r = modelAt(defaultModelDir());
        r.backend = QStringLiteral("vulkan");
        const QList<QVariant> loaded = load(w, r, true);
        QVERIFY(!loaded.isEmpty());
        QCOMPARE(loaded.at(1).value<ModelInfo>().backend, QStringLiteral("vulkan"));
        const Question q = trainedQuestion();
        QCOMPARE(generate(w, ask(q.question), greedy()).text.trimmed(), q.answer);
    }

    void reportsTheMemoriesAnAnswerRead() {
        // A memory folder of two facts, made by `mnemo memorize` with the default model.
        QTemporaryDir dir;
        const QString memorized = memorizeCorpus(dir.path(),
                                                 "Tour Hujert was born in Zeajusy.\n\nThe Lelosk ring is amber.\n");
        QVERIFY2(memorized.isEmpty(), qPrintable(memorized));

        WorkerThread thread;
        ModelWorker* w = thread.worker();
        const LoadRequest r = withMemoryFolder(dir);
        const QList<QVariant> loaded = load(w, r, true);
        QVERIFY(!loaded.isEmpty());
        QVERIFY(loaded.at(1).value<ModelInfo>().memories.contains(QStringLiteral("memory folder")));
        const GenerationResult g = generate(w, ask(trainedQuestion().question), greedy());
        // BM25 finds only the fact that shares words with the question.
        QCOMPARE(g.references.size(), 1);
        QCOMPARE(g.references.first().id, 0u);
        QCOMPARE(g.references.first().text, std::string("Tour Hujert was born in Zeajusy."));  // the memory folder's text
        QCOMPARE(g.references.first().chunk, 1);
        QVERIFY(!g.references.first().has_score);  // a memory folder reports no score
    }

    // The settings' "Answers: quoted from the memories read" (SamplingSettings::grounded), as
    // `mnemo chat --grounded`: a birthplace of English make, which no training text has, is cut
    // short by the model alone ("Stanin") and written whole when the answer may only quote its
    // references; the next turn quotes what that turn read.
    void aGroundedAnswerQuotesTheMemoriesRead() {
        QTemporaryDir dir;
        const QString memorized = memorizeCorpus(dir.path(),
                                                 "Quear Mousaim was born in Staninminster.\n\nQuear Mousaim works as a weaver.\n\n"
                                                 "The birth year of Quear Mousaim is 1793.\n");
        QVERIFY2(memorized.isEmpty(), qPrintable(memorized));

        WorkerThread thread;
        ModelWorker* w = thread.worker();
        const LoadRequest r = withMemoryFolder(dir);
        QVERIFY(!load(w, r, true).isEmpty());
        const QString question = QStringLiteral("Where was Quear Mousaim born?");
        QVERIFY(generate(w, ask(question), greedy()).text != QStringLiteral("Staninminster"));
        SamplingSettings grounded = greedy();
        grounded.grounded = true;
        const GenerationResult first = generate(w, ask(question), grounded);
        QCOMPARE(first.text, QStringLiteral("Staninminster"));
        QCOMPARE(first.reason, FinishReason::EndOfTurn);
        QList<ChatTurn> turns = ask(question);
        turns << ChatTurn{QStringLiteral("assistant"), first.historyText}
              << ChatTurn{QStringLiteral("user"), QStringLiteral("What does Quear Mousaim do for a living?")};
        QCOMPARE(generate(w, turns, grounded).text, QStringLiteral("weaver"));
    }
};

QTEST_GUILESS_MAIN(TestModelWorker)
#include "test_model_worker.moc"
