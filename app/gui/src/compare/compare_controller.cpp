#include "compare/compare_controller.hpp"

namespace mnemo::gui {

CompareController::CompareController(QObject* parent) : QObject(parent), thread_(std::make_unique<CompareThread>()) {
    registerCompareTypes();
    CompareWorker* w = thread_->worker();
    connect(this, &CompareController::requestRun, w, &CompareWorker::run, Qt::QueuedConnection);
    connect(w, &CompareWorker::backendStarted, this, &CompareController::onBackendStarted, Qt::QueuedConnection);
    connect(w, &CompareWorker::finished, this, &CompareController::onFinished, Qt::QueuedConnection);
    connect(w, &CompareWorker::cancelled, this, &CompareController::onCancelled, Qt::QueuedConnection);
    connect(w, &CompareWorker::failed, this, &CompareController::onFailed, Qt::QueuedConnection);
}

CompareController::~CompareController() {
    if (running_ != 0) thread_->worker()->cancel(running_);
    thread_.reset();
}

QString CompareController::summary() const {
    const CompareReport& r = columns_.report();
    if (r.columns.isEmpty()) return {};
    const QString ref = r.reference >= 0 ? r.columns.at(r.reference).spec : QStringLiteral("none (no backend ran)");
    const QString steps = r.endedTurn         ? QStringLiteral("%1 greedy steps, to the reference's end of turn").arg(r.steps)
                          : r.stopAtEndOfTurn ? QStringLiteral("%1 greedy steps (the limit, before the end of the turn)").arg(r.steps)
                                              : QStringLiteral("%1 greedy steps").arg(r.steps);
    const QString memories = r.memoriesProblem.isEmpty() ? r.memories : QStringLiteral("without memories: %1").arg(r.memoriesProblem);
    return QStringLiteral("%1 (%2) · prompt %3 tokens · %4 · %5 · reference %6 · %7 of %8 backends ran")
        .arg(r.modelDir, r.modelType.isEmpty() ? QStringLiteral("?") : r.modelType)
        .arg(r.promptTokens)
        .arg(steps, memories, ref)
        .arg(r.ran())
        .arg(r.columns.size());
}

void CompareController::setMemories(const CompareMemories& memories) {
    memories_ = memories;
    Q_EMIT memoriesChanged();
}

void CompareController::setStatus(const QString& s, bool error) {
    status_ = s;
    statusIsError_ = error;
    Q_EMIT statusChanged();
}

bool CompareController::start(const QString& modelDir, const QString& prompt, const QStringList& backends) {
    if (modelDir.isEmpty()) {
        setStatus(QStringLiteral("No model is loaded: open a model folder to compare backends on"), true);
        return false;
    }
    if (prompt.trimmed().isEmpty()) {
        setStatus(QStringLiteral("Type a prompt to compare"), true);
        return false;
    }
    if (backends.size() < 2) {
        setStatus(QStringLiteral("Choose at least two backends to compare (the same one twice checks it is deterministic)"), true);
        return false;
    }
    if (steps_ < 1) {
        setStatus(QStringLiteral("The number of steps must be at least 1"), true);
        return false;
    }
    if (running_ != 0) thread_->worker()->cancel(running_);
    CompareRequest r;
    r.modelDir = modelDir;
    r.prompt = prompt;
    r.backends = backends;
    r.steps = steps_;
    r.stopAtEndOfTurn = stopAtEndOfTurn_;
    r.memories = memories_;
    r.threads = threads_;
    running_ = ++nextId_;
    Q_EMIT runningChanged();
    setStatus(QStringLiteral("Comparing %1…").arg(backends.join(QStringLiteral(", "))), false);
    Q_EMIT requestRun(running_, r);
    return true;
}

void CompareController::cancel() {
    if (running_ == 0) return;
    // Directly: the worker is inside compare_backends and checks the flag between steps.
    thread_->worker()->cancel(running_);
    setStatus(QStringLiteral("Cancelled; the last complete comparison stays shown"), false);
    endRun();
}

void CompareController::endRun() {
    running_ = 0;
    Q_EMIT runningChanged();
    Q_EMIT ended();
}

void CompareController::onBackendStarted(quint64 id, const QString& spec, int index, int count) {
    if (id != running_) return;
    setStatus(QStringLiteral("Running on %1 (%2 of %3)…").arg(spec).arg(index + 1).arg(count), false);
}

void CompareController::onFinished(quint64 id, const CompareReport& report) {
    if (id != running_) return;
    columns_.setReport(report);
    Q_EMIT reportChanged();
    QStringList failed;
    for (const CompareColumn& c : report.columns)
        if (!c.ok()) failed << QStringLiteral("%1: %2").arg(c.spec, c.error);
    if (report.ran() < 2)
        setStatus(QStringLiteral("%1 of %2 backends ran; a comparison needs two. %3")
                      .arg(report.ran())
                      .arg(report.columns.size())
                      .arg(failed.join(QStringLiteral("; "))),
                  true);
    else if (!failed.isEmpty())
        setStatus(QStringLiteral("Compared; not run: %1").arg(failed.join(QStringLiteral("; "))), true);
    else if (!report.memoriesProblem.isEmpty())
        setStatus(QStringLiteral("Compared %1 backends without memories: %2").arg(report.columns.size()).arg(report.memoriesProblem), true);
    else
        setStatus(QStringLiteral("Compared %1 backends").arg(report.columns.size()), false);
    endRun();
}

void CompareController::onCancelled(quint64 id) {
    if (id != running_) return;  // cancel() has ended it already
    setStatus(QStringLiteral("Cancelled"), false);
    endRun();
}

void CompareController::onFailed(quint64 id, const QString& reason) {
    if (id != running_) return;
    setStatus(QStringLiteral("The comparison could not run: %1").arg(reason), true);
    endRun();
}

}  // namespace mnemo::gui
