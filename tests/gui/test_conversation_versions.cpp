// The versions of a conversation (branches.hpp; issue 29): a regenerated answer and an edited
// prompt keep what they replace as alternatives, stepped through with ‹ k/n ›; the JSON file keeps
// them (an optional field: a file without it still loads) and the Markdown export shows the
// visible branch only. Counts are written singular or plural as English needs.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

#include "conversation/branches.hpp"
#include "conversation/conversation_export.hpp"
#include "conversation/conversation_json.hpp"
#include "plural.hpp"

using namespace mnemo::gui;

namespace {

Message msg(const QString& role, const QString& text, qint64 seed = -1) {
    Message m;
    m.role = role;
    m.text = text;
    m.seed = seed;
    if (role == QLatin1String("assistant")) m.finish = QStringLiteral("end of turn");
    return m;
}

QStringList texts(const QList<Message>& ms) {
    QStringList t;
    for (const Message& m : ms) t << m.text;
    return t;
}

// Q1 A1; regenerated twice (A2, A3); then Q2 asked after A3 and answered B1; then Q1 edited to Q1'.
QList<Message> history() {
    QList<Message> ms{msg("user", "Q1"), msg("assistant", "A1", 11)};
    ms = forkAt(ms, 1, {msg("assistant", "A2", 22)});
    ms = forkAt(ms, 1, {msg("assistant", "A3", 33)});
    ms << msg("user", "Q2") << msg("assistant", "B1", 44);
    return forkAt(ms, 0, {msg("user", "Q1'")});
}

}  // namespace

class TestConversationVersions : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void aRegenerationKeepsTheEarlierAnswers() {
        QList<Message> ms{msg("user", "Q1"), msg("assistant", "A1", 11)};
        ms = forkAt(ms, 1, {msg("assistant", "A2", 22)});
        ms = forkAt(ms, 1, {msg("assistant", "A3", 33)});
        QCOMPARE(texts(ms), (QStringList{"Q1", "A3"}));
        QCOMPARE(versionCount(ms.at(1)), 3);
        QCOMPARE(ms.at(1).version, 2);  // the newest is shown: 3/3
        QCOMPARE(ms.at(1).seed, 33);

