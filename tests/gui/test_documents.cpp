// Knowledge → Documents…: documents added from the window are memorized in this process into a
// memory folder (a new one for the model under the app's data folder when the chat has none),
// and the chat's next answer reads them; a document is replaced and deleted by its id; Cancel and
// every refusal (a compressed folder, a broken JSONL line) leave the folder as it was. Through a
// loopback `mnemo-kb serve --model` the same panel adds to the server's bank (admin token), and a
// read-only token is refused in words that say so.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>

#include "../fixtures/vq_memory_folder.hpp"
#include "chat_controller.hpp"
#include "gui_test_util.hpp"
#include "window_test_util.hpp"
#include "kb/documents/documents_controller.hpp"
#include "mnemo/memory/memory_folder.hpp"

using namespace mnemo::gui;
using namespace mnemo::gui::test;

namespace {

// A job ended, and the reload it asked for (a folder changed) too.
bool waitDocuments(ChatController& c) {
    return QTest::qWaitFor([&] { return !c.kb()->documents()->busy(); }, 120000) && waitLoaded(c);
}

QString writeFile(const QString& path, const QByteArray& text) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(text);
    return f.fileName();
}

QByteArray slurp(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// A memory folder's files as they are: a refused or cancelled add must change none of them.
QByteArray snapshot(const QString& folder) {
    return slurp(folder + "/manifest.json") + slurp(folder + "/references.jsonl") + slurp(folder + "/records.bin");
}

std::vector<std::string> docIdsOf(const QString& folder) {
    std::vector<std::string> ids;
    for (const mnemo::MemoryReference& r : mnemo::read_memory_folder(folder.toStdString()).references) ids.push_back(r.doc_id);
    return ids;
}

QString referenceTexts(const QString& folder) {
    QString all;
    for (const mnemo::MemoryReference& r : mnemo::read_memory_folder(folder.toStdString()).references)
        all += QString::fromStdString(r.doc_id + ": " + r.text + "\n");
    return all;
}

// A chat on the default model, greedy, short answers, with new memory folders under `root`.
std::unique_ptr<ChatController> openChat(const QTemporaryDir& dir) {
    auto c = std::make_unique<ChatController>(dir.filePath(QStringLiteral("conversations")));
    c->kb()->documents()->setMemoriesRoot(dir.filePath(QStringLiteral("memories")));
    c->model()->loadModel(defaultModelDir());
    if (!waitLoaded(*c)) return nullptr;
    c->settings()->setProperty("temperature", 0.0);
    c->settings()->setProperty("maxTokens", 8);
    return c;
}

const QByteArray kFact = "# Zorblat Quenn\n\nZorblat Quenn was born in Plimvar.\n\nZorblat Quenn works as a glassblower in Plimvar.\n";

}  // namespace

class TestDocuments : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void addedDocumentsAreReadByTheNextAnswer() {
        QTemporaryDir dir;
        auto c = openChat(dir);
        QVERIFY(c);
        DocumentsController* d = c->kb()->documents();
        QCOMPARE(c->kb()->state(), QStringLiteral("off"));
        const QString folder = d->newFolderFor(defaultModelDir());
        QVERIFY2(folder.startsWith(dir.filePath(QStringLiteral("memories/default-model-"))), qPrintable(folder));
        QVERIFY2(d->where().contains(QStringLiteral("new memory folder")) && d->where().contains(folder), qPrintable(d->where()));
        QVERIFY(d->canChange());

