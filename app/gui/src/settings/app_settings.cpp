#include "settings/app_settings.hpp"

#include <QFile>
#include <QFileInfo>
#include <QUrl>
#include <algorithm>

#include "mnemo/io/file_read.hpp"

namespace mnemo::gui {

namespace {

// One group per model folder; the folder is percent-encoded because QSettings reads '/' in a
// key as nesting.
QString groupOf(const QString& modelDir) { return QStringLiteral("model_") + QString::fromLatin1(QUrl::toPercentEncoding(modelDir)); }

// The Fastest device's figures for `key` (a model folder and device list, with '/' and newlines):
// percent-encoded like groupOf.
QString figuresKey(const QString& key) { return QStringLiteral("fastest_device/") + QString::fromLatin1(QUrl::toPercentEncoding(key)); }

// The groups of a settings file from before the glossary (docs/architecture.md) named them kb
// and fastest_device: their values move to the new group, unless the new one already holds the key.
void migrateGroup(QSettings& ini, const QString& from, const QString& to) {
    ini.beginGroup(from);
    const QStringList keys = ini.childKeys();
    QList<QVariant> values;
    for (const QString& k : keys) values << ini.value(k);
    ini.endGroup();
    if (keys.isEmpty()) return;
    for (qsizetype i = 0; i < keys.size(); ++i) {
        const QString key = to + QLatin1Char('/') + keys[i];
        if (!ini.contains(key)) ini.setValue(key, values[i]);
    }
    ini.remove(from);
    ini.sync();
}

}  // namespace

AppSettings::AppSettings(const QString& iniFile) {
    if (iniFile.isEmpty()) return;
    // QSettings opens the file blocking and reads it whole, with no limit: a FIFO hangs the app at
    // start, a huge file fills memory. It also writes by renaming a new file over the symlink's
    // target: a settings.ini linked to /dev/zero replaced /dev/zero itself when run as root. So
    // the file is checked first, by the same capped reader as every file read whole; one that
    // fails is left untouched and nothing is kept this run, as without a file (problem() says
    // why, naming it). A file that does not exist yet is made.
    const QFileInfo info(iniFile);
    if (info.exists() || info.isSymLink()) {
        try {
            read_file_capped(QFile::encodeName(iniFile).toStdString(), kMaxSmallFileBytes, "settings file");
        } catch (const std::exception& e) {
            problem_ = QStringLiteral("%1; the settings are not kept this time").arg(QString::fromLocal8Bit(e.what()));
            return;
        }
    }
    ini_ = std::make_unique<QSettings>(iniFile, QSettings::IniFormat);
    migrateGroup(*ini_, QStringLiteral("knowledge"), QStringLiteral("kb"));
    migrateGroup(*ini_, QStringLiteral("auto_device"), QStringLiteral("fastest_device"));
    recent_ = ini_->value(QStringLiteral("recent_models")).toStringList();
}

std::optional<ModelSettings> AppSettings::model(const QString& modelDir) const {
    // setModel() writes every field at once; the group alone may hold only the retrieval.
    if (!ini_ || !ini_->contains(groupOf(modelDir) + QStringLiteral("/temperature"))) return std::nullopt;
    ini_->beginGroup(groupOf(modelDir));
    ModelSettings s;
    s.temperature = ini_->value(QStringLiteral("temperature"), s.temperature).toDouble();
    s.topK = ini_->value(QStringLiteral("top_k"), s.topK).toInt();
    s.topP = ini_->value(QStringLiteral("top_p"), s.topP).toDouble();
    s.minP = ini_->value(QStringLiteral("min_p"), s.minP).toDouble();
    s.repeatPenalty = ini_->value(QStringLiteral("repeat_penalty"), s.repeatPenalty).toDouble();
    s.maxTokens = ini_->value(QStringLiteral("max_tokens"), s.maxTokens).toInt();
    s.contextLength = ini_->value(QStringLiteral("context_length"), s.contextLength).toInt();
    s.threads = ini_->value(QStringLiteral("threads"), s.threads).toInt();
    // Keys added later: a file written before them keeps the defaults (a new seed each answer, stop).
    s.fixedSeed = ini_->value(QStringLiteral("seed_mode")).toString() == QLatin1String("fixed");
    s.seed = std::clamp<qint64>(ini_->value(QStringLiteral("seed"), s.seed).toLongLong(), 0, ModelSettings::kMaxSeed);
    s.dropOldestTurns = ini_->value(QStringLiteral("context_overflow")).toString() == QLatin1String("drop_oldest");
    s.grounded = ini_->value(QStringLiteral("answers")).toString() == QLatin1String("grounded");
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
    ini_->setValue(QStringLiteral("context_length"), s.contextLength);
    ini_->setValue(QStringLiteral("threads"), s.threads);
    ini_->setValue(QStringLiteral("seed_mode"), s.fixedSeed ? QStringLiteral("fixed") : QStringLiteral("random"));
    ini_->setValue(QStringLiteral("seed"), s.seed);
    ini_->setValue(QStringLiteral("context_overflow"), s.dropOldestTurns ? QStringLiteral("drop_oldest") : QStringLiteral("stop"));
    ini_->setValue(QStringLiteral("answers"), s.grounded ? QStringLiteral("grounded") : QStringLiteral("free"));
    ini_->endGroup();
    ini_->sync();
}

std::optional<QString> AppSettings::retrieval(const QString& modelDir) const {
    const QString key = groupOf(modelDir) + QStringLiteral("/retrieval");
    if (!ini_ || !ini_->contains(key)) return std::nullopt;
    return ini_->value(key).toString();
}

void AppSettings::setRetrieval(const QString& modelDir, const QString& retrieval) {
    if (!ini_) return;
    ini_->setValue(groupOf(modelDir) + QStringLiteral("/retrieval"), retrieval);
    ini_->sync();
}

KbServerSettings AppSettings::kbServer() const {
    if (!ini_) return {};
    return {ini_->value(QStringLiteral("kb/url")).toString(), ini_->value(QStringLiteral("kb/token_file")).toString(),
            ini_->value(QStringLiteral("kb/ca_file")).toString(), ini_->value(QStringLiteral("kb/in_use_with")).toString(),
            ini_->value(QStringLiteral("kb/retrieval")).toString()};
}

void AppSettings::setKbServer(const KbServerSettings& k) {
    if (!ini_) return;
    ini_->setValue(QStringLiteral("kb/url"), k.url);
    ini_->setValue(QStringLiteral("kb/token_file"), k.tokenFile);
    ini_->setValue(QStringLiteral("kb/ca_file"), k.caFile);
    ini_->setValue(QStringLiteral("kb/in_use_with"), k.modelDir);
    ini_->setValue(QStringLiteral("kb/retrieval"), k.retrieval);
    ini_->sync();
}

ApiServerSettings AppSettings::apiServer() const {
    if (!ini_) return {};
    return {ini_->value(QStringLiteral("server/url")).toString(), ini_->value(QStringLiteral("server/key_file")).toString()};
}

void AppSettings::setApiServer(const ApiServerSettings& s) {
    if (!ini_) return;
    ini_->setValue(QStringLiteral("server/url"), s.url);
    ini_->setValue(QStringLiteral("server/key_file"), s.keyFile);
    ini_->sync();
}

QString AppSettings::appearance() const {
    const QString mode = ini_ ? ini_->value(QStringLiteral("appearance/theme")).toString() : QString();
    return mode == QLatin1String("light") || mode == QLatin1String("dark") ? mode : QStringLiteral("system");
}

void AppSettings::setAppearance(const QString& mode) {
    if (!ini_) return;
    ini_->setValue(QStringLiteral("appearance/theme"), mode);
    ini_->sync();
}

QString AppSettings::fastestDeviceFigures(const QString& key) const {
    return ini_ ? ini_->value(figuresKey(key)).toString() : fastestFigures_.value(key);
}

void AppSettings::setFastestDeviceFigures(const QString& key, const QString& figures) {
    if (!ini_) {
        fastestFigures_.insert(key, figures);
        return;
    }
    ini_->setValue(figuresKey(key), figures);
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
