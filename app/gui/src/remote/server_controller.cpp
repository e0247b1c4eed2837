#include "remote/server_controller.hpp"

#include <QFile>

#include "local_path.hpp"
#include "mnemo/io/file_read.hpp"

namespace mnemo::gui {

namespace {

// The key file's first line. The cap and the checks are the engine's (a FIFO or a device is
// refused before it is read, so a wrong path cannot hang the app).
QByteArray readKeyFile(const QString& path) {
    const std::string text = read_file_capped(QFile::encodeName(path).toStdString(), kMaxSmallFileBytes, "API key file");
    QByteArray key = QByteArray::fromStdString(text);
    const qsizetype end = key.indexOf('\n');
    if (end >= 0) key.truncate(end);
    key = key.trimmed();
    if (key.isEmpty()) throw std::runtime_error("the API key file '" + path.toStdString() + "' holds no key on its first line");
    return key;
}

}  // namespace

ServerController::ServerController(ModelController& model, AppSettings& settings, QObject* parent)
    : QObject(parent), model_(model), settings_(settings), saved_(settings.apiServer()) {
    connect(&worker_, &RemoteWorker::probed, this, &ServerController::onProbed);
    connect(&worker_, &RemoteWorker::probeFailed, this, [this](quint64 id, const QString& reason) {
        if (id == probe_) fail(reason);
    });
    connect(&model_, &ModelController::infoChanged, this, &ServerController::changed);  // in use or not
}

QString ServerController::state() const {
    if (probe_ != 0) return QStringLiteral("connecting");
    if (model_.remote()) return QStringLiteral("connected");
    if (!failure_.isEmpty()) return QStringLiteral("failed");
    return QStringLiteral("off");
}

QString ServerController::text() const {
    if (probe_ != 0) return QStringLiteral("Connecting to %1…").arg(asked_.toString());
    if (model_.remote()) return QStringLiteral("Connected: %1 at %2").arg(model_.server()->modelId, model_.server()->url);
    if (!failure_.isEmpty()) return QStringLiteral("Not connected: %1").arg(failure_);
    return QStringLiteral("Not in use: the model runs on this machine");
}

void ServerController::fail(const QString& reason) {
    probe_ = 0;
    failure_ = reason;
    Q_EMIT changed();
    Q_EMIT statusMessage(model_.remote() ? QStringLiteral("Could not connect to the server: %1. Still answering on %2.")
                                               .arg(reason, model_.server()->url)
                                         : QStringLiteral("Could not connect to the server: %1").arg(reason),
                         true);
}

void ServerController::connectServer(const QString& url, const QString& key, const QString& keyFileOrUrl) {
    const QString keyFile = localPath(keyFileOrUrl.trimmed());
    // Only the address and the key file's path are kept: a typed key never reaches the settings file.
    saved_ = {url.trimmed(), key.trimmed().isEmpty() ? keyFile : QString()};
    settings_.setApiServer(saved_);
    QString why;
    const QUrl base = serverBaseUrl(url, why);
    if (base.isEmpty()) {
        fail(why);
        return;
    }
    QByteArray k = key.trimmed().toUtf8();
    if (k.isEmpty() && !keyFile.isEmpty()) {
        try {
            k = readKeyFile(keyFile);
        } catch (const std::exception& e) {
            fail(QString::fromLocal8Bit(e.what()));
            return;
        }
    }
    asked_ = base;
    askedKey_ = k;
    failure_.clear();
    probe_ = ++nextProbe_;
    Q_EMIT changed();
    Q_EMIT statusMessage(QStringLiteral("Connecting to %1…").arg(base.toString()), false);
    worker_.probe(probe_, base, k);
}

void ServerController::onProbed(quint64 id, const QString& modelId) {
    if (id != probe_) return;
    probe_ = 0;
    model_.useServer({asked_.toString(), modelId});  // stops the answer in progress; says so in the status line
    worker_.setServer(asked_, modelId, askedKey_);
    Q_EMIT changed();
}

}  // namespace mnemo::gui
