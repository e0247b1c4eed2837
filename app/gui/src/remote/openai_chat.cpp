#include "remote/openai_chat.hpp"

#include <QJsonArray>
#include <QJsonDocument>

namespace mnemo::gui {

QUrl serverBaseUrl(const QString& typed, QString& why) {
    const QString t = typed.trimmed();
    if (t.isEmpty()) {
        why = QStringLiteral("give the server's address: http://HOST:PORT/v1 (or https://…)");
        return {};
    }
    QUrl url(t, QUrl::StrictMode);
    if (!url.isValid() || (url.scheme() != QLatin1String("http") && url.scheme() != QLatin1String("https")) || url.host().isEmpty()) {
        why = QStringLiteral("'%1' is not a server address: give http://HOST:PORT/v1 or https://HOST:PORT/v1").arg(t);
        return {};
    }
    if (url.hasQuery() || url.hasFragment()) {
        why = QStringLiteral("'%1' has a query or fragment: give the API's base, http://HOST:PORT/v1").arg(t);
        return {};
    }
    QString path = url.path();
    while (path.endsWith(QLatin1Char('/'))) path.chop(1);
    // The API lives under /v1 (as OpenAI's clients expect the base); an address typed without it
    // means the server's root.
    if (!path.endsWith(QLatin1String("/v1"))) path += QStringLiteral("/v1");
    url.setPath(path);
    why.clear();
    return url;
}

QUrl endpoint(const QUrl& base, const QString& path) {
    QUrl u = base;
    u.setPath(base.path() + QLatin1Char('/') + path);
    return u;
}

QByteArray chatRequestBody(const QString& model, const QList<ChatTurn>& turns, const SamplingSettings& s) {
    QJsonArray messages;
    for (const ChatTurn& t : turns) messages.append(QJsonObject{{QStringLiteral("role"), t.role}, {QStringLiteral("content"), t.text}});
    QJsonObject body{{QStringLiteral("model"), model},
                     {QStringLiteral("messages"), messages},
                     {QStringLiteral("stream"), true},
                     {QStringLiteral("stream_options"), QJsonObject{{QStringLiteral("include_usage"), true}}},
                     {QStringLiteral("temperature"), s.temperature > 0 ? static_cast<double>(s.temperature) : 0.0},
                     {QStringLiteral("top_p"), static_cast<double>(s.topP)},
                     {QStringLiteral("top_k"), s.topK},
                     {QStringLiteral("min_p"), static_cast<double>(s.minP)},
                     {QStringLiteral("repeat_penalty"), static_cast<double>(s.repeatPenalty)},
                     // The local sampler's seed, so a sampled answer is as repeatable as it is locally.
                     // QJsonValue holds numbers as doubles: the seed is cut to what a double keeps exactly.
                     {QStringLiteral("seed"), static_cast<qint64>(s.seed & ((quint64{1} << 53) - 1))}};
    if (s.maxTokens > 0) body.insert(QStringLiteral("max_tokens"), s.maxTokens);  // < 0: until the server's context is full
    // mnemo serve's extension; sent only when asked, so that any other OpenAI server, which would
    // ignore it, is not told something it cannot honour and a server's own --grounded still rules.
    if (s.grounded) body.insert(QStringLiteral("grounded"), true);
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

namespace {

RetrievedReference referenceOf(const QJsonObject& o) {
    RetrievedReference r;
    r.chunk = o.value(QStringLiteral("chunk")).toInt();
    r.id = static_cast<uint32_t>(o.value(QStringLiteral("id")).toDouble());
    const QJsonValue score = o.value(QStringLiteral("score"));
    r.has_score = score.isDouble();  // null from a memory folder
    r.score = static_cast<float>(score.toDouble());
    r.text = o.value(QStringLiteral("text")).toString().toStdString();
    r.title = o.value(QStringLiteral("title")).toString().toStdString();
    r.source = o.value(QStringLiteral("source")).toString().toStdString();
    r.doc_id = o.value(QStringLiteral("document")).toString().toStdString();
    r.doc_version = static_cast<uint64_t>(o.value(QStringLiteral("document_version")).toDouble());
    return r;
}

}  // namespace

std::optional<ChatChunk> parseChatChunk(const QByteArray& json, QString& why) {
    QJsonParseError err{};
    const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject()) {
        why = QStringLiteral("an event of the stream is not JSON (%1 at byte %2)").arg(err.errorString()).arg(err.offset);
        return std::nullopt;
    }
    const QJsonObject o = doc.object();
    ChatChunk c;
    if (o.contains(QStringLiteral("error"))) {
        const QJsonValue e = o.value(QStringLiteral("error"));
        c.error = e.isObject() ? e.toObject().value(QStringLiteral("message")).toString() : e.toString();
        if (c.error.isEmpty()) c.error = QStringLiteral("the server reported an error without a message");
        return c;
    }
    if (!o.value(QStringLiteral("choices")).isArray()) {
        why = QStringLiteral("an event of the stream has no 'choices'");
        return std::nullopt;
    }
    const QJsonArray choices = o.value(QStringLiteral("choices")).toArray();
    if (!choices.isEmpty()) {
        const QJsonObject choice = choices.first().toObject();
        c.text = choice.value(QStringLiteral("delta")).toObject().value(QStringLiteral("content")).toString();
        const QJsonValue finish = choice.value(QStringLiteral("finish_reason"));
        if (finish.isString()) c.finish = finish.toString();
    }
    const QJsonValue timings = o.value(QStringLiteral("timings"));
    if (timings.isObject()) {
        const QJsonObject t = timings.toObject();
        c.hasTimings = true;
        c.promptTokens = t.value(QStringLiteral("prompt_n")).toInt();
        c.promptMs = t.value(QStringLiteral("prompt_ms")).toDouble();
        c.predictedTokens = t.value(QStringLiteral("predicted_n")).toInt();
        c.predictedPerSecond = t.value(QStringLiteral("predicted_per_second")).toDouble();
    }
    const QJsonValue usage = o.value(QStringLiteral("usage"));
    if (usage.isObject()) {
        c.hasUsage = true;
        c.usagePromptTokens = usage.toObject().value(QStringLiteral("prompt_tokens")).toInt();
        c.usageCompletionTokens = usage.toObject().value(QStringLiteral("completion_tokens")).toInt();
    }
    for (const QJsonValue& r : o.value(QStringLiteral("references")).toArray())
        if (r.isObject()) c.references.push_back(referenceOf(r.toObject()));
    return c;
}

QString errorMessageOf(const QByteArray& body) {
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    if (!doc.isObject()) return {};
    const QJsonValue e = doc.object().value(QStringLiteral("error"));
    if (e.isObject()) return e.toObject().value(QStringLiteral("message")).toString();
    return e.toString();
}

QString firstModelId(const QByteArray& body, QString& why) {
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    const QJsonArray data = doc.object().value(QStringLiteral("data")).toArray();
    if (!doc.isObject() || data.isEmpty()) {
        why = QStringLiteral("GET /v1/models did not list a model (is this an OpenAI-compatible server?)");
        return {};
    }
    const QString id = data.first().toObject().value(QStringLiteral("id")).toString();
    if (id.isEmpty()) why = QStringLiteral("GET /v1/models listed a model without an id");
    return id;
}

FinishReason finishReasonOf(const QString& r) {
    if (r == QLatin1String("length")) return FinishReason::Limit;
    return FinishReason::EndOfTurn;  // "stop", and any other end the server gives
}

}  // namespace mnemo::gui
