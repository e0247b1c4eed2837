// The server-sent-events parser on a stream cut at every byte (events split across reads), with
// CRLF line ends and comments; and the OpenAI chat format the remote worker speaks: the address
// check, the request body, the chunks of an answer and error bodies. No network.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

#include "remote/openai_chat.hpp"
#include "remote/sse_parser.hpp"

using namespace mnemo::gui;

namespace {

// What `mnemo serve` streams (tests/serve/openai_client/sse_golden.txt, shortened), with a
// prefill comment, a keep-alive, a piece holding a multi-byte character and the end.
const QByteArray kStream =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
    ": prompt 20/20\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Thai\"},\"finish_reason\":null}]}\n\n"
    ": keep-alive\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"m\xC3\xBC\"},\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"timings\":{\"prompt_n\":20,\"prompt_ms\":2.5,"
    "\"predicted_n\":4,\"predicted_ms\":0.8,\"predicted_per_second\":4882.8},\"references\":[{\"chunk\":1,\"id\":2,\"score\":null,"
    "\"text\":\"The birthplace of Quear Mousaim is Thaimubort.\",\"title\":\"\",\"source\":\"\",\"document\":\"corpus.txt\","
    "\"document_version\":null},{\"chunk\":2,\"id\":7,\"score\":0.5,\"text\":\"t\",\"title\":\"T\",\"source\":\"s\",\"document\":\"d\","
    "\"document_version\":3}]}\n\n"
    "data: [DONE]\n\n";

QList<SseEvent> feedInPieces(const QByteArray& stream, const QList<qsizetype>& cuts, bool& pendingAtEnd) {
    SseParser p;
    QList<SseEvent> all;
    qsizetype from = 0;
    for (qsizetype cut : cuts) {
        all += p.feed(stream.mid(from, cut - from));
        from = cut;
    }
    all += p.feed(stream.mid(from));
    pendingAtEnd = p.pending();
    return all;
}

}  // namespace

