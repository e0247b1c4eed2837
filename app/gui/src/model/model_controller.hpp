// The model and where it runs (chat.model): opening a model folder, choosing its device (by hand,
// or measured through the FastestDeviceController), reloading it, and what it is (the model line).
// The ModelWorker lives on its own thread (owned here): loads go to it by queued signals and each
// has an id, so only the newest ends the loading state, and a load that fails keeps the model
// that ran. The "Knowledge…" panel (KbController) and Fastest reload the model through reload();
// the chat answers on worker() and stops its answer when asked (stopAnswer()).
//
// The picker's last row is a running `mnemo serve` instead of a device: choosing it asks for the
// server (serverAsked(); ServerController connects), and once connected (useServer()) the chat
// answers there and the model line names the server's model and address. The local model stays
// loaded meanwhile, so choosing a device again (or any local load) returns to it at once.
#pragma once

#include <QObject>
#include <QStringList>
#include <functional>
#include <memory>
#include <optional>

#include "devices/device_model.hpp"
#include "engine/model_worker.hpp"
#include "fastest_device/fastest_device_controller.hpp"
#include "settings/app_settings.hpp"
#include "settings/settings_controller.hpp"

namespace mnemo::gui {

class ModelController : public QObject {
    Q_OBJECT
    Q_PROPERTY(bool loaded READ loaded NOTIFY infoChanged)  // a local model
    // Answers come from a server (the picker's server entry), not from the local model.
    Q_PROPERTY(bool remote READ remote NOTIFY infoChanged)
    // Something can answer: a local model, or a server.
    Q_PROPERTY(bool canAnswer READ canAnswer NOTIFY infoChanged)
    // A load, or the Fastest benchmark before one.
    Q_PROPERTY(bool loading READ loading NOTIFY loadingChanged)
    Q_PROPERTY(QString line READ line NOTIFY infoChanged)        // type, sizes, template, context, device
    Q_PROPERTY(QString details READ details NOTIFY infoChanged)  // the folder and the architecture in full
    Q_PROPERTY(QString dir READ dir NOTIFY infoChanged)
    Q_PROPERTY(int deviceRow READ deviceRow NOTIFY infoChanged)  // in the picker (DeviceModel)
    Q_PROPERTY(QStringList recentModels READ recentModels NOTIFY recentModelsChanged)
    // Positions the loaded model was trained on (0: unknown, or no model): the settings say it
    // beside the context length, which a load clamps to it (ModelInfo::contextNote).
    Q_PROPERTY(int trainedContext READ trainedContext NOTIFY infoChanged)

public:
    ModelController(DeviceModel& devices, AppSettings& appSettings, SettingsController& settings, FastestDeviceController& fastestDevice,
                    QObject* parent = nullptr);
    ~ModelController() override;

    ModelWorker* worker() const { return thread_->worker(); }
    // Stops the worker's thread (waiting at most for one token or a load in progress): called by
    // the owner before the objects the worker reports to go.
    void stopWorker() { thread_.reset(); }

    bool loaded() const { return loaded_; }
    // The server that answers instead of the local model (ServerController connected it).
    struct Server {
        QString url;      // the API's base, http(s)://HOST:PORT/v1
        QString modelId;  // as GET /v1/models lists it
    };
    bool remote() const { return server_.has_value(); }
    bool canAnswer() const { return loaded_ || remote(); }
    const std::optional<Server>& server() const { return server_; }
    // From now on the chat answers on `server`: the answer in progress stops; the local model
    // stays loaded.
    void useServer(const Server& server);
    bool loading() const { return pendingLoad_ != 0 || fastestDevice_.measuring(); }
    QString line() const;
    QString details() const;
    QString dir() const { return info_.modelDir; }
    int trainedContext() const { return loaded_ ? static_cast<int>(info_.trainedContext) : 0; }
    int deviceRow() const;
    QStringList recentModels() const { return appSettings_.recentModels(); }
    const ModelInfo& info() const { return info_; }
    // What the last load that succeeded asked for, as it ran: the base of every reload.
    const LoadRequest& lastLoad() const { return lastLoad_; }

    // Loads a model folder (a path or a file: URL) on the current device, the CPU at first.
    Q_INVOKABLE void loadModel(const QString& dirOrUrl);
    // Reloads the model on device row `row` of the picker (the Fastest row: Fastest chooses); the
    // conversation stays. A failure keeps the current device and says why.
    Q_INVOKABLE void chooseDevice(int row);
    // Reloads the model as it is (the context length and threads apply at a load).
    Q_INVOKABLE void reloadModel();
    // Reloads the model with `request` (other memories, another device): the answer in progress
    // stops, and the status says `status`.
    void reload(const LoadRequest& request, const QString& status);
    // Gives a model folder opened by loadModel its memory source (KbController: the knowledge
    // server last used with that folder); a load starts from none otherwise. Reloads keep theirs.
    void setMemoryChoice(std::function<void(LoadRequest&)> choose) { memoryChoice_ = std::move(choose); }

Q_SIGNALS:
    void requestLoad(quint64 id, mnemo::gui::LoadRequest request);
    void loadingChanged();
    void infoChanged();
    void recentModelsChanged();
    // The worker's model was replaced (by the newest load, or by one a newer load overtook).
    void modelReplaced(const mnemo::gui::ModelInfo& info);
    // A model folder is opened: the settings kept for it apply from now on.
    void folderOpened(const QString& modelDir);
    // The answer in progress must end: the model is reloaded, or measured by Fastest.
    void stopAnswer();
    void statusMessage(const QString& text, bool error);
    // The picker's server entry was chosen: the server's address and key are asked for.
    void serverAsked();

private:
    void onLoaded(quint64 id, const ModelInfo& info);
    void onLoadFailed(quint64 id, const QString& reason, bool previousKept);
    void onFastestChosen(const FastestChoice& choice);
    void send(const LoadRequest& request);
    void openFolder(const QString& modelDir);
    void leaveServer();  // back to the local model (a device chosen, a local load)

    DeviceModel& devices_;
    AppSettings& appSettings_;
    SettingsController& settings_;
    FastestDeviceController& fastestDevice_;

    ModelInfo info_;
    bool loaded_ = false;
    LoadRequest lastLoad_;
    LoadRequest pending_;  // the newest request, until its answer
    quint64 nextId_ = 0;
    quint64 pendingLoad_ = 0;
    std::optional<Server> server_;
    std::function<void(LoadRequest&)> memoryChoice_;

    // Last, so that it is destroyed first: the worker thread stops before what it reports to.
    std::unique_ptr<WorkerThread> thread_;
};

}  // namespace mnemo::gui
