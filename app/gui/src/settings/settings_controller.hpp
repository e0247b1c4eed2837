// The settings of the next answers and loads (chat.settings): sampling (temperature, top-k, top-p,
// min-p, repeat penalty, answer length, the seed: new for each answer or fixed), what to do with a
// conversation longer than the context, and the context length and threads a load uses. They are
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
    // The seed of each answer: a new one drawn for each (false), or `seed` every time (true).
    Q_PROPERTY(bool fixedSeed MEMBER fixedSeed_ NOTIFY changed)
    Q_PROPERTY(qint64 seed READ seed WRITE setSeed NOTIFY changed)  // 0 .. 4294967295
    // When the conversation is longer than the context: drop the oldest messages, or stop.
    Q_PROPERTY(bool dropOldestTurns MEMBER dropOldestTurns_ NOTIFY changed)
    // Answers that only quote the memories their question read (SamplingSettings::grounded).
    Q_PROPERTY(bool grounded MEMBER grounded_ NOTIFY changed)
    // The window's palette, for the whole app (not per model): "system", "light" or "dark".
    Q_PROPERTY(QString appearance READ appearance WRITE setAppearance NOTIFY appearanceChanged)

public:
    explicit SettingsController(AppSettings& store, QObject* parent = nullptr);

    // The settings of the next answer, its seed included: the fixed one, or a new one drawn from
    // the system's generator on each call (so each answer, and each regeneration, differs).
    SamplingSettings sampling() const;
    qint64 seed() const { return seed_; }
    void setSeed(qint64 seed);  // clamped to 0 .. ModelSettings::kMaxSeed
    int contextLength() const { return contextLength_; }
    int threads() const { return threads_; }
    QString appearance() const { return appearance_; }
    void setAppearance(const QString& mode);  // anything but "light" or "dark" is "system"

    // Takes the values saved for `modelDir`, if any.
    void readFor(const QString& modelDir);
    // From now on a change is written for `modelDir` (the model loaded; "" writes nothing).
    void writeFor(const QString& modelDir) { modelDir_ = modelDir; }

Q_SIGNALS:
    void changed();
    void appearanceChanged();

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
    bool fixedSeed_ = ModelSettings{}.fixedSeed;
    qint64 seed_ = ModelSettings{}.seed;
    bool dropOldestTurns_ = ModelSettings{}.dropOldestTurns;
    bool grounded_ = ModelSettings{}.grounded;
    QString appearance_;
};

}  // namespace mnemo::gui