        QList<Message> first = showVersion(ms, 1, 0);
        QCOMPARE(texts(first), (QStringList{"Q1", "A1"}));
        QCOMPARE(first.at(1).seed, 11);
        QCOMPARE(first.at(1).version, 0);
        QCOMPARE(versionCount(first.at(1)), 3);
        QCOMPARE(texts(showVersion(first, 1, 1)), (QStringList{"Q1", "A2"}));
        QCOMPARE(texts(showVersion(showVersion(first, 1, 1), 1, 2)), (QStringList{"Q1", "A3"}));
        // Out of range: unchanged.
        QCOMPARE(texts(showVersion(ms, 1, 3)), texts(ms));
        QCOMPARE(texts(showVersion(ms, 5, 0)), texts(ms));
    }

    void anEditKeepsTheEarlierBranchWithWhatFollowedIt() {
        const QList<Message> ms = history();
        QCOMPARE(texts(ms), (QStringList{"Q1'"}));
        QCOMPARE(versionCount(ms.at(0)), 2);
        const QList<Message> before = showVersion(ms, 0, 0);
        QCOMPARE(texts(before), (QStringList{"Q1", "A3", "Q2", "B1"}));
        // The fork further down survives the trip: A3 still has its two earlier versions.
        QCOMPARE(versionCount(before.at(1)), 3);
        QCOMPARE(texts(showVersion(before, 1, 0)), (QStringList{"Q1", "A1"}));
        QCOMPARE(texts(showVersion(before, 0, 1)), (QStringList{"Q1'"}));
    }

    void anAnswerThatFailedBeforeItsFirstTokenIsNotKept() {
        Message failed = msg("assistant", "");
        failed.error = QStringLiteral("the conversation has 70 tokens but the context holds 64");
        const QList<Message> ms = forkAt({msg("user", "Q1"), failed}, 1, {msg("assistant", "A1")});
        QCOMPARE(texts(ms), (QStringList{"Q1", "A1"}));
        QCOMPARE(versionCount(ms.at(1)), 1);
    }

    void theVersionsSurviveTheFileAndTheShownOneStays() {
        Conversation c;
        c.id = QStringLiteral("v");
        c.title = QStringLiteral("Typed by hand");
        c.titleByUser = true;
        c.messages = showVersion(showVersion(history(), 0, 0), 1, 1);  // Q1, A2 shown
        Message& a = c.messages[1];
        a.droppedMessages = 4;
        const QByteArray bytes = conversationToBytes(c);
        ReadProblem problem;
        const std::optional<Conversation> back = conversationFromBytes(bytes, &problem);
        QVERIFY2(back, qPrintable(problem.reason));
        QVERIFY(back->titleByUser);
        QCOMPARE(texts(back->messages), (QStringList{"Q1", "A2"}));
        QCOMPARE(back->messages.at(1).seed, 22);
        QCOMPARE(back->messages.at(1).droppedMessages, 4);
        QCOMPARE(back->messages.at(1).version, 1);
        QCOMPARE(texts(showVersion(back->messages, 1, 2)), (QStringList{"Q1", "A3", "Q2", "B1"}));
        QCOMPARE(showVersion(back->messages, 1, 2).at(3).seed, 44);
        QCOMPARE(texts(showVersion(back->messages, 0, 1)), (QStringList{"Q1'"}));
        QCOMPARE(conversationToBytes(*back), bytes);  // nothing lost or added on the way
    }

    // A file from before seeds and versions (no "seed", "alternatives", "title_by_user") loads.
    void aFileWithoutTheNewFieldsLoads() {
        const QByteArray old = R"({"format": "mnemo-chat-conversation", "version": 1, "id": "old", "title": "t",
            "messages": [{"role": "user", "text": "Q"},
                         {"role": "assistant", "text": "A", "finish": "end of turn", "tokens": 1}]})";
        ReadProblem problem;
        const std::optional<Conversation> c = conversationFromBytes(old, &problem);
        QVERIFY2(c, qPrintable(problem.reason));
        QVERIFY(!c->titleByUser);
        QCOMPARE(c->messages.at(1).seed, -1);
        QCOMPARE(versionCount(c->messages.at(1)), 1);
        QVERIFY(!conversationToJson(*c).contains(QStringLiteral("title_by_user")));
    }

    void aBrokenVersionIsNamedByItsPath() {
        QJsonObject o = conversationToJson(Conversation{QStringLiteral("x"), {}, false, {}, {}, {}, {}, history()});
        QJsonArray messages = o.value("messages").toArray();
        QJsonObject first = messages.at(0).toObject();
        QJsonObject alt = first.value("alternatives").toObject();
        QJsonArray others = alt.value("others").toArray();
        QJsonArray tail = others.at(0).toArray();
        QJsonObject bad = tail.at(1).toObject();
        bad.insert("role", "system");
        tail.replace(1, bad);
        others.replace(0, tail);
        alt.insert("others", others);
        first.insert("alternatives", alt);
        messages.replace(0, first);
        o.insert("messages", messages);
        ReadProblem problem;
        QVERIFY(!conversationFromBytes(QJsonDocument(o).toJson(), &problem));
        QVERIFY2(problem.reason.contains(QStringLiteral("messages[0].alternatives.others[0][1].role")), qPrintable(problem.reason));
    }

    void markdownShowsTheVisibleBranchOnly() {
        Conversation c;
        c.id = QStringLiteral("m");
        c.messages = showVersion(history(), 0, 0);  // Q1 A3 Q2 B1 shown; Q1' and A1, A2 kept
        c.messages[3].tokens = 1;
        const QString md = conversationToMarkdown(c);
        QVERIFY(md.contains(QStringLiteral("A3")) && md.contains(QStringLiteral("B1")));
        QVERIFY(!md.contains(QStringLiteral("Q1'")) && !md.contains(QStringLiteral("A1")) && !md.contains(QStringLiteral("A2")));
        QVERIFY2(md.contains(QStringLiteral("_1 token, ")), qPrintable(md));  // not "1 tokens"
        QVERIFY(md.contains(QStringLiteral("seed 44")));
    }

    void countsAreSingularOrPlural() {
        QCOMPARE(countText(1, QStringLiteral("token")), QStringLiteral("1 token"));
        QCOMPARE(countText(0, QStringLiteral("token")), QStringLiteral("0 tokens"));
        QCOMPARE(countText(2, QStringLiteral("message")), QStringLiteral("2 messages"));
        QCOMPARE(countText(3, QStringLiteral("memory"), QStringLiteral("memories")), QStringLiteral("3 memories"));
    }
};

QTEST_MAIN(TestConversationVersions)
#include "test_conversation_versions.moc"