        const QString fact = writeFile(dir.filePath(QStringLiteral("docs/zorblat.txt")), kFact);
        QSignalSpy progress(d, &DocumentsController::progressChanged);
        d->add({QUrl::fromLocalFile(fact)});  // as the file dialog gives it
        QVERIFY(d->busy() && d->adding());
        QVERIFY(waitDocuments(*c));
        QVERIFY2(!d->messageIsError() && d->message().startsWith(QStringLiteral("Memorized 1 document (3 references")), qPrintable(d->message()));
        QVERIFY(progress.count() >= 2);
        // The new folder is attached: the model was reloaded with it.
        QCOMPARE(c->kb()->state(), QStringLiteral("folder"));
        QCOMPARE(c->kb()->memoryFolder(), folder);
        QCOMPARE(d->documents()->count(), 1);
        const QModelIndex row = d->documents()->index(0);
        QCOMPARE(row.data(DocumentListModel::DocIdRole).toString(), QStringLiteral("zorblat.txt"));
        QCOMPARE(row.data(DocumentListModel::TitleRole).toString(), QStringLiteral("Zorblat Quenn"));
        QCOMPARE(row.data(DocumentListModel::SourceRole).toString(), fact);
        QCOMPARE(row.data(DocumentListModel::ReferencesRole).toLongLong(), 3);

        QVERIFY(c->send(QStringLiteral("Where was Zorblat Quenn born?")));
        QVERIFY(waitAnswered(*c));
        const Message& a = c->conversation()->at(1);
        QVERIFY2(a.error.isEmpty(), qPrintable(a.error));
        bool fromFact = false;
        for (const mnemo::RetrievedReference& r : a.references)
            if (r.doc_id == "zorblat.txt" && r.source == fact.toStdString() && r.title == "Zorblat Quenn") fromFact = true;
        QVERIFY2(fromFact, qPrintable(QStringLiteral("%1 references, none from zorblat.txt").arg(a.references.size())));
        qInfo("answer with the new memories: %s", qPrintable(a.text.trimmed()));

