#include "conversation/conversation_json.hpp"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>

#include <algorithm>

namespace mnemo::gui {

namespace {

QJsonObject referenceToJson(const RetrievedReference& r) {
    QJsonObject o{{"chunk", r.chunk}, {"id", static_cast<qint64>(r.id)}, {"text", QString::fromStdString(r.text)}};
    if (!r.title.empty()) o.insert("title", QString::fromStdString(r.title));
    if (!r.source.empty()) o.insert("source", QString::fromStdString(r.source));
    if (!r.doc_id.empty()) o.insert("doc_id", QString::fromStdString(r.doc_id));
    if (r.doc_version > 0) o.insert("doc_version", static_cast<qint64>(r.doc_version));
    if (r.has_score) o.insert("score", static_cast<double>(r.score));
    return o;
}

RetrievedReference referenceFromJson(const QJsonObject& o) {
    RetrievedReference r;
    r.chunk = o.value("chunk").toInt();
    r.id = static_cast<uint32_t>(o.value("id").toInteger());
    r.text = o.value("text").toString().toStdString();
    r.title = o.value("title").toString().toStdString();
    r.source = o.value("source").toString().toStdString();
    r.doc_id = o.value("doc_id").toString().toStdString();
    r.doc_version = static_cast<uint64_t>(std::max<qint64>(0, o.value("doc_version").toInteger()));
    r.has_score = o.contains("score");
    r.score = static_cast<float>(o.value("score").toDouble());
    return r;
}

QJsonArray messagesToJson(const QList<Message>& messages);

QJsonObject messageToJson(const Message& m) {
    QJsonObject o{{"role", m.role}, {"text", m.text}};
    // Added after version 1 was out, optional both ways: an older app ignores them (and keeps the
    // visible branch), an older file has none.
    if (!m.alternatives.isEmpty()) {
        QJsonArray versions;
        for (const QList<Message>& tail : m.alternatives) versions.append(messagesToJson(tail));
        o.insert("alternatives", QJsonObject{{"shown", m.version}, {"others", versions}});
    }
    if (m.role == QLatin1String("assistant")) {
        o.insert("finish", m.finish);
        // Only when it differs from the text: what the template renders (Message::historyText).
        if (!m.historyText.isEmpty() && m.historyText != m.text) o.insert("history_text", m.historyText);
        if (!m.error.isEmpty()) o.insert("error", m.error);
        if (!m.device.isEmpty()) o.insert("device", m.device);
        if (!m.notice.isEmpty()) o.insert("notice", m.notice);
        o.insert("tokens", m.tokens);
        o.insert("tokens_per_second", m.tokensPerSecond);
        o.insert("first_token_seconds", m.firstTokenSeconds);
        if (m.seed >= 0) o.insert("seed", m.seed);  // 32-bit: exact as a JSON number
        if (m.droppedMessages > 0) o.insert("dropped_messages", m.droppedMessages);
        QJsonArray references;
        for (const RetrievedReference& r : m.references) references.append(referenceToJson(r));
        o.insert("references", references);
    }
    return o;
}

QJsonArray messagesToJson(const QList<Message>& messages) {
    QJsonArray a;
    for (const Message& m : messages) a.append(messageToJson(m));
    return a;
}

// The messages of `array` (at `path` for errors: "messages", "messages[3].alternatives.others[0]").
std::optional<QList<Message>> messagesFromJson(const QJsonArray& array, const QString& path, QString& why) {
    QList<Message> out;
    for (qsizetype i = 0; i < array.size(); ++i) {
        const QString at = QStringLiteral("%1[%2]").arg(path).arg(i);
        const QJsonObject m = array.at(i).toObject();
        const QString role = m.value("role").toString();
        if (role != QLatin1String("user") && role != QLatin1String("assistant")) {
            why = QStringLiteral("%1.role is \"%2\"; expected \"user\" or \"assistant\"").arg(at, role);
            return std::nullopt;
        }
        if (!m.value("text").isString()) {
            why = QStringLiteral("%1.text is missing or not a string").arg(at);
            return std::nullopt;
        }
        Message msg;
        msg.role = role;
        msg.text = m.value("text").toString();
        msg.finish = m.value("finish").toString();
        msg.error = m.value("error").toString();
        msg.device = m.value("device").toString();
        msg.notice = m.value("notice").toString();  // optional: files written before it existed have none
        msg.historyText = m.value("history_text").toString();  // optional likewise
        msg.tokens = m.value("tokens").toInt();
        msg.tokensPerSecond = m.value("tokens_per_second").toDouble();
        msg.firstTokenSeconds = m.value("first_token_seconds").toDouble();
        msg.seed = m.contains("seed") ? m.value("seed").toInteger(-1) : -1;  // optional likewise
        msg.droppedMessages = std::max(0, m.value("dropped_messages").toInt());
        for (const QJsonValue& r : m.value("references").toArray()) msg.references.push_back(referenceFromJson(r.toObject()));
        if (m.contains("alternatives")) {
            const QJsonObject alt = m.value("alternatives").toObject();
            const QJsonArray others = alt.value("others").toArray();
            for (qsizetype k = 0; k < others.size(); ++k) {
                const QString otherPath = QStringLiteral("%1.alternatives.others[%2]").arg(at).arg(k);
                if (!others.at(k).isArray() || others.at(k).toArray().isEmpty()) {
                    why = QStringLiteral("%1 is not a non-empty array of messages").arg(otherPath);
                    return std::nullopt;
                }
                std::optional<QList<Message>> tail = messagesFromJson(others.at(k).toArray(), otherPath, why);
                if (!tail) return std::nullopt;
                msg.alternatives.push_back(std::move(*tail));
            }
            msg.version = std::clamp(alt.value("shown").toInt(), 0, static_cast<int>(msg.alternatives.size()));
        }
        out.push_back(std::move(msg));
    }
    return out;
}

}  // namespace

QJsonObject conversationToJson(const Conversation& c) {
    const QJsonArray messages = messagesToJson(c.messages);
    QJsonObject o{{"format", kConversationFormat},
                       {"version", kConversationFormatVersion},
                       {"id", c.id},
                       {"title", c.title},
                       {"system_prompt", c.systemPrompt},
                       {"model", c.model},
                       {"created", c.created.toUTC().toString(Qt::ISODateWithMs)},
                       {"updated", c.updated.toUTC().toString(Qt::ISODateWithMs)},
                       {"messages", messages}};
    if (c.titleByUser) o.insert("title_by_user", true);  // optional: absent means the first prompt's
    return o;
}

QByteArray conversationToBytes(const Conversation& c) {
    return QJsonDocument(conversationToJson(c)).toJson(QJsonDocument::Indented);
}

std::optional<Conversation> conversationFromBytes(const QByteArray& bytes, ReadProblem* problem) {
    auto fail = [&](const QString& why, bool newer = false) -> std::optional<Conversation> {
        if (problem) *problem = {why, newer};
        return std::nullopt;
    };
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &err);
    if (err.error != QJsonParseError::NoError)
        return fail(QStringLiteral("not valid JSON at byte %1: %2").arg(err.offset).arg(err.errorString()));
    if (!doc.isObject()) return fail(QStringLiteral("not a JSON object"));
    const QJsonObject o = doc.object();
    if (o.value("format").toString() != QLatin1String(kConversationFormat))
        return fail(QStringLiteral("field \"format\" is not \"%1\"").arg(QLatin1String(kConversationFormat)));
    if (!o.value("version").isDouble()) return fail(QStringLiteral("field \"version\" is missing or not a number"));
    const int version = o.value("version").toInt();
    if (version > kConversationFormatVersion)
        return fail(QStringLiteral("format version %1 is newer than this app reads (%2)").arg(version).arg(kConversationFormatVersion),
                    true);
    if (version < 1) return fail(QStringLiteral("field \"version\" is %1; versions start at 1").arg(version));
    if (!o.value("id").isString() || o.value("id").toString().isEmpty())
        return fail(QStringLiteral("field \"id\" is missing or empty"));
    if (!o.value("messages").isArray()) return fail(QStringLiteral("field \"messages\" is missing or not an array"));

    Conversation c;
    c.id = o.value("id").toString();
    c.title = o.value("title").toString();
    c.systemPrompt = o.value("system_prompt").toString();
    c.model = o.value("model").toString();
    c.created = QDateTime::fromString(o.value("created").toString(), Qt::ISODateWithMs);
    c.updated = QDateTime::fromString(o.value("updated").toString(), Qt::ISODateWithMs);
    c.titleByUser = o.value("title_by_user").toBool();
    QString why;
    std::optional<QList<Message>> messages = messagesFromJson(o.value("messages").toArray(), QStringLiteral("messages"), why);
    if (!messages) return fail(why);
    c.messages = std::move(*messages);
    return c;
}

}  // namespace mnemo::gui
