// The OpenAI chat-completions format as `mnemo serve` speaks it (docs/serve.md), for the remote
// worker: the request body of a conversation with the chat's sampling settings, and what each
// streamed chunk carries (a piece of text, the end with its timings and references, or an
// error). Pure functions over JSON, so the tests check them without a network.
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QUrl>
#include <optional>

#include "engine/worker_types.hpp"

namespace mnemo::gui {

// The server's base URL as the user typed it, checked: http or https, a host, no query or
// fragment; a missing "/v1" is added, a trailing "/" dropped ("http://h:8080" ->
// "http://h:8080/v1"). An empty URL and `why` say what is wrong.
QUrl serverBaseUrl(const QString& typed, QString& why);
// base + "/chat/completions", base + "/models".
QUrl endpoint(const QUrl& base, const QString& path);

// The body of POST /v1/chat/completions: every turn as a message, the sampling settings, and
// stream with include_usage (the last chunk then says how many prompt tokens were read).
QByteArray chatRequestBody(const QString& model, const QList<ChatTurn>& turns, const SamplingSettings& s);

// One `data:` event of the answer stream, read.
struct ChatChunk {
    QString text;                  // a piece of the answer (may be empty)
    std::optional<QString> finish; // "stop", "length"...: the answer is complete
    bool hasTimings = false;
    int promptTokens = 0;          // timings.prompt_n, or usage.prompt_tokens
    int predictedTokens = 0;       // timings.predicted_n, or usage.completion_tokens
    double predictedPerSecond = 0; // timings.predicted_per_second
    double promptMs = 0;
    bool hasUsage = false;
    int usagePromptTokens = 0;
    int usageCompletionTokens = 0;
    QList<RetrievedReference> references;
    QString error;                 // an error event after the stream began: its message
};

// Reads one event's JSON; nullopt (and `why`) when it is not a chunk at all.
std::optional<ChatChunk> parseChatChunk(const QByteArray& json, QString& why);

// The message of an error body ({"error": {"message": ...}}); empty when the body is not one.
QString errorMessageOf(const QByteArray& body);

// The id of the first model GET /v1/models lists; empty (and `why`) when the body is not a list.
QString firstModelId(const QByteArray& body, QString& why);

FinishReason finishReasonOf(const QString& openAiReason);

}  // namespace mnemo::gui
