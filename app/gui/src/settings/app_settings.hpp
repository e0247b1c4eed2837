// What the app remembers between runs besides its conversations: the sampling settings, context
// length, threads and memory retrieval of each model folder, the recent model folders, the last
// knowledge server, the last `mnemo serve` (its URL, never its key) and the Fastest device's
// figures, in an INI file (QSettings; Qt 6.4's QML has no Settings type of its own). Groups
// renamed since (knowledge/ -> kb/, auto_device/ -> fastest_device/) are moved to their new names
// when the file is opened, so nothing a user had is lost (a cached Fastest choice is not measured
// again).
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
    int contextLength = 0;  // 0: the engine's default (min(trained, 4096)); used when the model loads
    int threads = 0;        // 0: the backend's choice; used when the model loads
    // The sampler's seed: a new one for each answer, or `seed` for every answer (reproducible).
    bool fixedSeed = false;
    qint64 seed = 0;  // 0 .. kMaxSeed
    // A conversation longer than the context: drop its oldest messages, or stop with an error.
    bool dropOldestTurns = false;
    // Answers quote the memories read (SamplingSettings::grounded), or are the model's own words.
    bool grounded = false;
    // Seeds are 32-bit: what a user can type and read back, exact in JSON and in a QML number.
    static constexpr qint64 kMaxSeed = 0xFFFFFFFFLL;
};

// The knowledge server last connected to (the panel starts from it), and whether it is in use:
// the model folder it was connected with, until "No memories" or a memory folder ends it (empty:
// not in use). Opening that folder again, as at the next start, connects it again, with the
// retrieval it ran with.
struct KbServerSettings {
    QString url;
    QString tokenFile;
    QString caFile;
    QString modelDir;
    QString retrieval;
};

// The `mnemo serve` last used as the model (the device picker's "server" entry). Never its API
// key: only the file it was read from, if it came from one.
struct ApiServerSettings {
    QString url;
    QString keyFile;
};

class AppSettings {
public:
    // Keeps nothing when `iniFile` is empty (tests, or no writable config folder), or when it
    // cannot be read safely (problem()).
    explicit AppSettings(const QString& iniFile);

    // The settings last used with a model folder; nullopt when it has none yet.
    std::optional<ModelSettings> model(const QString& modelDir) const;
    void setModel(const QString& modelDir, const ModelSettings& s);

    // How a model's chunks find memories, kept beside its ModelSettings (the knowledge panel's
    // choice): "bm25" or "vector"; nullopt when none was kept for it.
    std::optional<QString> retrieval(const QString& modelDir) const;
    void setRetrieval(const QString& modelDir, const QString& retrieval);

    KbServerSettings kbServer() const;
    void setKbServer(const KbServerSettings& k);

    ApiServerSettings apiServer() const;
    void setApiServer(const ApiServerSettings& s);

    // The window's palette: "system" (the default: follow the desktop), "light" or "dark"
    // (key theme of the section appearance; anything else reads as "system").
    QString appearance() const;
    void setAppearance(const QString& mode);

    // The Fastest device benchmark's figures for `key` (a model folder and the device list), as
    // text; empty when not measured. Kept in memory too when there is no settings file.
    QString fastestDeviceFigures(const QString& key) const;
    void setFastestDeviceFigures(const QString& key, const QString& figures);

    // Why the settings file is not used ("" when it is): it is not a regular file, or is over
    // kMaxSmallFileBytes. Nothing is kept then, as without a file.
    QString problem() const { return problem_; }
    QStringList recentModels() const { return recent_; }
    // Puts `modelDir` first (at most kRecent folders); returns whether the list changed.
    bool addRecent(const QString& modelDir);
    static constexpr int kRecent = 8;

private:
    std::unique_ptr<QSettings> ini_;
    QStringList recent_;
    QString problem_;
    QHash<QString, QString> fastestFigures_;  // without a file
};

}  // namespace mnemo::gui
