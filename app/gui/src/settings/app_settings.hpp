// What the app remembers between runs besides its conversations: the sampling settings, context
// length and threads of each model folder, the recent model folders and the last knowledge server, in an INI file (QSettings; Qt 6.4's QML has no
// Settings type of its own).
#pragma once

#include <QSettings>
#include <QHash>
#include <QStringList>
#include <memory>
#include <optional>

namespace mnemo::gui {

struct ModelSettings {
    double temperature = 0.8;
    int topK = 40;
    double topP = 0.95;
    double minP = 0.05;
    double repeatPenalty = 1.0;
    int maxTokens = 512;
    // "bm25" or "vector"; a knowledge server also "hybrid". BM25 by default: lexical retrieval works
    // with any model, vector retrieval only with trained retrieval vectors (the default model's are not).
    QString retrieval = QStringLiteral("bm25");
    int contextLength = 0;  // 0: the engine's default (min(trained, 4096)); used when the model loads
    int threads = 0;        // 0: the backend's choice; used when the model loads
};

// The knowledge server last connected to (the panel starts from it).
struct KnowledgeServerSettings {
    QString url;
    QString tokenFile;
    QString caFile;
};

class AppSettings {
public:
    // Keeps nothing when `iniFile` is empty (tests, or no writable config folder).
    explicit AppSettings(const QString& iniFile);

    // The settings last used with a model folder; nullopt when it has none yet.
    std::optional<ModelSettings> model(const QString& modelDir) const;
    void setModel(const QString& modelDir, const ModelSettings& s);

    KnowledgeServerSettings knowledgeServer() const;
    void setKnowledgeServer(const KnowledgeServerSettings& k);

    // The Auto device benchmark's figures for `key` (a model folder and the device list), as
    // text; empty when not measured. Kept in memory too when there is no settings file.
    QString autoDeviceFigures(const QString& key) const;
    void setAutoDeviceFigures(const QString& key, const QString& figures);

    QStringList recentModels() const { return recent_; }
    // Puts `modelDir` first (at most kRecent folders); returns whether the list changed.
    bool addRecent(const QString& modelDir);
    static constexpr int kRecent = 8;

private:
    std::unique_ptr<QSettings> ini_;
    QStringList recent_;
    QHash<QString, QString> autoFigures_;  // without a file
};

}  // namespace mnemo::gui
