// The settings of the next answers and loads (chat.settings): sampling (temperature, top-k, top-p,
// min-p, repeat penalty, answer length) and the context length and threads a load uses. They are
// kept per model folder (AppSettings): a model's saved values replace them when it is opened (a
// model seen for the first time keeps the current ones), and a change is written for the model
// that is loaded. QML binds to the properties; the chat and the model controller read them.
#pragma once

#include <QObject>
#include <QString>

#include "engine/worker_types.hpp"
#include "settings/app_settings.hpp"

namespace mnemo::gui {

class SettingsController : public QObject {
    Q_OBJECT
    Q_PROPERTY(double temperature MEMBER temperature_ NOTIFY changed)
    Q_PROPERTY(int topK MEMBER topK_ NOTIFY changed)
    Q_PROPERTY(double topP MEMBER topP_ NOTIFY changed)
    Q_PROPERTY(double minP MEMBER minP_ NOTIFY changed)
    Q_PROPERTY(double repeatPenalty MEMBER repeatPenalty_ NOTIFY changed)
    Q_PROPERTY(int maxTokens MEMBER maxTokens_ NOTIFY changed)
    // Used when the model loads (ModelController::reloadModel()), not by the model running now.
    Q_PROPERTY(int contextLength MEMBER contextLength_ NOTIFY changed)
    Q_PROPERTY(int threads MEMBER threads_ NOTIFY changed)

public:
    explicit SettingsController(AppSettings& store, QObject* parent = nullptr);

    SamplingSettings sampling() const;
    int contextLength() const { return contextLength_; }
    int threads() const { return threads_; }

    // Takes the values saved for `modelDir`, if any.
    void readFor(const QString& modelDir);
    // From now on a change is written for `modelDir` (the model loaded; "" writes nothing).
    void writeFor(const QString& modelDir) { modelDir_ = modelDir; }

Q_SIGNALS:
    void changed();

private:
    void write();

    AppSettings& store_;
    QString modelDir_;
    bool reading_ = false;  // not written back while being read

    double temperature_ = ModelSettings{}.temperature;
    int topK_ = ModelSettings{}.topK;
    double topP_ = ModelSettings{}.topP;
    double minP_ = ModelSettings{}.minP;
    double repeatPenalty_ = ModelSettings{}.repeatPenalty;
    int maxTokens_ = ModelSettings{}.maxTokens;
    int contextLength_ = ModelSettings{}.contextLength;
    int threads_ = ModelSettings{}.threads;
};

}  // namespace mnemo::gui
