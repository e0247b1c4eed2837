#include "settings/settings_controller.hpp"

#include <QRandomGenerator>
#include <algorithm>

namespace mnemo::gui {

SettingsController::SettingsController(AppSettings& store, QObject* parent)
    : QObject(parent), store_(store), appearance_(store.appearance()) {
    connect(this, &SettingsController::changed, this, &SettingsController::write);
}

void SettingsController::setAppearance(const QString& mode) {
    const QString m = mode == QLatin1String("light") || mode == QLatin1String("dark") ? mode : QStringLiteral("system");
    if (m == appearance_) return;
    appearance_ = m;
    store_.setAppearance(m);
    Q_EMIT appearanceChanged();
}

SamplingSettings SettingsController::sampling() const {
    SamplingSettings s;
    s.temperature = static_cast<float>(temperature_);
    s.topK = topK_;
    s.topP = static_cast<float>(topP_);
    s.minP = static_cast<float>(minP_);
    s.repeatPenalty = static_cast<float>(repeatPenalty_);
    s.maxTokens = maxTokens_;
    // QRandomGenerator::system(): the OS's generator, so two runs of the app (or two
    // conversations started the same second) never share a seed.
    s.seed = fixedSeed_ ? static_cast<quint64>(seed_) : QRandomGenerator::system()->generate();
    s.dropOldestTurns = dropOldestTurns_;
    s.grounded = grounded_;
    return s;
}

void SettingsController::setSeed(qint64 seed) {
    seed = std::clamp<qint64>(seed, 0, ModelSettings::kMaxSeed);
    if (seed == seed_) return;
    seed_ = seed;
    Q_EMIT changed();
}

void SettingsController::readFor(const QString& modelDir) {
    const std::optional<ModelSettings> saved = store_.model(modelDir);
    if (!saved) return;
    reading_ = true;
    temperature_ = saved->temperature;
    topK_ = saved->topK;
    topP_ = saved->topP;
    minP_ = saved->minP;
    repeatPenalty_ = saved->repeatPenalty;
    maxTokens_ = saved->maxTokens;
    contextLength_ = saved->contextLength;
    threads_ = saved->threads;
    fixedSeed_ = saved->fixedSeed;
    seed_ = saved->seed;
    dropOldestTurns_ = saved->dropOldestTurns;
    grounded_ = saved->grounded;
    Q_EMIT changed();
    reading_ = false;
}

void SettingsController::write() {
    if (reading_ || modelDir_.isEmpty()) return;
    store_.setModel(modelDir_, {temperature_, topK_, topP_, minP_, repeatPenalty_, maxTokens_, contextLength_, threads_, fixedSeed_,
                                seed_, dropOldestTurns_, grounded_});
}

}  // namespace mnemo::gui
