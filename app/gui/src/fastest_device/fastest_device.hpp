// "Fastest (measured)" in the device picker: the fastest device that fits, measured, not assumed
// (unlike `mnemo --backend auto`, which takes the first device that works, GPUs first). A short
// benchmark runs the loaded model on every device the picker offers (compare_backends: a short
// prompt, then a few greedy decode steps, after a warm-up), one after another on a thread of its
// own; a device that cannot load or run the model does not fit. The fastest decode wins. The
// result is cached per model folder and device list (AppSettings), so the benchmark runs again
// only when either changes.
#pragma once

#include <QList>
#include <QObject>
#include <QString>
#include <memory>

#include "compare/compare_worker.hpp"

namespace mnemo::gui {

struct DeviceMeasurement {
    QString backend;
    int device = 0;
    QString label;            // the picker's label
    double tokensPerSecond = 0.0;
    QString error;            // why it does not fit; empty when it ran
    bool ok() const { return error.isEmpty(); }
};

struct FastestChoice {
    QString backend;  // empty: no device ran
    int device = 0;
    QList<DeviceMeasurement> measured;
    bool fromCache = false;

    bool valid() const { return !backend.isEmpty(); }
    // "Vulkan 0: ... 31.0 tokens/s · CPU 0: ... 2850.1 tokens/s (chosen)" — what the picker shows.
    QString figuresText() const;
};

// The fastest measurement that ran; an invalid choice when none did.
FastestChoice pickFastest(const QList<DeviceMeasurement>& measured);

// The cache's text form (one line per device: backend, device, tokens/s, error, label; tabs
// between) and back; an empty list for text that is not one.
QString measurementsToText(const QList<DeviceMeasurement>& measured);
QList<DeviceMeasurement> measurementsFromText(const QString& text);

// Runs the benchmark; reports by queued signals, one run at a time.
class FastestDeviceBenchmark : public QObject {
    Q_OBJECT
public:
    explicit FastestDeviceBenchmark(QObject* parent = nullptr);
    ~FastestDeviceBenchmark() override;

    static constexpr int kSteps = 8;  // decode steps measured per device (after a warm-up)

    // Measures `modelDir` on each of `devices` (backend, device index, label). Any run in
    // progress is cancelled first.
    void start(const QString& modelDir, const QList<DeviceMeasurement>& devices, int threads);
    bool running() const { return running_ != 0; }

Q_SIGNALS:
    void progress(QString text);
    void measured(mnemo::gui::FastestChoice choice);
    void failed(QString reason);
    void requestRun(quint64 id, mnemo::gui::CompareRequest request);

private:
    void onFinished(quint64 id, const CompareReport& report);
    void onFailed(quint64 id, const QString& reason);

    QList<DeviceMeasurement> devices_;
    quint64 nextId_ = 0;
    quint64 running_ = 0;
    std::unique_ptr<CompareThread> thread_;  // last: stops before the rest goes
};

}  // namespace mnemo::gui

Q_DECLARE_METATYPE(mnemo::gui::FastestChoice)
