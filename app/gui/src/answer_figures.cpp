#include "answer_figures.hpp"

#include "app/measure.hpp"
#include "plural.hpp"

namespace mnemo::gui {

bool AnswerFigures::setAnswerer(const QString& key) {
    if (key == answerer_) return false;
    answerer_ = key;
    reset();
    return true;
}

void AnswerFigures::reset() {
    have_ = false;
    answering_ = false;
    abandoned_.clear();
    tokensPerSecond_ = firstTokenMs_ = 0.0;
    contextUsed_ = 0;
    fromServer_ = false;
}

void AnswerFigures::answerStarted() {
    answering_ = true;
    abandoned_.clear();
    clock_.start();
    liveFirstTokenMs_ = -1;
    livePieces_ = 0;
}

void AnswerFigures::pieceArrived() {
    if (!answering_) return;
    if (liveFirstTokenMs_ < 0) liveFirstTokenMs_ = static_cast<double>(clock_.nsecsElapsed()) * 1e-6;
    ++livePieces_;
}

void AnswerFigures::answerEnded(const GenerationResult& r) {
    answering_ = false;
    abandoned_.clear();
    have_ = true;
    fromServer_ = r.remote;
    // One token has no decode rate to speak of (the time after the first token is none): the
    // strip then leaves the rate out rather than show a figure that is only the prefill's shadow.
    tokensPerSecond_ = r.tokens > 1 ? r.tokensPerSecond : 0.0;
    firstTokenMs_ = r.firstTokenSeconds * 1000.0;
    contextUsed_ = r.contextUsed;
}

void AnswerFigures::answerAbandoned(const QString& what) {
    if (!answering_) return;
    answering_ = false;
    have_ = false;
    abandoned_ = what;
}

QString AnswerFigures::text(int contextLength, quint64 memoryBytes) const {
    if (answering_) {
        if (liveFirstTokenMs_ < 0) return QStringLiteral("Answering… reading the conversation");
        // Pieces as they were streamed: about one per token (a character cut across tokens
        // arrives whole), hence "~"; the exact count replaces it when the answer ends.
        QString s = QStringLiteral("Answering… first token %1 ms · ~%2 so far")
                        .arg(liveFirstTokenMs_, 0, 'f', 0)
                        .arg(countText(livePieces_, QStringLiteral("token")));
        // The decode rate so far, once there is enough of it to mean something (a quarter of a
        // second after the first token): pieces after the first over the time since it.
        const double sinceFirst = static_cast<double>(clock_.nsecsElapsed()) * 1e-9 - liveFirstTokenMs_ * 1e-3;
        if (livePieces_ > 1 && sinceFirst >= kLiveRateAfterSeconds)
            s += QStringLiteral(" · ~%1 tokens/s").arg((livePieces_ - 1) / sinceFirst, 0, 'f', 1);
        return s;
    }
    if (!have_) return abandoned_.isEmpty() ? QStringLiteral("No answer yet") : abandoned_;
    const QString rate = tokensPerSecond_ > 0 ? QStringLiteral("%1 tokens/s").arg(tokensPerSecond_, 0, 'f', 1) : QStringLiteral("one token");
    if (fromServer_)  // the server's decode rate; the first token as this app saw it, network included
        return QStringLiteral("%1 on the server · first token %2 ms · %3 in the conversation")
            .arg(rate)
            .arg(firstTokenMs_, 0, 'f', 0)
            .arg(countText(contextUsed_, QStringLiteral("token")));
    return QStringLiteral("%1 · first token %2 ms · context %3 / %4 · %5 in memory")
        .arg(rate)
        .arg(firstTokenMs_, 0, 'f', 0)
        .arg(contextUsed_)
        .arg(countText(contextLength, QStringLiteral("token")))
        .arg(QString::fromStdString(app::format_bytes(memoryBytes)));
}

}  // namespace mnemo::gui
