// A conversation as the app keeps it: messages with what each answer measured and retrieved.
// It is what ConversationModel shows, ConversationStore saves (conversation_json) and the
// exports write (conversation_export).
#pragma once

#include <QDateTime>
#include <QList>
#include <QString>

#include "engine/worker_types.hpp"

namespace mnemo::gui {

struct Message {
    QString role;  // "user" or "assistant" (the system prompt is the conversation's own field)
    QString text;
    // An answer as the conversation continues it (GenerationResult::historyText), what the chat
    // template renders so the cached conversation is reused; empty: text (and for prompts).
    QString historyText;
    bool streaming = false;         // tokens are still arriving
    QString finish;                 // why the answer ended ("stopped", "token limit", ...); empty for prompts
    QString error;                  // why an answer failed; empty when it did not
    QString device;                 // where the answer was computed ("cpu:0 AMD EPYC")
    // Why the answer was written without (some of) its memories: the knowledge server did not
    // answer or refused the token. Shown under the answer; empty when nothing was missing.
    QString notice;
    int tokens = 0;
    double tokensPerSecond = 0.0;
    double firstTokenSeconds = 0.0;
    QList<RetrievedReference> references;  // what the answer read, chunk by chunk
    qint64 seed = -1;         // the sampler's seed of this answer; -1: not known (older files, prompts)
    int droppedMessages = 0;  // oldest messages left out so that the conversation fit the context

    // The other versions of this message, each with what followed it (branches.hpp): for an
    // answer, the answers a regeneration replaced (and their follow-ups); for a prompt, its text
    // before an edit and the conversation that went on from it. Stepped through with ‹ k/n ›; only
    // the first message of the visible tail holds them. `version` is this one's place among all
    // (0 .. alternatives.size()).
    QList<QList<Message>> alternatives;
    int version = 0;
};

struct Conversation {
    QString id;     // also the file name: <id>.json
    QString title;
    // The title was typed by the user (Rename): it no longer follows the first prompt.
    bool titleByUser = false;
    QString systemPrompt;
    QString model;  // the model folder it was last answered by
    QDateTime created;
    QDateTime updated;
    QList<Message> messages;
};

// "Where was Tour Hujert born?" -> the first words of the first prompt, as a title.
QString titleFrom(const QString& prompt);

}  // namespace mnemo::gui