class TestSseParser : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parsesTheWholeStreamAtOnce() {
        bool pending = true;
        const QList<SseEvent> ev = feedInPieces(kStream, {}, pending);
        QCOMPARE(ev.size(), 7);
        QVERIFY(!pending);
        QVERIFY(ev[1].comment);
        QCOMPARE(ev[1].data, QByteArray("prompt 20/20"));
        QVERIFY(ev[3].comment);
        QCOMPARE(ev[3].data, QByteArray("keep-alive"));
        QVERIFY(!ev[2].comment);
        QVERIFY(ev[2].data.startsWith("{\"choices\""));
        QCOMPARE(ev[6].data, QByteArray("[DONE]"));
    }

    // Every cut point, and every pair of cut points: the same events come out, whatever the reads.
    void anEventSplitAnywhereComesOutWhole() {
        bool pending = true;
        const QList<SseEvent> whole = feedInPieces(kStream, {}, pending);
        for (qsizetype i = 1; i < kStream.size(); ++i) {
            const QList<SseEvent> ev = feedInPieces(kStream, {i}, pending);
            QCOMPARE(ev.size(), whole.size());
            for (qsizetype k = 0; k < ev.size(); ++k) QCOMPARE(ev[k].data, whole[k].data);
            QVERIFY(!pending);
        }
        for (qsizetype i = 1; i < kStream.size(); i += 7)
            for (qsizetype j = i + 1; j < kStream.size(); j += 5) {
                const QList<SseEvent> ev = feedInPieces(kStream, {i, j}, pending);
                QCOMPARE(ev.size(), whole.size());
                QCOMPARE(ev[4].data, whole[4].data);  // the piece with the two-byte character
            }
    }

    void aStreamCutBeforeItsBlankLineIsPending() {
        bool pending = false;
        const QByteArray cut = kStream.left(kStream.indexOf("data: [DONE]") + 12);  // no blank line after [DONE]
        const QList<SseEvent> ev = feedInPieces(cut, {}, pending);
        QCOMPARE(ev.size(), 6);  // [DONE] is not complete
        QVERIFY(pending);
    }

    void crlfLineEndsAndMultiLineDataAndEventNames() {
        QByteArray s = "event: note\r\ndata: a\r\ndata:b\r\n\r\n:c\r\n\r\nid: 1\r\nretry: 5\r\ndata\r\n\r\n";
        for (qsizetype i = 0; i <= s.size(); ++i) {  // a "\r" at the end of one read, its "\n" in the next
            bool pending = true;
            const QList<SseEvent> ev = feedInPieces(s, i == 0 || i == s.size() ? QList<qsizetype>{} : QList<qsizetype>{i}, pending);
            QCOMPARE(ev.size(), 3);
            QCOMPARE(ev[0].name, QByteArray("note"));
            QCOMPARE(ev[0].data, QByteArray("a\nb"));
            QVERIFY(ev[1].comment);
            QCOMPARE(ev[1].data, QByteArray("c"));
            QCOMPARE(ev[2].data, QByteArray(""));  // "data" alone: an empty data line
            QVERIFY(!pending);
        }
        // A blank line with no fields before it is no event.
        SseParser p;
        QVERIFY(p.feed("\n\n\r\n").isEmpty());
    }

    void readsTheChunksOfAnAnswer() {
        bool pending = true;
        const QList<SseEvent> ev = feedInPieces(kStream, {}, pending);
        QString why;
        std::optional<ChatChunk> c = parseChatChunk(ev[4].data, why);
        QVERIFY2(c, qPrintable(why));
        QCOMPARE(c->text, QString::fromUtf8("m\xC3\xBC"));
        QVERIFY(!c->finish);
        c = parseChatChunk(ev[5].data, why);
        QVERIFY2(c, qPrintable(why));
        QCOMPARE(*c->finish, QStringLiteral("stop"));
        QVERIFY(c->hasTimings);
        QCOMPARE(c->promptTokens, 20);
        QCOMPARE(c->predictedTokens, 4);
        QCOMPARE(c->predictedPerSecond, 4882.8);
        QCOMPARE(c->references.size(), 2);
        QCOMPARE(c->references[0].text, std::string("The birthplace of Quear Mousaim is Thaimubort."));
        QVERIFY(!c->references[0].has_score);  // null: a memory folder
        QCOMPARE(c->references[0].doc_id, std::string("corpus.txt"));
        QCOMPARE(c->references[1].chunk, 2);
        QCOMPARE(c->references[1].id, 7u);
        QVERIFY(c->references[1].has_score);
        QCOMPARE(c->references[1].doc_version, 3u);
        QCOMPARE(finishReasonOf(QStringLiteral("length")), FinishReason::Limit);

        c = parseChatChunk("{\"error\":{\"message\":\"decode failed\",\"type\":\"server_error\"}}", why);
        QVERIFY(c);
        QCOMPARE(c->error, QStringLiteral("decode failed"));
        QVERIFY(!parseChatChunk("{\"choices\":", why));
        QVERIFY2(why.contains(QStringLiteral("not JSON")), qPrintable(why));
        QVERIFY(!parseChatChunk("{\"object\":\"x\"}", why));
        QVERIFY2(why.contains(QStringLiteral("choices")), qPrintable(why));
    }

    void errorBodiesAndModelLists() {
        QCOMPARE(errorMessageOf(R"({"error":{"message":"the API key is not one this server accepts","type":"invalid_request_error"}})"),
                 QStringLiteral("the API key is not one this server accepts"));
        QVERIFY(errorMessageOf("<html>502</html>").isEmpty());
        QString why;
        QCOMPARE(firstModelId(R"({"object":"list","data":[{"id":"mnemo-default","object":"model"}]})", why), QStringLiteral("mnemo-default"));
        QVERIFY(firstModelId(R"({"object":"list","data":[]})", why).isEmpty());
        QVERIFY(!why.isEmpty());
    }

    void checksTheServerAddress() {
        QString why;
        QCOMPARE(serverBaseUrl(QStringLiteral(" http://127.0.0.1:8080/v1/ "), why), QUrl(QStringLiteral("http://127.0.0.1:8080/v1")));
        QCOMPARE(serverBaseUrl(QStringLiteral("https://gpu.example:443"), why), QUrl(QStringLiteral("https://gpu.example:443/v1")));
        QCOMPARE(endpoint(QUrl(QStringLiteral("http://h:1/v1")), QStringLiteral("chat/completions")),
                 QUrl(QStringLiteral("http://h:1/v1/chat/completions")));
        for (const char* bad : {"", "127.0.0.1:8080", "ftp://h/v1", "grpc://h:1", "http:///v1", "http://h:1/v1?x=1"}) {
            why.clear();
            QVERIFY2(serverBaseUrl(QString::fromLatin1(bad), why).isEmpty(), bad);
            QVERIFY2(!why.isEmpty(), bad);
        }
    }

    void theRequestCarriesTheConversationAndTheSampling() {
        SamplingSettings s;
        s.temperature = 0.0f;
        s.topK = 12;
        s.topP = 0.5f;
        s.minP = 0.25f;
        s.repeatPenalty = 1.5f;
        s.maxTokens = 33;
        s.seed = 1234;
        const QList<ChatTurn> turns{{QStringLiteral("system"), QStringLiteral("Be brief.")},
                                    {QStringLiteral("user"), QStringLiteral("Where was Quear Mousaim born?")},
                                    {QStringLiteral("assistant"), QStringLiteral("Thaimubort")},
                                    {QStringLiteral("user"), QStringLiteral("And his trade?")}};
        const QJsonObject o = QJsonDocument::fromJson(chatRequestBody(QStringLiteral("mnemo-default"), turns, s)).object();
        QCOMPARE(o.value(QStringLiteral("model")).toString(), QStringLiteral("mnemo-default"));
        QCOMPARE(o.value(QStringLiteral("stream")).toBool(), true);
        QCOMPARE(o.value(QStringLiteral("temperature")).toDouble(), 0.0);
        QCOMPARE(o.value(QStringLiteral("top_k")).toInt(), 12);
        QCOMPARE(o.value(QStringLiteral("top_p")).toDouble(), 0.5);
        QCOMPARE(o.value(QStringLiteral("min_p")).toDouble(), 0.25);
        QCOMPARE(o.value(QStringLiteral("repeat_penalty")).toDouble(), 1.5);
        QCOMPARE(o.value(QStringLiteral("max_tokens")).toInt(), 33);
        QCOMPARE(o.value(QStringLiteral("seed")).toInteger(), 1234);
        const QJsonArray m = o.value(QStringLiteral("messages")).toArray();
        QCOMPARE(m.size(), 4);
        QCOMPARE(m[2].toObject().value(QStringLiteral("role")).toString(), QStringLiteral("assistant"));
        QCOMPARE(m[3].toObject().value(QStringLiteral("content")).toString(), QStringLiteral("And his trade?"));
        // mnemo serve's "grounded" extension only when asked: the server's own default rules otherwise.
        QVERIFY(!o.contains(QStringLiteral("grounded")));
        s.grounded = true;
        QCOMPARE(QJsonDocument::fromJson(chatRequestBody({}, turns, s)).object().value(QStringLiteral("grounded")), QJsonValue(true));
        s.maxTokens = -1;  // until the context is full: no limit sent
        QVERIFY(!QJsonDocument::fromJson(chatRequestBody({}, turns, s)).object().contains(QStringLiteral("max_tokens")));
    }
};

QTEST_GUILESS_MAIN(TestSseParser)
#include "test_sse_parser.moc"
