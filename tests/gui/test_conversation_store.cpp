// Saved conversations: the JSON round trip, files that cannot be read kept aside (never
// overwritten), search, rename, delete and the exports.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>
#include <sys/stat.h>

#include "conversation/conversation_export.hpp"
#include "conversation/conversation_json.hpp"
#include "conversation/conversation_store.hpp"
#include "mnemo/io/file_read.hpp"

using namespace mnemo::gui;

namespace {

Conversation sample(const QString& id, const QString& title, int minutesAgo) {
    Conversation c;
    c.id = id;
    c.title = title;
    c.systemPrompt = QStringLiteral("Answer briefly.");
    c.model = QStringLiteral("/models/default");
    c.created = QDateTime::currentDateTimeUtc().addSecs(-600);
    c.updated = QDateTime::currentDateTimeUtc().addSecs(-60 * minutesAgo);
    Message q;
    q.role = QStringLiteral("user");
    q.text = QStringLiteral("Where was Tour Hujert born?");
    Message a;
    a.role = QStringLiteral("assistant");
    a.text = QStringLiteral("Zeajusy, see `code`\n\n```\nx = 1\n```");
    a.historyText = QStringLiteral(" ") + a.text;
    a.finish = QStringLiteral("end of turn");
    a.device = QStringLiteral("cpu:0 AMD EPYC");
    a.tokens = 5;
    a.tokensPerSecond = 123.5;
    a.firstTokenSeconds = 0.012;
    mnemo::RetrievedReference r;
    r.chunk = 1;
    r.id = 7;
    r.text = "Tour Hujert was born in Zeajusy.";
    r.source = "memory folder mem/";
    r.doc_id = "tour-hujert";
    r.doc_version = 3;
    a.references = {r};
    c.messages = {q, a};
    return c;
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void write(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(bytes);
}

}  // namespace

class TestConversationStore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void savesAndReadsBackEveryField() {
        QTemporaryDir dir;
        const Conversation c = sample(QStringLiteral("c1"), QStringLiteral("Births"), 1);
        {
            ConversationStore store(dir.path());
            store.reload();
            QCOMPARE(store.save(c), QString());
        }
        QVERIFY(QFile::exists(dir.filePath(QStringLiteral("c1.json"))));
        // Readable JSON with its format and version.
        const QJsonObject o = QJsonDocument::fromJson(readAll(dir.filePath(QStringLiteral("c1.json")))).object();
        QCOMPARE(o.value("format").toString(), QStringLiteral("mnemo-chat-conversation"));
        QCOMPARE(o.value("version").toInt(), 1);

        ConversationStore store(dir.path());
        store.reload();
        QCOMPARE(store.rowCount(), 1);
        QVERIFY(store.notices().isEmpty());
        const std::optional<Conversation> back = store.find(QStringLiteral("c1"));
        QVERIFY(back.has_value());
        QCOMPARE(back->title, c.title);
        QCOMPARE(back->systemPrompt, c.systemPrompt);
        QCOMPARE(back->model, c.model);
        QCOMPARE(back->updated, c.updated);
        QCOMPARE(back->messages.size(), 2);
        const Message& a = back->messages.at(1);
        QCOMPARE(a.text, c.messages.at(1).text);
        QCOMPARE(a.historyText, c.messages.at(1).historyText);  // what the template renders
        QCOMPARE(a.finish, QStringLiteral("end of turn"));
        QCOMPARE(a.device, QStringLiteral("cpu:0 AMD EPYC"));
        QCOMPARE(a.tokens, 5);
        QCOMPARE(a.tokensPerSecond, 123.5);
        QCOMPARE(a.firstTokenSeconds, 0.012);
        QCOMPARE(a.references.size(), 1);
        QCOMPARE(a.references.first().id, 7u);
        QCOMPARE(a.references.first().text, std::string("Tour Hujert was born in Zeajusy."));
        QCOMPARE(a.references.first().doc_id, std::string("tour-hujert"));
        QCOMPARE(a.references.first().doc_version, uint64_t{3});
        // Saving what was read gives the same bytes.
        QCOMPARE(conversationToBytes(*back), conversationToBytes(c));
    }

