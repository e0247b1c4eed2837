#include "model/model_controller.hpp"

#include "app/measure.hpp"
#include "local_path.hpp"

namespace mnemo::gui {

namespace {

QString bytes(quint64 n) { return QString::fromStdString(app::format_bytes(n)); }

QString count(qint64 n) {
    if (n >= 1000000000) return QString::number(static_cast<double>(n) / 1e9, 'f', 2) + QStringLiteral(" B");
    if (n >= 1000000) return QString::number(static_cast<double>(n) / 1e6, 'f', 2) + QStringLiteral(" M");
    if (n >= 1000) return QString::number(static_cast<double>(n) / 1e3, 'f', 1) + QStringLiteral(" k");
    return QString::number(n);
}

}  // namespace

ModelController::ModelController(DeviceModel& devices, AppSettings& appSettings, SettingsController& settings,
                                 FastestDeviceController& fastestDevice, QObject* parent)
    : QObject(parent),
      devices_(devices),
      appSettings_(appSettings),
      settings_(settings),
      fastestDevice_(fastestDevice),
      thread_(std::make_unique<WorkerThread>()) {
    ModelWorker* w = thread_->worker();
    // The worker lives on its own thread: requests are queued to it, its reports are queued back.
    connect(this, &ModelController::requestLoad, w, &ModelWorker::load, Qt::QueuedConnection);
    connect(w, &ModelWorker::loaded, this, &ModelController::onLoaded, Qt::QueuedConnection);
    connect(w, &ModelWorker::loadFailed, this, &ModelController::onLoadFailed, Qt::QueuedConnection);
    connect(&fastestDevice_, &FastestDeviceController::chosen, this, &ModelController::onFastestChosen);
    connect(&fastestDevice_, &FastestDeviceController::changed, this, &ModelController::infoChanged);
    connect(&fastestDevice_, &FastestDeviceController::measuringChanged, this, [this] {
        if (fastestDevice_.measuring()) Q_EMIT stopAnswer();  // the benchmark needs the devices
        Q_EMIT loadingChanged();
        Q_EMIT infoChanged();  // the picker shows the device in use again if Fastest chose none
    });
}

ModelController::~ModelController() = default;

QString ModelController::line() const {
    if (server_) return QStringLiteral("%1 · served by %2 (mnemo serve)").arg(server_->modelId, server_->url);
    if (!loaded_) return loading() ? QStringLiteral("Loading the model…") : QStringLiteral("No model loaded");
    QString line = QStringLiteral("%1 · %2 parameters, %3 per token · %4 read per token · %5 in memory · %6 template · context %7 · %8")
                       .arg(info_.modelType, count(info_.totalParams), count(info_.activatedParams),
                            bytes(info_.bytesPerToken), bytes(info_.memoryBytes), info_.chatTemplate)
                       .arg(info_.contextLength)
                       .arg(info_.deviceText());
    if (!info_.memories.isEmpty()) line += QStringLiteral(" · memories: ") + info_.memories;
    return line;
}

QString ModelController::details() const {
    if (server_) {
        const QString local = loaded_ ? QStringLiteral("%1 on %2").arg(info_.modelDir, info_.deviceText()) : QStringLiteral("none");
        return QStringLiteral("%1\nThe local model stays loaded (a device chosen answers with it again): %2").arg(line(), local);
    }
    if (!loaded_) return line();
    return QStringLiteral("%1\n%2\n%3").arg(info_.modelDir, info_.architecture, line());
}

int ModelController::deviceRow() const {
    if (server_) return devices_.serverRow();
    if (fastestDevice_.active()) return DeviceModel::kFastestRow;  // the model line names the device Fastest chose
    return loaded_ ? devices_.rowOf(info_.backend, info_.device) : -1;
}

void ModelController::useServer(const Server& server) {
    Q_EMIT stopAnswer();  // an answer of the local model (or another server) ends here
    fastestDevice_.end();
    server_ = server;
    devices_.setServerDetail(QStringLiteral("in use: %1 at %2").arg(server.modelId, server.url));
    Q_EMIT statusMessage(QStringLiteral("Answers now come from %1 at %2; the conversation goes on there").arg(server.modelId, server.url),
                         false);
    Q_EMIT infoChanged();
}

void ModelController::leaveServer() {
    if (!server_) return;
    Q_EMIT stopAnswer();
    server_.reset();
    devices_.setServerDetail({});
    Q_EMIT infoChanged();
}

void ModelController::send(const LoadRequest& request) {
    leaveServer();  // a local load means the local model answers
    LoadRequest r = request;
    r.threads = settings_.threads();
    r.contextLength = settings_.contextLength();
    pending_ = r;
    pendingLoad_ = ++nextId_;
    Q_EMIT loadingChanged();
    Q_EMIT infoChanged();
    Q_EMIT requestLoad(pendingLoad_, r);
}

void ModelController::reload(const LoadRequest& request, const QString& status) {
    Q_EMIT stopAnswer();  // an answer in progress ends here; the next one runs on the new model
    Q_EMIT statusMessage(status, false);
    send(request);
}

void ModelController::openFolder(const QString& modelDir) {
    settings_.readFor(modelDir);
    Q_EMIT folderOpened(modelDir);
}

void ModelController::loadModel(const QString& dirOrUrl) {
    LoadRequest r = lastLoad_;  // the same device
    r.modelDir = localPath(dirOrUrl);
    // Fastest measured another model: the device stays, chosen by hand now.
    if (r.modelDir != lastLoad_.modelDir) fastestDevice_.end();
    r.memoryFolder.clear();  // memories are made for one model
    r.kbUrl.clear();         // and so is a knowledge server's bank
    if (memoryChoice_) memoryChoice_(r);  // unless one was in use with this folder
    if (r.backend.isEmpty()) r.backend = QStringLiteral("cpu");
    openFolder(r.modelDir);  // its context length and threads apply to this load
    Q_EMIT statusMessage(QStringLiteral("Loading %1 on %2:%3…").arg(r.modelDir, r.backend).arg(r.device), false);
    send(r);
}

void ModelController::chooseDevice(int row) {
    if (row < 0 || row >= devices_.rowCount()) return;
    const DeviceRow& d = devices_.at(row);
    if (d.isServer) {
        Q_EMIT serverAsked();
        Q_EMIT infoChanged();  // the picker shows what answers now until the server is connected
        return;
    }
    if (d.isFastest) {
        if (lastLoad_.modelDir.isEmpty()) {
            Q_EMIT statusMessage(QStringLiteral("Open a model first: Fastest measures the loaded model on each device"), true);
            Q_EMIT infoChanged();  // the picker goes back to the device in use
            return;
        }
        fastestDevice_.choose(lastLoad_.modelDir, settings_.threads());
        return;
    }
    fastestDevice_.end();  // a device chosen by hand
    if (!d.enabled) {
        Q_EMIT statusMessage(QStringLiteral("%1 cannot be chosen: %2").arg(d.label, d.detail), true);
        Q_EMIT infoChanged();
        return;
    }
    if (loaded_ && d.backend == info_.backend && d.device == info_.device) {
        if (server_) {
            leaveServer();
            Q_EMIT statusMessage(QStringLiteral("Back to the local model on %1; the conversation goes on there").arg(info_.deviceText()), false);
        }
        return;
    }
    if (!loaded_ && lastLoad_.modelDir.isEmpty()) {
        leaveServer();  // no local model yet: nothing answers until one is opened
        lastLoad_.backend = d.backend;
        lastLoad_.device = d.device;
        return;
    }
    LoadRequest r = lastLoad_;
    r.backend = d.backend;
    r.device = d.device;
    reload(r, QStringLiteral("Loading the model on %1…").arg(d.label));
}

void ModelController::onFastestChosen(const FastestChoice& choice) {
    if (loaded_ && info_.backend == choice.backend && info_.device == choice.device) {
        leaveServer();
        Q_EMIT statusMessage(QStringLiteral("%1; the model already runs there").arg(fastestDevice_.text()), false);
        Q_EMIT infoChanged();
        return;
    }
    LoadRequest r = lastLoad_;
    r.backend = choice.backend;
    r.device = choice.device;
    reload(r, QStringLiteral("%1; loading the model there…").arg(fastestDevice_.text()));
}

void ModelController::reloadModel() {
    if (lastLoad_.modelDir.isEmpty()) {
        Q_EMIT statusMessage(QStringLiteral("No model is loaded"), true);
        return;
    }
    reload(lastLoad_, QStringLiteral("Reloading the model (context %1, threads %2)…")
                          .arg(settings_.contextLength() > 0 ? QString::number(settings_.contextLength()) : QStringLiteral("default"),
                               settings_.threads() > 0 ? QString::number(settings_.threads()) : QStringLiteral("default")));
}

void ModelController::onLoaded(quint64 id, const ModelInfo& info) {
    const bool newest = id == pendingLoad_;
    const bool switched = loaded_ && (info.backend != info_.backend || info.device != info_.device);
    // An earlier request that was overtaken by a newer one still replaced the worker's model:
    // the info is taken either way, but only the newest request ends the loading state.
    info_ = info;
    loaded_ = true;
    settings_.writeFor(info.modelDir);
    if (!newest) {
        Q_EMIT modelReplaced(info);
        Q_EMIT infoChanged();
        return;
    }
    pendingLoad_ = 0;
    lastLoad_ = pending_;  // with what the worker made of it
    lastLoad_.modelDir = info.modelDir;
    lastLoad_.backend = info.backend;
    lastLoad_.device = info.device;
    lastLoad_.memoryFolder = info.memoryFolder;
    lastLoad_.retrieval = info.retrieval;
    lastLoad_.kbUrl = info.kbUrl;
    lastLoad_.kbTokenFile = info.kbTokenFile;
    lastLoad_.kbCaFile = info.kbCaFile;
    Q_EMIT modelReplaced(info);
    if (!switched) openFolder(info.modelDir);
    if (appSettings_.addRecent(info.modelDir)) Q_EMIT recentModelsChanged();
    // Loaded without the memories asked for: KbController says so (on modelReplaced, as a
    // warning with the server's own text as details), and so does each answer.
    if (!info.kb.missing()) {
        if (switched)
            Q_EMIT statusMessage(QStringLiteral("Now running on %1; the conversation goes on there%2")
                                     .arg(info.deviceText(), fastestDevice_.active() ? QStringLiteral(". ") + fastestDevice_.text() : QString()),
                                 false);
        else if (!info.contextNote.isEmpty())  // a context clamped to the trained one: said, not red
            Q_EMIT statusMessage(QStringLiteral("Loaded %1 on %2; %3").arg(info.modelDir, info.deviceText(), info.contextNote), false);
        else
            Q_EMIT statusMessage(QStringLiteral("Loaded %1 on %2").arg(info.modelDir, info.deviceText()), false);
    }
    Q_EMIT loadingChanged();
    Q_EMIT infoChanged();
}

void ModelController::onLoadFailed(quint64 id, const QString& reason, bool previousKept) {
    if (id != pendingLoad_) return;
    pendingLoad_ = 0;
    fastestDevice_.end();  // whatever Fastest chose is not what runs
    Q_EMIT statusMessage(previousKept ? QStringLiteral("Could not load the model: %1. Still running on %2.").arg(reason, info_.deviceText())
                                      : QStringLiteral("Could not load the model: %1").arg(reason),
                         true);
    Q_EMIT loadingChanged();
    Q_EMIT infoChanged();
}

}  // namespace mnemo::gui
