// The engine side of the app: one ModelWorker per loaded model, living on its own QThread
// (WorkerThread below). Everything slow — loading a model, prefill, decoding — happens here; the
// GUI thread only sends requests through queued signals and gets queued signals back (tokens as
// they are decoded, results, errors). Stop is the one call made across threads directly: it sets
// an atomic flag that the token loop and the session check every token.
//
// The conversation's tokens stay in the session's KV cache between turns: each request renders
// the whole conversation with the model's chat template and feeds only what the cache does not
// hold yet (after an edit or a regeneration the cache is rebuilt from the first token that
// differs — a sequence is forgotten only as a whole, so that means from scratch).
#pragma once

#include <QObject>
#include <QThread>
#include <atomic>
#include <memory>
#include <vector>

#include "engine/owned_thread.hpp"
#include "engine/run_cancellation.hpp"
#include "app/chat_cache.hpp"
#include "engine/worker_types.hpp"
#include "mnemo/session/session.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo {
class KbSource;
namespace app {
class AnswerGrounding;
}
class RetrievalRecorder;
}  // namespace mnemo

namespace mnemo::gui {

class ModelWorker : public QObject {
    Q_OBJECT
public:
    ModelWorker();
    ~ModelWorker() override;

    // Any thread: stops generation `id` (and any earlier one still queued) at its next token.
    void requestStop(quint64 id);

public Q_SLOTS:
    // Loads the model into a new session; only when that succeeds does it replace the current
    // one, so a failed load (a device without memory, a broken folder) leaves the previous model
    // answering. Emits loaded() or loadFailed().
    void load(quint64 id, mnemo::gui::LoadRequest request);
    // Answers the last user turn of `turns`. Emits token() per piece of text, then
    // generationFinished() (also when stopped) or generationFailed().
    void generate(quint64 id, QList<mnemo::gui::ChatTurn> turns, mnemo::gui::SamplingSettings settings);

Q_SIGNALS:
    void loaded(quint64 id, mnemo::gui::ModelInfo info);
    // `previousKept`: a model loaded earlier is still there and answering.
    void loadFailed(quint64 id, QString reason, bool previousKept);
    void token(quint64 id, QString piece);
    void generationFinished(quint64 id, mnemo::gui::GenerationResult result);
    void generationFailed(quint64 id, QString reason);
    // The knowledge server stopped answering, answers again, or serves a new bank (any thread),
    // in words for the status line, with its severity and the client's own text as details.
    void kbNotice(mnemo::gui::StatusNotice notice);

private:
    // Session::open with a context past the model's trained length clamped to it; `note` then
    // says so, naming both numbers.
    static std::unique_ptr<Session> openClamped(SessionOptions o, const LoadRequest& request, std::string& note);
    // Connects to the request's knowledge server for `session`; nullptr (and `status` saying
    // why) when it cannot: the model then answers without memories.
    std::shared_ptr<KbSource> connectKb(Session& session, const LoadRequest& request, KbStatus& status);
    KbStatus kbNow() const;  // the source's state as it is now

    std::unique_ptr<Session> session_;
    std::unique_ptr<Tokenizer> tokenizer_;
    ChatTemplate template_;
    std::shared_ptr<RetrievalRecorder> recorder_;  // in front of the memory source, if any
    ModelInfo info_;
    std::unique_ptr<app::ChatCache> cache_;  // the conversation in session_'s sequence 0
    // Made at the model's first grounded answer (it holds every token's text), kept until the next load.
    std::unique_ptr<app::AnswerGrounding> grounding_;

    RunCancellation cancellation_;  // the session's and the token loop's cancel flag
};

// Owns a ModelWorker on a thread of its own. Destroying it stops a generation in progress and
// waits for the thread to finish what it is doing (at most one token, or a load in progress).
class WorkerThread : public OwnedThread<ModelWorker> {
public:
    WorkerThread() : OwnedThread("mnemo-model", &ModelWorker::requestStop) {}
};

}  // namespace mnemo::gui