    void keepsCorruptAndNewerFilesAside() {
        QTemporaryDir dir;
        const QByteArray corrupt = "{\"format\": \"mnemo-chat-conversation\", \"version\": 1, \"messages\": [";
        write(dir.filePath(QStringLiteral("broken.json")), corrupt);
        QJsonObject newer = QJsonDocument::fromJson(conversationToBytes(sample(QStringLiteral("future"), QStringLiteral("F"), 1))).object();
        newer.insert("version", 2);
        const QByteArray newerBytes = QJsonDocument(newer).toJson();
        write(dir.filePath(QStringLiteral("future.json")), newerBytes);
        // A file already kept aside earlier is not overwritten by the next one.
        write(dir.filePath(QStringLiteral("broken.json.corrupt")), "older");
        ConversationStore good(dir.path());
        QCOMPARE(good.save(sample(QStringLiteral("ok"), QStringLiteral("Fine"), 1)), QString());

        ConversationStore store(dir.path());
        store.reload();
        QCOMPARE(store.rowCount(), 1);
        QCOMPARE(store.idAt(0), QStringLiteral("ok"));
        QCOMPARE(store.notices().size(), 2);
        const QString notices = store.notices().join(QLatin1Char('\n'));
        QVERIFY2(notices.contains(QStringLiteral("broken.json: not valid JSON")), qPrintable(notices));
        QVERIFY2(notices.contains(QStringLiteral("kept aside as broken.json.corrupt-2")), qPrintable(notices));
        QVERIFY2(notices.contains(QStringLiteral("format version 2 is newer than this app reads (1)")), qPrintable(notices));
        QVERIFY2(notices.contains(QStringLiteral("kept aside as future.json.newer-version")), qPrintable(notices));
        // Kept byte for byte, under their new names; the originals are gone.
        QCOMPARE(readAll(dir.filePath(QStringLiteral("broken.json.corrupt-2"))), corrupt);
        QCOMPARE(readAll(dir.filePath(QStringLiteral("broken.json.corrupt"))), QByteArray("older"));
        QCOMPARE(readAll(dir.filePath(QStringLiteral("future.json.newer-version"))), newerBytes);
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("broken.json"))));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("future.json"))));
        // Saving a conversation with the kept-aside one's id writes a new file beside it.
        QCOMPARE(store.save(sample(QStringLiteral("future"), QStringLiteral("F1"), 0)), QString());
        QCOMPARE(readAll(dir.filePath(QStringLiteral("future.json.newer-version"))), newerBytes);
    }

    // A file that is no conversation file at all is refused before a byte is read: a symlink to
    // /dev/zero (it never ends), a FIFO (open() would wait for a writer) and a file over the cap.
    // The others load; each refused file is named with the reason and left as it is.
    void refusesFilesItCannotReadWholeAndLoadsTheRest() {
        QTemporaryDir dir;
        ConversationStore good(dir.path());
        QCOMPARE(good.save(sample(QStringLiteral("ok"), QStringLiteral("Fine"), 1)), QString());
        const QString zero = dir.filePath(QStringLiteral("zero.json"));
        const QString fifo = dir.filePath(QStringLiteral("fifo.json"));
        const QString big = dir.filePath(QStringLiteral("big.json"));
        QVERIFY(QFile::link(QStringLiteral("/dev/zero"), zero));
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        {
            QFile f(big);  // sparse: no disk space used
            QVERIFY(f.open(QIODevice::WriteOnly));
            QVERIFY(f.resize(static_cast<qint64>(mnemo::kMaxDocumentFileBytes) + 1));
        }

        ConversationStore store(dir.path());
        store.reload();
        QCOMPARE(store.rowCount(), 1);
        QCOMPARE(store.idAt(0), QStringLiteral("ok"));
        const QString notices = store.notices().join(QLatin1Char('\n'));
        QCOMPARE(store.notices().size(), 3);
        // Each notice names its file and what was wrong with it (the wording is the engine's).
        const auto noticeOf = [&](const QString& path) {
            for (const QString& n : store.notices())
                if (n.startsWith(path + QStringLiteral(": "))) return n;
            return QString();
        };
        QVERIFY2(noticeOf(zero).contains(QStringLiteral("character device")), qPrintable(notices));
        QVERIFY2(noticeOf(fifo).contains(QStringLiteral("FIFO")), qPrintable(notices));
        QVERIFY2(noticeOf(big).contains(QStringLiteral("more than")), qPrintable(notices));
        // Left as they are, not renamed aside: none of them is a conversation that went wrong.
        QVERIFY(QFileInfo(zero).isSymLink());
        QVERIFY(QFileInfo::exists(fifo));
        QCOMPARE(QFileInfo(big).size(), static_cast<qint64>(mnemo::kMaxDocumentFileBytes) + 1);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::System).size(), 4);
    }

    void namesTheFieldThatIsWrong() {
        ReadProblem p;
        QJsonObject o = QJsonDocument::fromJson(conversationToBytes(sample(QStringLiteral("x"), QStringLiteral("X"), 1))).object();
        QJsonArray messages = o.value("messages").toArray();
        QJsonObject m = messages.at(1).toObject();
        m.insert("role", QStringLiteral("robot"));
        messages.replace(1, m);
        o.insert("messages", messages);
        QVERIFY(!conversationFromBytes(QJsonDocument(o).toJson(), &p).has_value());
        QCOMPARE(p.reason, QStringLiteral("messages[1].role is \"robot\"; expected \"user\" or \"assistant\""));
        QVERIFY(!p.newerVersion);
    }

    void listsNewestFirstAndSearches() {
        QTemporaryDir dir;
        ConversationStore store(dir.path());
        store.reload();
        QCOMPARE(store.save(sample(QStringLiteral("old"), QStringLiteral("Old one"), 30)), QString());
        Conversation other = sample(QStringLiteral("new"), QStringLiteral("New one"), 1);
        other.messages[0].text = QStringLiteral("What colour is the Puthex ring?");
        QCOMPARE(store.save(other), QString());
        QCOMPARE(store.idAt(0), QStringLiteral("new"));
        QCOMPARE(store.idAt(1), QStringLiteral("old"));
        store.setFilter(QStringLiteral("puthex"));  // matches a message's text, any case
        QCOMPARE(store.rowCount(), 1);
        QCOMPARE(store.idAt(0), QStringLiteral("new"));
        store.setFilter(QString());
        QCOMPARE(store.rename(QStringLiteral("old"), QStringLiteral("  Renamed  ")), QString());
        QCOMPARE(store.find(QStringLiteral("old"))->title, QStringLiteral("Renamed"));
        QVERIFY(store.remove(QStringLiteral("old")));
        QCOMPARE(store.rowCount(), 1);
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("old.json"))));
    }

    // Issue 29: a deleted conversation can be brought back while its file is only renamed aside;
    // a title typed by the user is marked as such (the first prompt no longer sets it).
    void deletesUndoablyAndRenamesByHand() {
        QTemporaryDir dir;
        ConversationStore store(dir.path());
        store.reload();
        QCOMPARE(store.save(sample(QStringLiteral("a"), QStringLiteral("A"), 1)), QString());
        QCOMPARE(store.rename(QStringLiteral("a"), QStringLiteral("   ")), QStringLiteral("a title cannot be empty"));
        QCOMPARE(store.rename(QStringLiteral("a"), QStringLiteral("  Mine ")), QString());
        QVERIFY(store.find(QStringLiteral("a"))->titleByUser);
        QCOMPARE(store.find(QStringLiteral("a"))->title, QStringLiteral("Mine"));

        const QString file = dir.filePath(QStringLiteral("a.json"));
        const QByteArray bytes = readAll(file);
        QCOMPARE(store.moveToDeleted(QStringLiteral("a")), QString());
        QCOMPARE(store.rowCount(), 0);
        QVERIFY(!QFile::exists(file));
        QCOMPARE(readAll(file + QStringLiteral(".deleted")), bytes);
        QCOMPARE(store.restoreDeleted(QStringLiteral("a")), QString());
        QCOMPARE(store.rowCount(), 1);
        QCOMPARE(readAll(file), bytes);  // exactly what was there
        QVERIFY(store.find(QStringLiteral("a"))->titleByUser);

        QCOMPARE(store.moveToDeleted(QStringLiteral("a")), QString());
        QCOMPARE(store.purgeDeleted(QStringLiteral("a")), QString());
        QVERIFY(!store.restoreDeleted(QStringLiteral("a")).isEmpty());
        QVERIFY(QDir(dir.path()).entryList(QDir::Files).isEmpty());
        QVERIFY(!store.moveToDeleted(QStringLiteral("nope")).isEmpty());
    }

    void exportsMarkdownAndJson() {
        QTemporaryDir dir;
        const Conversation c = sample(QStringLiteral("c1"), QStringLiteral("Births"), 1);
        const QString md = conversationToMarkdown(c);
        QVERIFY(md.startsWith(QStringLiteral("# Births\n")));
        QVERIFY(md.contains(QStringLiteral("**System:** Answer briefly.")));
        QVERIFY(md.contains(QStringLiteral("## You\n\nWhere was Tour Hujert born?\n")));
        QVERIFY(md.contains(QStringLiteral("```\nx = 1\n```")));  // the answer's own Markdown is kept
        QVERIFY(md.contains(QStringLiteral("- chunk 1, memory #7: Tour Hujert was born in Zeajusy.")));
        QVERIFY(md.contains(QStringLiteral("123.5 tokens/s")));

        QCOMPARE(exportConversation(c, dir.filePath(QStringLiteral("c.md")), QStringLiteral("markdown")), QString());
        QCOMPARE(QString::fromUtf8(readAll(dir.filePath(QStringLiteral("c.md")))), md);
        QCOMPARE(exportConversation(c, dir.filePath(QStringLiteral("c.json")), QStringLiteral("json")), QString());
        ReadProblem p;
        const std::optional<Conversation> back = conversationFromBytes(readAll(dir.filePath(QStringLiteral("c.json"))), &p);
        QVERIFY2(back.has_value(), qPrintable(p.reason));
        QCOMPARE(back->messages.size(), c.messages.size());
        const QString why = exportConversation(c, dir.filePath(QStringLiteral("no/such/folder/c.md")), QStringLiteral("markdown"));
        QVERIFY2(why.contains(QStringLiteral("no/such/folder/c.md")), qPrintable(why));
        QVERIFY(exportConversation(c, dir.filePath(QStringLiteral("c.txt")), QStringLiteral("pdf")).contains(QStringLiteral("pdf")));
    }

    // Writing is atomic (a temporary file renamed over the old one), so a path that is no regular
    // file is refused rather than replaced: a FIFO, directly or through a symlink (as root, a link
    // to /dev/zero would otherwise cost the system its /dev/zero).
    void refusesToWriteOverWhatIsNotARegularFile() {
        QTemporaryDir dir;
        const Conversation c = sample(QStringLiteral("c1"), QStringLiteral("Births"), 1);
        const QString fifo = dir.filePath(QStringLiteral("out.md"));
        const QString link = dir.filePath(QStringLiteral("link.md"));
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        QVERIFY(QFile::link(fifo, link));
        for (const QString& path : {fifo, link}) {
            const QString why = exportConversation(c, path, QStringLiteral("markdown"));
            QVERIFY2(why.startsWith(QStringLiteral("cannot write ") + path + QStringLiteral(": ")) && why.contains(QStringLiteral("regular file")),
                     qPrintable(why));
        }
        struct stat st {};
        QCOMPARE(::lstat(QFile::encodeName(fifo).constData(), &st), 0);
        QVERIFY(S_ISFIFO(st.st_mode));
        QVERIFY(QFileInfo(link).isSymLink());
        // A conversation's own file that is a FIFO is not replaced either.
        const QString own = dir.filePath(QStringLiteral("c2.json"));
        QCOMPARE(::mkfifo(QFile::encodeName(own).constData(), 0600), 0);
        ConversationStore store(dir.path());
        const QString why = store.save(sample(QStringLiteral("c2"), QStringLiteral("X"), 1));
        QVERIFY2(why.startsWith(QStringLiteral("cannot write ") + own + QStringLiteral(": ")), qPrintable(why));
        QCOMPARE(::lstat(QFile::encodeName(own).constData(), &st), 0);
        QVERIFY(S_ISFIFO(st.st_mode));
        QCOMPARE(store.rowCount(), 0);
    }
};

QTEST_GUILESS_MAIN(TestConversationStore)
#include "test_conversation_store.moc"
