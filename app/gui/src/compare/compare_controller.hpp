// What the compare view calls and shows: start a comparison of one prompt on several backends,
// cancel it, its progress, and the columns of the last report (CompareModel). It lives on the GUI
// thread and never waits: runs go to the CompareWorker's own thread by queued signals, and every
// run has an id, so what a cancelled or replaced run still reports is ignored.
#pragma once

#include <QObject>
#include <memory>

#include "compare/compare_model.hpp"
#include "compare/compare_worker.hpp"

namespace mnemo::gui {

class CompareController : public QObject {
    Q_OBJECT
    Q_PROPERTY(mnemo::gui::CompareModel* columns READ columns CONSTANT)
    Q_PROPERTY(bool running READ running NOTIFY runningChanged)
    Q_PROPERTY(QString status READ status NOTIFY statusChanged)
    Q_PROPERTY(bool statusIsError READ statusIsError NOTIFY statusChanged)
    Q_PROPERTY(QString summary READ summary NOTIFY reportChanged)
    Q_PROPERTY(double maxOpMs READ maxOpMs NOTIFY reportChanged)
    Q_PROPERTY(int steps MEMBER steps_ NOTIFY stepsChanged)  // the most greedy steps per backend
    // Stop at the reference backend's end of turn, as the chat does (true unless set otherwise).
    Q_PROPERTY(bool stopAtEndOfTurn MEMBER stopAtEndOfTurn_ NOTIFY stepsChanged)
    // The chat's memories, which the next comparison reads: "memory folder /x", "no memories"...
    Q_PROPERTY(QString memories READ memories NOTIFY memoriesChanged)

public:
    explicit CompareController(QObject* parent = nullptr);
    ~CompareController() override;

    CompareModel* columns() { return &columns_; }
    bool running() const { return running_ != 0; }
    QString status() const { return status_; }
    bool statusIsError() const { return statusIsError_; }
    QString summary() const;
    double maxOpMs() const { return columns_.maxOpMs(); }
    const CompareReport& report() const { return columns_.report(); }
    void setThreads(int threads) { threads_ = threads; }
    // The memory source the chat's model reads now (ChatController sets it at every load), so the
    // comparison answers as the chat does.
    void setMemories(const CompareMemories& memories);
    QString memories() const { return memories_.text(); }

    // Compares `prompt` (as one user turn of the model's chat template) on `backends` ("cpu",
    // "vulkan:0", ...) with greedy decoding of at most `steps` tokens, to the reference backend's
    // end of turn, reading the chat's memories. Returns false, saying why in status, when it
    // cannot start; a run in progress is cancelled first.
    Q_INVOKABLE bool start(const QString& modelDir, const QString& prompt, const QStringList& backends);
    Q_INVOKABLE void cancel();

Q_SIGNALS:
    void requestRun(quint64 id, mnemo::gui::CompareRequest request);
    void runningChanged();
    void statusChanged();
    void reportChanged();
    void stepsChanged();
    void memoriesChanged();
    // A run has ended: finished, cancelled or failed (for tests and the view).
    void ended();

private:
    void onBackendStarted(quint64 id, const QString& spec, int index, int count);
    void onFinished(quint64 id, const CompareReport& report);
    void onCancelled(quint64 id);
    void onFailed(quint64 id, const QString& reason);
    void setStatus(const QString& s, bool error);
    void endRun();

    CompareModel columns_;
    quint64 nextId_ = 0;
    quint64 running_ = 0;
    int steps_ = 16;
    bool stopAtEndOfTurn_ = true;
    CompareMemories memories_;
    int threads_ = 0;
    QString status_;
    bool statusIsError_ = false;
    // Last, so that it is destroyed first: the thread stops before what it reports to.
    std::unique_ptr<CompareThread> thread_;
};

}  // namespace mnemo::gui
