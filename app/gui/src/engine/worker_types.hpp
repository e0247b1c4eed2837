// The values that cross between the GUI thread and a ModelWorker's thread. They travel by queued
// signals, so each is a plain copyable value registered as a Qt metatype (registerWorkerTypes).
#pragma once

#include <QList>
#include <QMetaType>
#include <QString>

#include "engine/kb_status.hpp"
#include "mnemo/memory/explicit_memory.hpp"

namespace mnemo::gui {

// What to load and where: a model folder on one backend device, optionally with explicit
// memories from a memory folder (`mnemo memorize`).
struct LoadRequest {
    QString modelDir;
    QString backend = QStringLiteral("cpu");
    int device = 0;
    int threads = 0;        // 0: the backend's choice
    int contextLength = 0;  // 0: the engine's default (min(trained, 4096))
    QString memoryFolder;   // empty: no explicit memories
    QString retrieval = QStringLiteral("vector");  // "vector" or "bm25"; a knowledge server also "hybrid"
    // A knowledge server instead of a memory folder (`mnemo-kb serve`): grpcs://HOST:PORT, or
    // grpc://HOST:PORT on loopback. A server that cannot be reached does not fail the load: the
    // model loads without memories and the status says why.
    QString kbUrl;
    QString kbTokenFile;  // the bearer token's file; empty: none sent
    QString kbCaFile;     // PEM roots of the server's certificate; empty: the system's
    int kbTimeoutMs = 2000;
};

// What the model info line shows, read from the loaded session.
struct ModelInfo {
    QString modelDir;
    QString modelType;
    QString architecture;
    QString backend;
    int device = 0;
    QString deviceName;
    QString chatTemplate;       // "chatml", or "plain" when the model has none
    QString memories;           // the memory source's description; empty without one
    QString memoryFolder;       // as requested (so a reload on another device keeps it)
    QString retrieval;
    QString kbUrl;              // as requested (kept by a reload on another device)
    QString kbTokenFile;
    QString kbCaFile;
    KbStatus kb;                // where memories come from, and whether that works
    qint64 totalParams = 0;
    qint64 activatedParams = 0;
    quint64 bytesPerToken = 0;  // weight bytes one decode step reads
    quint64 memoryBytes = 0;    // weights + state (KV caches) on the device
    int contextLength = 0;
    qint64 trainedContext = 0;  // positions the model was trained on; 0 when unknown
    // Why the context differs from the one asked for (a request past trainedContext is clamped to
    // it), naming both numbers; empty when it is as asked.
    QString contextNote;

    QString deviceText() const;  // "cpu:0 AMD EPYC"
};

struct SamplingSettings {
    float temperature = 0.8f;  // <= 0: greedy
    int topK = 40;
    float topP = 0.95f;
    float minP = 0.05f;
    float repeatPenalty = 1.0f;
    int maxTokens = 512;       // < 0: until the context is full
    // The sampler's seed. SettingsController::sampling() sets it for each answer (a new one drawn
    // from the system's generator, or the fixed one the settings name) and the answer keeps it
    // (Message::seed), so a sampled answer can be told apart and reproduced.
    quint64 seed = 0;
    // A conversation longer than the context: drop its oldest messages (never the system prompt
    // or the new prompt) until it fits with room for the answer; otherwise the answer fails and
    // says so. Only the local model: a server keeps its own context.
    bool dropOldestTurns = false;
    // Answers may only quote the memories their question read, as `mnemo chat --grounded`
    // (app/grounding.hpp): for short factual answers from a memory model. Without memories the
    // answer is free; a server model is asked for it with the request's "grounded" field.
    bool grounded = false;
};

struct ChatTurn {
    QString role;  // "system", "user", "assistant"
    QString text;
};

enum class FinishReason { EndOfTurn, Limit, ContextFull, Stopped };

struct GenerationResult {
    QString text;
    QString historyText;  // the answer as the conversation continues it (app::GenerateResult::history_text)
    int promptTokens = 0; // tokens this request fed before generating: the new turn, or all after a rebuild
    FinishReason reason = FinishReason::EndOfTurn;
    int tokens = 0;
    double seconds = 0.0;           // from the request to the last token
    double firstTokenSeconds = 0.0; // from the request to the first token (prefill included)
    double tokensPerSecond = 0.0;   // generated tokens over the time after the first one
    int contextUsed = 0;            // tokens in the KV cache afterwards
    int droppedMessages = 0;        // oldest messages left out to fit the context (dropOldestTurns)
    QString device;                 // where it ran: "cpu:0 AMD EPYC"
    // The retrieved references the answer read, chunk by chunk (chunks of 64 tokens of the
    // conversation, numbered from 1): the engine's own type (mnemo/memory/explicit_memory.hpp).
    QList<RetrievedReference> references;
    // Why this answer was written without (some of) its memories; empty when none were missing.
    QString kbNotice;
    KbStatus kb;  // the source's state after the answer
    // Answered by a server (RemoteWorker), not by the local model: `kb` and the context's size
    // are the local model's business and say nothing about it.
    bool remote = false;
};

QString finishReasonText(FinishReason r);

// Registers every type above with Qt's meta-type system (idempotent); queued connections need it.
void registerWorkerTypes();

}  // namespace mnemo::gui

Q_DECLARE_METATYPE(mnemo::gui::LoadRequest)
Q_DECLARE_METATYPE(mnemo::gui::ModelInfo)
Q_DECLARE_METATYPE(mnemo::gui::SamplingSettings)
Q_DECLARE_METATYPE(mnemo::gui::ChatTurn)
Q_DECLARE_METATYPE(mnemo::gui::GenerationResult)
