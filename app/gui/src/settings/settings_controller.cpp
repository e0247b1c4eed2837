#include "settings/settings_controller.hpp"

namespace mnemo::gui {

SettingsController::SettingsController(AppSettings& store, QObject* parent) : QObject(parent), store_(store) {
    connect(this, &SettingsController::changed, this, &SettingsController::write);
}

SamplingSettings SettingsController::sampling() const {
    SamplingSettings s;
    s.temperature = static_cast<float>(temperature_);
    s.topK = topK_;
    s.topP = static_cast<float>(topP_);
    s.minP = static_cast<float>(minP_);
    s.repeatPenalty = static_cast<float>(repeatPenalty_);
    s.maxTokens = maxTokens_;
    return s;
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
    Q_EMIT changed();
    reading_ = false;
}

void SettingsController::write() {
    if (reading_ || modelDir_.isEmpty()) return;
    store_.setModel(modelDir_, {temperature_, topK_, topP_, minP_, repeatPenalty_, maxTokens_, contextLength_, threads_});
}

}  // namespace mnemo::gui
