#include "fastest_device/fastest_device_controller.hpp"

namespace mnemo::gui {

FastestDeviceController::FastestDeviceController(DeviceModel& devices, AppSettings& settings, QObject* parent)
    : QObject(parent), devices_(devices), settings_(settings) {
    connect(&bench_, &FastestDeviceBenchmark::measured, this, &FastestDeviceController::onMeasured);
    connect(&bench_, &FastestDeviceBenchmark::failed, this, &FastestDeviceController::onFailed);
    connect(&bench_, &FastestDeviceBenchmark::progress, this, [this](const QString& text) { Q_EMIT statusMessage(text, false); });
}

QString FastestDeviceController::text() const {
    if (!active_ || !choice_.valid()) return {};
    return QStringLiteral("Fastest: %1:%2 (%3%4)")
        .arg(choice_.backend)
        .arg(choice_.device)
        .arg(choice_.figuresText(), choice_.fromCache ? QStringLiteral("; measured earlier, cached") : QString());
}

QString FastestDeviceController::cacheKey(const QString& modelDir) const {
    QStringList parts{modelDir};
    for (const DeviceRow& d : devices_.choosable()) parts << QStringLiteral("%1:%2 %3").arg(d.backend).arg(d.device).arg(d.label);
    return parts.join(QLatin1Char('\n'));
}

void FastestDeviceController::choose(const QString& modelDir, int threads) {
    modelDir_ = modelDir;
    const QList<DeviceMeasurement> cached = measurementsFromText(settings_.fastestDeviceFigures(cacheKey(modelDir)));
    if (!cached.isEmpty()) {
        FastestChoice c = pickFastest(cached);
        c.fromCache = true;
        apply(c);
        return;
    }
    QList<DeviceMeasurement> devices;
    for (const DeviceRow& d : devices_.choosable()) devices << DeviceMeasurement{d.backend, d.device, d.label, 0.0, {}};
    ++benchmarkRuns_;
    Q_EMIT statusMessage(QStringLiteral("Fastest: measuring the model on %1 devices…").arg(devices.size()), false);
    bench_.start(modelDir, devices, threads);
    Q_EMIT measuringChanged();
}

void FastestDeviceController::end() {
    if (!active_) return;
    active_ = false;
    devices_.setFastestDetail({});
    Q_EMIT changed();
}

void FastestDeviceController::onMeasured(const FastestChoice& choice) {
    Q_EMIT measuringChanged();
    if (!choice.valid()) {
        Q_EMIT statusMessage(
            QStringLiteral("Fastest: no device could run the model (%1); the model stays where it was").arg(choice.figuresText()), true);
        return;
    }
    settings_.setFastestDeviceFigures(cacheKey(modelDir_), measurementsToText(choice.measured));
    apply(choice);
}

void FastestDeviceController::onFailed(const QString& reason) {
    Q_EMIT measuringChanged();
    Q_EMIT statusMessage(QStringLiteral("Fastest: the benchmark could not run: %1; the model stays where it was").arg(reason), true);
}

void FastestDeviceController::apply(const FastestChoice& choice) {
    choice_ = choice;
    active_ = true;
    devices_.setFastestDetail(text());
    Q_EMIT changed();
    Q_EMIT chosen(choice);
}

}  // namespace mnemo::gui
