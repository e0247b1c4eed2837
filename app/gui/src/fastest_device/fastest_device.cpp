#include "fastest_device/fastest_device.hpp"

namespace mnemo::gui {

QString FastestChoice::figuresText() const {
    QStringList parts;
    for (const DeviceMeasurement& m : measured) {
        const bool chosen = m.backend == backend && m.device == device;
        if (m.ok())
            parts << QStringLiteral("%1 %2 tokens/s%3").arg(m.label).arg(m.tokensPerSecond, 0, 'f', 1).arg(chosen ? QStringLiteral(" (chosen)") : QString());
        else
            parts << QStringLiteral("%1 does not fit: %2").arg(m.label, m.error);
    }
    return parts.join(QStringLiteral(" · "));
}

FastestChoice pickFastest(const QList<DeviceMeasurement>& measured) {
    FastestChoice c;
    c.measured = measured;
    double best = -1.0;
    for (const DeviceMeasurement& m : measured) {
        if (!m.ok() || m.tokensPerSecond <= best) continue;
        best = m.tokensPerSecond;
        c.backend = m.backend;
        c.device = m.device;
    }
    return c;
}

QString measurementsToText(const QList<DeviceMeasurement>& measured) {
    QStringList lines;
    for (const DeviceMeasurement& m : measured) {
        QString error = m.error;
        QString label = m.label;
        error.replace(QLatin1Char('\t'), QLatin1Char(' ')).replace(QLatin1Char('\n'), QLatin1Char(' '));
        label.replace(QLatin1Char('\t'), QLatin1Char(' ')).replace(QLatin1Char('\n'), QLatin1Char(' '));
        lines << QStringList{m.backend, QString::number(m.device), QString::number(m.tokensPerSecond, 'g', 17), error, label}.join(QLatin1Char('\t'));
    }
    return lines.join(QLatin1Char('\n'));
}

QList<DeviceMeasurement> measurementsFromText(const QString& text) {
    QList<DeviceMeasurement> out;
    for (const QString& line : text.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        const QStringList f = line.split(QLatin1Char('\t'));
        bool okDevice = false, okTps = false;
        DeviceMeasurement m;
        if (f.size() != 5) return {};
        m.backend = f[0];
        m.device = f[1].toInt(&okDevice);
        m.tokensPerSecond = f[2].toDouble(&okTps);
        m.error = f[3];
        m.label = f[4];
        if (!okDevice || !okTps || m.backend.isEmpty()) return {};
        out << m;
    }
    return out;
}

FastestDeviceBenchmark::FastestDeviceBenchmark(QObject* parent) : QObject(parent), thread_(std::make_unique<CompareThread>()) {
    registerCompareTypes();
    qRegisterMetaType<FastestChoice>();
    CompareWorker* w = thread_->worker();
    connect(this, &FastestDeviceBenchmark::requestRun, w, &CompareWorker::run, Qt::QueuedConnection);
    connect(w, &CompareWorker::finished, this, &FastestDeviceBenchmark::onFinished, Qt::QueuedConnection);
    connect(w, &CompareWorker::failed, this, &FastestDeviceBenchmark::onFailed, Qt::QueuedConnection);
    connect(
        w, &CompareWorker::backendStarted, this,
        [this](quint64 id, const QString& spec, int index, int count) {
            if (id == running_) Q_EMIT progress(QStringLiteral("Fastest: measuring %1 (%2 of %3)…").arg(spec).arg(index + 1).arg(count));
        },
        Qt::QueuedConnection);
}

FastestDeviceBenchmark::~FastestDeviceBenchmark() {
    if (running_ != 0) thread_->worker()->cancel(running_);
    thread_.reset();
}

void FastestDeviceBenchmark::start(const QString& modelDir, const QList<DeviceMeasurement>& devices, int threads) {
    if (running_ != 0) thread_->worker()->cancel(running_);
    devices_ = devices;
    CompareRequest r;
    r.modelDir = modelDir;
    r.prompt = QStringLiteral("Hello! Who are you?");  // any short prompt: the decode steps are what is timed
    r.steps = kSteps;
    r.threads = threads;
    r.minBackends = 1;
    for (const DeviceMeasurement& d : devices) r.backends << QStringLiteral("%1:%2").arg(d.backend).arg(d.device);
    running_ = ++nextId_;
    Q_EMIT requestRun(running_, r);
}

void FastestDeviceBenchmark::onFinished(quint64 id, const CompareReport& report) {
    if (id != running_) return;
    running_ = 0;
    QList<DeviceMeasurement> figures = devices_;
    for (int i = 0; i < figures.size() && i < report.columns.size(); ++i) {
        figures[i].error = report.columns[i].error;
        figures[i].tokensPerSecond = report.columns[i].tokensPerSecond;
    }
    Q_EMIT measured(pickFastest(figures));
}

void FastestDeviceBenchmark::onFailed(quint64 id, const QString& reason) {
    if (id != running_) return;
    running_ = 0;
    Q_EMIT failed(reason);
}

}  // namespace mnemo::gui