        // The references panel's link: the document is marked in the list and the panel asked for.
        QSignalSpy shown(d, &DocumentsController::showRequested);
        d->showDocument(QStringLiteral("zorblat.txt"));
        QCOMPARE(shown.count(), 1);
        QCOMPARE(d->highlightedRow(), 0);
        QVERIFY(d->documents()->index(0).data(DocumentListModel::HighlightedRole).toBool());
        QVERIFY(d->isLocalFile(fact));
        QVERIFY(!d->isLocalFile(QStringLiteral("knowledge.jsonl")));
    }

    void replaceAndDeleteByDocumentId() {
        QTemporaryDir dir;
        auto c = openChat(dir);
        QVERIFY(c);
        DocumentsController* d = c->kb()->documents();
        const QString folder = d->newFolderFor(defaultModelDir());
        d->add({writeFile(dir.filePath(QStringLiteral("a/zorblat.txt")), kFact),
                writeFile(dir.filePath(QStringLiteral("a/ferry.md")), "# Ferry\n\nThe ferry leaves at seven.\n")});
        QVERIFY(waitDocuments(*c));
        QVERIFY2(!d->messageIsError(), qPrintable(d->message()));
        QCOMPARE(d->documents()->count(), 2);

        // Replace: another file memorized under the id, in place of what it held.
        d->replace(QStringLiteral("zorblat.txt"), writeFile(dir.filePath(QStringLiteral("b/new.txt")), "Zorblat Quenn was born in Kestrow.\n"));
        QVERIFY(waitDocuments(*c));
        QVERIFY2(!d->messageIsError() && d->message().contains(QStringLiteral("1 document replaced")), qPrintable(d->message()));
        QCOMPARE(d->documents()->count(), 2);
        const QString texts = referenceTexts(folder);
        QVERIFY2(texts.contains(QStringLiteral("zorblat.txt: Zorblat Quenn was born in Kestrow.")) && !texts.contains(QStringLiteral("Plimvar")),
                 qPrintable(texts));

        // Delete: the folder rewritten without it, and the model reloaded with that.
        d->remove(QStringLiteral("zorblat.txt"));
        QVERIFY(waitDocuments(*c));
        QVERIFY2(!d->messageIsError(), qPrintable(d->message()));
        QCOMPARE(d->documents()->count(), 1);
        QCOMPARE(d->documents()->index(0).data(DocumentListModel::DocIdRole).toString(), QStringLiteral("ferry.md"));
        QCOMPARE(docIdsOf(folder), std::vector<std::string>({"ferry.md", "ferry.md"}));
        QVERIFY2(c->model()->line().contains(QStringLiteral("2 memories")) || c->model()->details().contains(QStringLiteral("2 memories")) ||
                     c->kb()->text().contains(QStringLiteral("2 memories")),
                 qPrintable(c->kb()->text()));
    }

    // Documents changed while an answer streams: the answer goes on to its end (a reload would
    // stop it), and the model takes up the folder once it has ended. The folder's change is
    // signalled right after the question is sent, so the answer is surely in progress (a real add
    // takes longer than the default model's short answers).
    void aFolderChangedDuringAnAnswerWaitsForItsEnd() {
        QTemporaryDir dir;
        auto c = openChat(dir);
        QVERIFY(c);
        DocumentsController* d = c->kb()->documents();
        d->add({writeFile(dir.filePath(QStringLiteral("zorblat.txt")), kFact)});
        QVERIFY(waitDocuments(*c));
        const QString folder = c->kb()->memoryFolder();
        QVERIFY(!folder.isEmpty());
        c->kb()->useNoMemories();
        QVERIFY(waitLoaded(*c));
        QCOMPARE(c->kb()->state(), QStringLiteral("off"));

        QVERIFY(c->send(QStringLiteral("Where was Zorblat Quenn born?")));
        QVERIFY(c->busy());
        Q_EMIT d->memoryFolderChanged(folder);
        QVERIFY(!c->model()->loading());  // not reloading under the answer
        QVERIFY(waitAnswered(*c));
        const Message& a = c->conversation()->at(1);
        QVERIFY2(a.finish != QStringLiteral("stopped") && a.error.isEmpty(), qPrintable(a.finish + a.error));
        QVERIFY(QTest::qWaitFor([&] { return c->kb()->state() == QStringLiteral("folder"); }, 60000));
        QVERIFY(waitLoaded(*c));
        QCOMPARE(c->kb()->memoryFolder(), folder);
    }

    // A knowledge server that is not answering: the panel says so in the chat's words, lists
    // nothing, and adds no warning of its own to the status line (the chat has already said it).
    void anUnreachableServerIsNotListed() {
        QTemporaryDir dir;
        auto c = openChat(dir);
        QVERIFY(c);
        DocumentsController* d = c->kb()->documents();
        c->kb()->connectServer(QStringLiteral("grpc://127.0.0.1:1"), QString(), QString());
        QVERIFY(waitLoaded(*c));
        QCOMPARE(c->kb()->state(), QStringLiteral("unreachable"));
        const QString status = c->status();
        QSignalSpy notices(d, &DocumentsController::statusNotice);
        d->refresh();
        QTest::qWait(300);  // a listing would have been asked and failed by now
        QCOMPARE(notices.count(), 0);
        QCOMPARE(c->status(), status);
        QCOMPARE(d->documents()->count(), 0);
        QCOMPARE(d->message(), c->kb()->text());
        QVERIFY(!d->messageIsError());
    }

    void cancelLeavesTheFolderAsItWas() {
        QTemporaryDir dir;
        auto c = openChat(dir);
        QVERIFY(c);
        DocumentsController* d = c->kb()->documents();
        const QString folder = d->newFolderFor(defaultModelDir());
        d->add({writeFile(dir.filePath(QStringLiteral("zorblat.txt")), kFact)});
        QVERIFY(waitDocuments(*c));
        const QByteArray before = snapshot(folder);
        QVERIFY(!before.isEmpty());

        QByteArray many;
        for (int i = 0; i < 20000; ++i) many += "Line " + QByteArray::number(i) + " of a long document.\n\n";
        d->add({writeFile(dir.filePath(QStringLiteral("long.txt")), many)});
        // Cancel once memorizing has visibly begun (a batch done), as a person would.
        QVERIFY(QTest::qWaitFor([&] { return d->progress() > 0 || !d->busy(); }, 60000));
        QVERIFY2(d->busy(), "20000 references were memorized before a cancel could land");
        QVERIFY2(d->progressText().contains(QStringLiteral("references/s")) && d->progressText().contains(QStringLiteral("left")),
                 qPrintable(d->progressText()));
        d->cancel();
        QVERIFY(QTest::qWaitFor([&] { return !d->busy(); }, 30000));
        QVERIFY2(!d->messageIsError() && d->message().startsWith(QStringLiteral("Cancelled")), qPrintable(d->message()));
        QCOMPARE(snapshot(folder), before);
        QVERIFY(!QFileInfo::exists(folder + ".partial"));
        QCOMPARE(d->documents()->count(), 1);
    }

    void refusalsNameWhatIsWrong() {
        QTemporaryDir dir;
        auto c = openChat(dir);
        QVERIFY(c);
        DocumentsController* d = c->kb()->documents();
        // A broken JSONL line: named with its line, nothing written.
        const QString bad = writeFile(dir.filePath(QStringLiteral("bad.jsonl")), "{\"id\": \"a\", \"text\": \"fine\"}\n{\"id\": \"b\", \"text\": 3}\n");
        d->add({bad});
        QVERIFY(waitDocuments(*c));
        QVERIFY(d->messageIsError());
        QVERIFY2(d->message().contains(QStringLiteral("bad.jsonl': line 2")), qPrintable(d->message()));
        QVERIFY(!QFileInfo::exists(d->newFolderFor(defaultModelDir())));

        // A compressed (vq) folder in use: refused, unchanged.
        d->add({writeFile(dir.filePath(QStringLiteral("zorblat.txt")), kFact)});
        QVERIFY(waitDocuments(*c));
        QVERIFY2(!d->messageIsError(), qPrintable(d->message()));
        const QString vq = dir.filePath(QStringLiteral("vq"));
        mnemo::test::write_vq_copy(d->newFolderFor(defaultModelDir()).toStdString(), vq.toStdString());
        c->kb()->useMemoryFolder(vq);
        QVERIFY(waitLoaded(*c));
        QCOMPARE(c->kb()->memoryFolder(), vq);
        QVERIFY2(d->where().contains(vq), qPrintable(d->where()));
        const QByteArray before = snapshot(vq);
        d->add({writeFile(dir.filePath(QStringLiteral("more.txt")), "More text.\n")});
        QVERIFY(waitDocuments(*c));
        QVERIFY(d->messageIsError());
        QVERIFY2(d->message().contains(QStringLiteral("holds compressed (vq) memories, which cannot be added to")), qPrintable(d->message()));
        QCOMPARE(snapshot(vq), before);
    }

    // Through a loopback `mnemo-kb serve --model` of a copy of the default model's bank: an admin
    // token adds (the next answer reads the new document), lists with versions and deletes; a
    // read-only token is refused in words that say what is needed.
    void addsThroughTheKnowledgeServer() {
#ifndef MNEMO_KB_SERVER
        QSKIP("this build has no knowledge server (configure with MNEMO_SERVER=ON and gRPC)");
#else
        QTemporaryDir dir;
        const QString kb = QStringLiteral(MNEMO_BUILD_BIN "/mnemo-kb");
        const QString bank = dir.filePath(QStringLiteral("bank")), tokens = dir.filePath(QStringLiteral("tokens"));
        std::filesystem::copy(MNEMO_SOURCE_DIR "/assets/world/bank", bank.toStdString());
        auto newToken = [&](const char* name, const char* scope) {
            QProcess p;
            p.start(kb, {QStringLiteral("token"), QStringLiteral("new"), QStringLiteral("--name"), QString::fromLatin1(name),
                         QStringLiteral("--scope"), QString::fromLatin1(scope), QStringLiteral("--tokens"), tokens});
            if (!p.waitForFinished(30000) || p.exitCode() != 0) return QString();
            return writeFile(dir.filePath(QString::fromLatin1(name) + ".token"), p.readAllStandardOutput().trimmed() + "\n");
        };
        const QString admin = newToken("admin", "admin"), reader = newToken("reader", "read");
        QVERIFY(!admin.isEmpty() && !reader.isEmpty());
        const QString portFile = dir.filePath(QStringLiteral("port"));
        QProcess server;
        server.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        server.start(kb, {QStringLiteral("serve"), bank, QStringLiteral("--model"), defaultModelDir(), QStringLiteral("--listen"),
                          QStringLiteral("127.0.0.1:0"), QStringLiteral("--insecure"), QStringLiteral("--tokens"), tokens,
                          QStringLiteral("--port-file"), portFile, QStringLiteral("--log-quiet")});
        QVERIFY(server.waitForStarted(10000));
        QVERIFY2(QTest::qWaitFor([&] { return QFile::exists(portFile) || server.state() == QProcess::NotRunning; }, 30000),
                 "mnemo-kb serve wrote no port file in 30 s");
        const QString url = QStringLiteral("grpc://127.0.0.1:%1").arg(QString::fromLatin1(slurp(portFile).trimmed()));

        auto c = openChat(dir);
        QVERIFY(c);
        c->kb()->setTimeoutMs(5000);
        c->kb()->connectServer(url, admin, QString());
        QVERIFY(waitLoaded(*c));
        QCOMPARE(c->kb()->state(), QStringLiteral("connected"));
        DocumentsController* d = c->kb()->documents();
        QVERIFY(d->server());
        QVERIFY2(d->where().contains(url), qPrintable(d->where()));
        QVERIFY(QTest::qWaitFor([&] { return d->documents()->count() > 0; }, 30000));  // the bank's own documents
        const int before = d->documents()->count();

        const QString fact = writeFile(dir.filePath(QStringLiteral("zorblat.txt")), kFact);
        d->add({fact});
        QVERIFY(waitDocuments(*c));
        QVERIFY2(!d->messageIsError() && d->message().startsWith(QStringLiteral("1 document added to ") + url) &&
                     d->message().contains(QStringLiteral("bank version 2")),
                 qPrintable(d->message()));
        QCOMPARE(d->documents()->count(), before + 1);
        int row = d->documents()->highlight(QStringLiteral("zorblat.txt"));
        QVERIFY(row >= 0);
        QCOMPARE(d->documents()->index(row).data(DocumentListModel::VersionRole).toULongLong(), 2ull);
        QCOMPARE(d->documents()->index(row).data(DocumentListModel::ReferencesRole).toLongLong(), 3);

        QVERIFY(c->send(QStringLiteral("Where was Zorblat Quenn born?")));
        QVERIFY(waitAnswered(*c));
        bool fromFact = false;
        for (const mnemo::RetrievedReference& r : c->conversation()->at(1).references)
            if (r.doc_id == "zorblat.txt" && r.doc_version == 2) fromFact = true;
        QVERIFY2(fromFact, "the answer after the add read nothing of the new document");

        d->remove(QStringLiteral("zorblat.txt"));
        QVERIFY(waitDocuments(*c));
        QVERIFY2(!d->messageIsError() && d->message().contains(QStringLiteral("bank version 3")), qPrintable(d->message()));
        QCOMPARE(d->documents()->count(), before);

        // A read-only token: the server refuses, and the panel says an admin token is needed.
        c->kb()->connectServer(url, reader, QString());
        QVERIFY(waitLoaded(*c));
        d->add({fact});
        QVERIFY(waitDocuments(*c));
        QVERIFY(d->messageIsError());
        QVERIFY2(d->message().contains(QStringLiteral("needs a token with the admin scope")) && d->message().contains(reader),
                 qPrintable(d->message()));
        server.kill();
        server.waitForFinished(10000);
#endif
    }
};

QTEST_MAIN(TestDocuments)
#include "test_documents.moc"
