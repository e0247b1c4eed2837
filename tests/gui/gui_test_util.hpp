// What the GUI tests share: the bundled default model, a question it was trained on, whether a
// Vulkan device is there, scratch copies of a model folder to break.
#pragma once

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QString>

#include "mnemo/modules/registry.hpp"

namespace mnemo::gui::test {

inline QString defaultModelDir() { return QStringLiteral(MNEMO_SOURCE_DIR "/assets/default-model"); }

struct Question {
    QString question;
    QString answer;
};

// Line n of assets/world/questions-train.jsonl: facts the default model holds in its weights
// (0: "Where was Tour Hujert born?" -> "Zeajusy", 1: "What does Tour Hujert do for a living?" ->
// "miner").
inline Question trainedQuestion(int n = 0) {
    QFile f(QStringLiteral(MNEMO_SOURCE_DIR "/assets/world/questions-train.jsonl"));
    if (!f.open(QIODevice::ReadOnly)) return {};
    QByteArray line;
    for (int i = 0; i <= n; ++i) line = f.readLine();
    const QJsonObject o = QJsonDocument::fromJson(line).object();
    return {o.value(QStringLiteral("question")).toString(), o.value(QStringLiteral("answer")).toString()};
}

// The reason there is no Vulkan device ("" when there is one).
inline QString noVulkanReason() {
    const BackendRegistry& reg = BackendRegistry::global();
    const BackendModule* m = reg.find("vulkan");
    if (!m) return QStringLiteral("this build has no Vulkan backend module");
    for (const DeviceEntry& d : reg.devices())
        if (d.backend == "vulkan") return {};
    const char* why = m->api->unavailable_reason ? m->api->unavailable_reason() : nullptr;
    return QStringLiteral("the Vulkan backend found no device: ") + QString::fromUtf8(why ? why : "no reason given");
}

// A copy of the default model in `dir` (files only), to be broken by the test.
inline bool copyDefaultModel(const QString& dir) {
    const QDir src(defaultModelDir());
    for (const QString& name : src.entryList(QDir::Files))
        if (!QFile::copy(src.filePath(name), dir + QLatin1Char('/') + name)) return false;
    return true;
}

// `mnemo memorize` (this build's) of `corpus`, paragraphs split by blank lines, written to
// dir/facts.txt, into the memory folder dir/mem with the default model. Returns what went wrong,
// "" when the folder is there.
inline QString memorizeCorpus(const QString& dir, const QByteArray& corpus) {
    QFile f(dir + QStringLiteral("/facts.txt"));
    if (!f.open(QIODevice::WriteOnly) || f.write(corpus) != corpus.size()) return QStringLiteral("cannot write ") + f.fileName();
    f.close();
    QProcess memorize;
    memorize.setProcessChannelMode(QProcess::MergedChannels);
    memorize.start(QStringLiteral(MNEMO_BUILD_BIN "/mnemo"), {QStringLiteral("memorize"), QStringLiteral("--corpus"), f.fileName(),
                                                              QStringLiteral("-o"), dir + QStringLiteral("/mem")});
    if (!memorize.waitForFinished(60000)) return QStringLiteral("mnemo memorize did not finish: ") + memorize.errorString();
    if (memorize.exitStatus() != QProcess::NormalExit || memorize.exitCode() != 0) return QString::fromUtf8(memorize.readAll());
    return {};
}

}  // namespace mnemo::gui::test
