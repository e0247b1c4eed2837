// "Fastest (measured)" in the device picker, as the app uses it (chat.fastestDevice): the measured
// choice of a device for the loaded model. It takes the figures from the settings file when the
// same model and device list were measured before, and otherwise runs the benchmark
// (FastestDeviceBenchmark, on a thread of its own). It only chooses: the model controller loads
// the model where it says.
#pragma once

#include <QObject>

#include "devices/device_model.hpp"
#include "fastest_device/fastest_device.hpp"
#include "settings/app_settings.hpp"

namespace mnemo::gui {

class FastestDeviceController : public QObject {
    Q_OBJECT
    // The device in use was chosen by Fastest.
    Q_PROPERTY(bool active READ active NOTIFY changed)
    Q_PROPERTY(bool measuring READ measuring NOTIFY measuringChanged)
    // With Fastest active: the device it chose and the figures it measured ("" otherwise).
    Q_PROPERTY(QString text READ text NOTIFY changed)

public:
    FastestDeviceController(DeviceModel& devices, AppSettings& settings, QObject* parent = nullptr);

    bool active() const { return active_; }
    bool measuring() const { return bench_.running(); }
    QString text() const;
    const FastestChoice& choice() const { return choice_; }
    int benchmarkRuns() const { return benchmarkRuns_; }  // measured, not taken from the cache

    // Chooses a device for `modelDir` among the picker's devices: at once from the cache, or
    // after measuring them (`threads`: the CPU backend's). Reports chosen(), or why not.
    void choose(const QString& modelDir, int threads);
    // Fastest no longer decides: a device chosen by hand, another model, a load that failed.
    void end();

Q_SIGNALS:
    // Fastest chose this device (active now): the model is to run there.
    void chosen(const mnemo::gui::FastestChoice& choice);
    void changed();
    void measuringChanged();
    void statusMessage(const QString& text, bool error);

private:
    void onMeasured(const FastestChoice& choice);
    void onFailed(const QString& reason);
    void apply(const FastestChoice& choice);
    QString cacheKey(const QString& modelDir) const;  // the model folder and the devices chosen from

    DeviceModel& devices_;
    AppSettings& settings_;
    QString modelDir_;  // being measured
    bool active_ = false;
    FastestChoice choice_;
    int benchmarkRuns_ = 0;
    FastestDeviceBenchmark bench_;  // last: its thread stops before the rest goes
};

}  // namespace mnemo::gui
