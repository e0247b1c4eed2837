// What the performance strip says (chat.performance): the figures of the last answer of the model
// that answers now — never another's. While an answer streams it shows that answer's live figures
// ("Answering… first token 85 ms · ~12 tokens so far · ~40.0 tokens/s"), not the previous answer's; when the model
// (or its device, its context, or the server) changes it starts again from "No answer yet", so a
// context used by one model is never shown against another's size (issue 29: "context 592 / 2176").
#pragma once

#include <QElapsedTimer>
#include <QString>

#include "engine/worker_types.hpp"

namespace mnemo::gui {

class AnswerFigures {
public:
    // The live decode rate shows once this long has passed since the first token.
    static constexpr double kLiveRateAfterSeconds = 0.25;

    // What answers now, as a key: a change of key forgets the figures. Returns whether it did.
    bool setAnswerer(const QString& key);
    void reset();

    void answerStarted();
    void pieceArrived();  // a streamed piece: the first one times the first token
    void answerEnded(const GenerationResult& r);  // the worker's own figures replace the live ones
    // Stopped or failed: `what` ("Stopped", "The answer failed") until figures come (a stopped
    // answer's follow at once), never the previous answer's. No-op when no answer is going on.
    void answerAbandoned(const QString& what);

    // The strip's text. `contextLength` and `memoryBytes`: the local model's (ModelInfo).
    QString text(int contextLength, quint64 memoryBytes) const;

private:
    QString answerer_;
    bool answering_ = false;
    QString abandoned_;  // what the strip says after a stop or a failure, until figures come
    QElapsedTimer clock_;
    double liveFirstTokenMs_ = -1;  // < 0: no piece yet
    int livePieces_ = 0;

    bool have_ = false;  // figures of an answer of this answerer
    double tokensPerSecond_ = 0.0;
    double firstTokenMs_ = 0.0;
    int contextUsed_ = 0;
    bool fromServer_ = false;
};

}  // namespace mnemo::gui
