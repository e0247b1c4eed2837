#include "settings/app_settings.hpp"

#include <QUrl>

namespace mnemo::gui {

namespace {

// One group per model folder; the folder is percent-encoded because QSettings reads '/' in a
// key as nesting.
QString groupOf(const QString& modelDir) { return QStringLiteral("model_") + QString::fromLatin1(QUrl::toPercentEncoding(modelDir)); }

}  // namespace

AppSettings::AppSettings(const QString& iniFile) {
    if (iniFile.isEmpty()) return;
    ini_ = std::make_unique<QSettings>(iniFile, QSettings::IniFormat);
    recent_ = ini_->value(QStringLiteral("recent_models")).toStringList();
}

std::optional<ModelSettings> AppSettings::model(const QString& modelDir) const {
    if (!ini_ || !ini_->childGroups().contains(groupOf(modelDir))) return std::nullopt;
    ini_->beginGroup(groupOf(modelDir));
    ModelSettings s;
    s.temperature = ini_->value(QStringLiteral("temperature"), s.temperature).toDouble();
    s.topK = ini_->value(QStringLiteral("top_k"), s.topK).toInt();
    s.topP = ini_->value(QStringLiteral("top_p"), s.topP).toDouble();
    s.minP = ini_->value(QStringLiteral("min_p"), s.minP).toDouble();
    s.repeatPenalty = ini_->value(QStringLiteral("repeat_penalty"), s.repeatPenalty).toDouble();
    s.maxTokens = ini_->value(QStringLiteral("max_tokens"), s.maxTokens).toInt();
    s.retrieval = ini_->value(QStringLiteral("retrieval"), s.retrieval).toString();
    s.contextLength = ini_->value(QStringLiteral("context_length"), s.contextLength).toInt();
    s.threads = ini_->value(QStringLiteral("threads"), s.threads).toInt();
    ini_->endGroup();
    return s;
}

void AppSettings::setModel(const QString& modelDir, const ModelSettings& s) {
    if (!ini_) return;
    ini_->beginGroup(groupOf(modelDir));
    ini_->setValue(QStringLiteral("temperature"), s.temperature);
    ini_->setValue(QStringLiteral("top_k"), s.topK);
    ini_->setValue(QStringLiteral("top_p"), s.topP);
    ini_->setValue(QStringLiteral("min_p"), s.minP);
    ini_->setValue(QStringLiteral("repeat_penalty"), s.repeatPenalty);
    ini_->setValue(QStringLiteral("max_tokens"), s.maxTokens);
    ini_->setValue(QStringLiteral("retrieval"), s.retrieval);
    ini_->setValue(QStringLiteral("context_length"), s.contextLength);
    ini_->setValue(QStringLiteral("threads"), s.threads);
    ini_->endGroup();
    ini_->sync();
}

KnowledgeServerSettings AppSettings::knowledgeServer() const {
    if (!ini_) return {};
    return {ini_->value(QStringLiteral("knowledge/url")).toString(), ini_->value(QStringLiteral("knowledge/token_file")).toString(),
            ini_->value(QStringLiteral("knowledge/ca_file")).toString()};
}

void AppSettings::setKnowledgeServer(const KnowledgeServerSettings& k) {
    if (!ini_) return;
    ini_->setValue(QStringLiteral("knowledge/url"), k.url);
    ini_->setValue(QStringLiteral("knowledge/token_file"), k.tokenFile);
    ini_->setValue(QStringLiteral("knowledge/ca_file"), k.caFile);
    ini_->sync();
}

QString AppSettings::autoDeviceFigures(const QString& key) const {
    const QString k = QStringLiteral("auto_device/") + QString::fromLatin1(QUrl::toPercentEncoding(key));
    return ini_ ? ini_->value(k).toString() : autoFigures_.value(key);
}

void AppSettings::setAutoDeviceFigures(const QString& key, const QString& figures) {
    if (!ini_) {
        autoFigures_.insert(key, figures);
        return;
    }
    ini_->setValue(QStringLiteral("auto_device/") + QString::fromLatin1(QUrl::toPercentEncoding(key)), figures);
    ini_->sync();
}

bool AppSettings::addRecent(const QString& modelDir) {
    QStringList recent = recent_;
    recent.removeAll(modelDir);
    recent.prepend(modelDir);
    while (recent.size() > kRecent) recent.removeLast();
    if (recent == recent_) return false;
    recent_ = recent;
    if (ini_) {
        ini_->setValue(QStringLiteral("recent_models"), recent_);
        ini_->sync();
    }
    return true;
}

}  // namespace mnemo::gui
