// The compare view's engine side: runs mnemo::compare_backends (one prompt on several backends,
// one after another, each in its own Session) on a thread of its own, so neither the GUI nor the
// chat's model thread waits for it. Requests and reports travel by queued signals; cancel() is
// the one direct call (an atomic flag compare_backends checks between steps).
#pragma once

#include <QObject>
#include <QThread>
#include <atomic>

#include "compare/compare_types.hpp"
#include "engine/owned_thread.hpp"
#include "engine/run_cancellation.hpp"

namespace mnemo::gui {

class CompareWorker : public QObject {
    Q_OBJECT
public:
    CompareWorker();

    // Any thread: the run in progress (and any queued before `id`) ends at its next step.
    void cancel(quint64 id);

public Q_SLOTS:
    // Emits backendStarted() before each backend loads, then finished(), cancelled() or failed()
    // (bad options: an empty prompt, no backends, a model folder that does not open). A backend
    // that cannot run is not a failure: its column carries the reason.
    void run(quint64 id, mnemo::gui::CompareRequest request);

Q_SIGNALS:
    void backendStarted(quint64 id, QString spec, int index, int count);
    void finished(quint64 id, mnemo::gui::CompareReport report);
    void cancelled(quint64 id);
    void failed(quint64 id, QString reason);

private:
    RunCancellation cancellation_;
};

// Owns a CompareWorker on its own thread; destroying it cancels a run and waits for the thread
// (at most one decode step or a backend load in progress).
class CompareThread : public OwnedThread<CompareWorker> {
public:
    CompareThread() : OwnedThread("mnemo-compare", &CompareWorker::cancel) {}
};

}  // namespace mnemo::gui
