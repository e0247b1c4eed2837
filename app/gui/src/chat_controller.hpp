// The app's one controller: what QML calls (send, stop, regenerate, edit, device, model,
// conversations) and what it shows (the model line, the performance strip, status messages).
// It lives on the GUI thread and never waits for the engine: requests go to the ModelWorker by
// queued signals, and everything the worker sends back arrives as queued signals too. Each
// request carries an id, so what a stopped or replaced request still sends is ignored.
#pragma once

#include <QObject>
#include <memory>

#include "compare/compare_controller.hpp"
#include "conversation/conversation.hpp"
#include "conversation/conversation_model.hpp"
#include "conversation/conversation_store.hpp"
#include "devices/auto_device.hpp"
#include "devices/device_model.hpp"
#include "engine/model_worker.hpp"
#include "settings/app_settings.hpp"

namespace mnemo::gui {

class ChatController : public QObject {
    Q_OBJECT
    Q_PROPERTY(mnemo::gui::ConversationModel* conversation READ conversation CONSTANT)
    Q_PROPERTY(mnemo::gui::ConversationStore* conversations READ conversations CONSTANT)
    Q_PROPERTY(mnemo::gui::DeviceModel* devices READ devices CONSTANT)
    Q_PROPERTY(mnemo::gui::CompareController* compare READ compare CONSTANT)
    Q_PROPERTY(bool busy READ busy NOTIFY busyChanged)
    Q_PROPERTY(bool loading READ loading NOTIFY loadingChanged)
    Q_PROPERTY(bool modelLoaded READ modelLoaded NOTIFY modelInfoChanged)
    Q_PROPERTY(QString modelLine READ modelLine NOTIFY modelInfoChanged)
    Q_PROPERTY(QString modelDetails READ modelDetails NOTIFY modelInfoChanged)
    Q_PROPERTY(QString modelDir READ modelDir NOTIFY modelInfoChanged)
    Q_PROPERTY(int deviceRow READ deviceRow NOTIFY modelInfoChanged)
    Q_PROPERTY(QString status READ status NOTIFY statusChanged)
    Q_PROPERTY(bool statusIsError READ statusIsError NOTIFY statusChanged)
    Q_PROPERTY(QString conversationId READ conversationId NOTIFY conversationChanged)
    Q_PROPERTY(QString title READ title NOTIFY conversationChanged)
    Q_PROPERTY(QString systemPrompt READ systemPrompt WRITE setSystemPrompt NOTIFY conversationChanged)
    Q_PROPERTY(double temperature MEMBER temperature_ NOTIFY samplingChanged)
    Q_PROPERTY(int topK MEMBER topK_ NOTIFY samplingChanged)
    Q_PROPERTY(double topP MEMBER topP_ NOTIFY samplingChanged)
    Q_PROPERTY(double minP MEMBER minP_ NOTIFY samplingChanged)
    Q_PROPERTY(double repeatPenalty MEMBER repeatPenalty_ NOTIFY samplingChanged)
    Q_PROPERTY(int maxTokens MEMBER maxTokens_ NOTIFY samplingChanged)
    // How chunks find memories in a memory folder: "vector" or "bm25" (used at the next load).
    Q_PROPERTY(QString retrieval MEMBER retrieval_ NOTIFY samplingChanged)
    // Kept per model like the sampling settings, but used when the model loads (reloadModel()).
    Q_PROPERTY(int contextLength MEMBER contextLength_ NOTIFY samplingChanged)
    Q_PROPERTY(int threads MEMBER threads_ NOTIFY samplingChanged)
    // Where memories come from: knowledgeState is "off", "folder", "connected", "unreachable",
    // "unauthorised" or "refused"; knowledgeText says it in a sentence, with the reason.
    Q_PROPERTY(QString knowledgeState READ knowledgeState NOTIFY knowledgeChanged)
    Q_PROPERTY(QString knowledgeText READ knowledgeText NOTIFY knowledgeChanged)
    Q_PROPERTY(QString kbUrl READ kbUrl NOTIFY knowledgeChanged)
    Q_PROPERTY(QString kbTokenFile READ kbTokenFile NOTIFY knowledgeChanged)
    Q_PROPERTY(QString kbCaFile READ kbCaFile NOTIFY knowledgeChanged)
    Q_PROPERTY(QString memoryFolder READ memoryFolder NOTIFY knowledgeChanged)
    // With Auto chosen: the device it chose and the figures it measured ("" otherwise).
    Q_PROPERTY(QString autoText READ autoText NOTIFY modelInfoChanged)
    Q_PROPERTY(QString performance READ performance NOTIFY performanceChanged)
    Q_PROPERTY(QStringList recentModels READ recentModels NOTIFY recentModelsChanged)

public:
    // Conversations are kept in `conversationsFolder`; the sampling settings of each model and
    // the recent model folders in the INI file `settingsFile` (none kept when it is empty).
    explicit ChatController(const QString& conversationsFolder, const QString& settingsFile = {}, QObject* parent = nullptr);
    ~ChatController() override;

    ConversationModel* conversation() { return &conversation_; }
    ConversationStore* conversations() { return &store_; }
    DeviceModel* devices() { return &devices_; }
    CompareController* compare() { return &compare_; }
    ModelWorker* worker() const { return thread_->worker(); }

    bool busy() const { return generation_ != 0; }
    // A load, or the Auto benchmark before one.
    bool loading() const { return pendingLoad_ != 0 || autoBench_.running(); }
    bool modelLoaded() const { return loaded_; }
    QString modelLine() const;     // the model info line: type, sizes, template, context, device
    QString modelDetails() const;  // its tooltip: the folder and the architecture in full
    QString modelDir() const { return info_.modelDir; }
    const ModelInfo& modelInfo() const { return info_; }
    int deviceRow() const;
    QString status() const { return status_; }
    bool statusIsError() const { return statusIsError_; }
    QString conversationId() const { return current_.id; }
    QString title() const { return current_.title; }
    QString systemPrompt() const { return current_.systemPrompt; }
    void setSystemPrompt(const QString& s);
    QString performance() const;
    SamplingSettings sampling() const;
    QStringList recentModels() const { return settings_.recentModels(); }
    QString knowledgeState() const { return knowledgeStateName(knowledge_.state); }
    QString knowledgeText() const { return knowledgeStatusText(knowledge_); }
    const KnowledgeStatus& knowledge() const { return knowledge_; }
    QString kbUrl() const { return kb_.url; }
    QString kbTokenFile() const { return kb_.tokenFile; }
    QString kbCaFile() const { return kb_.caFile; }
    QString memoryFolder() const { return lastLoad_.memoryFolder; }
    QString autoText() const;
    bool autoChosen() const { return autoDevice_; }
    const AutoChoice& autoChoice() const { return autoChoice_; }
    int autoBenchmarkRuns() const { return autoBenchmarkRuns_; }  // measured, not taken from the cache
    // The deadline of every knowledge-server call, connecting included (tests shorten it).
    void setKnowledgeTimeoutMs(int ms) { kbTimeoutMs_ = ms; }

    // Loads a model folder (a path or a file: URL) on the current device, the CPU at first.
    Q_INVOKABLE void loadModel(const QString& dirOrUrl);
    // Reloads the model on device row `row` of devices(); the conversation stays. A failure
    // keeps the current device and says why.
    Q_INVOKABLE void chooseDevice(int row);
    // Reloads the model with explicit memories from a memory folder (`mnemo memorize`), on the
    // same device; an empty folder reloads it without memories.
    Q_INVOKABLE void useMemoryFolder(const QString& folderOrUrl);
    // Reloads the model with memories from a knowledge server (`mnemo-kb serve`) on the same
    // device. A server that does not answer or refuses the token does not stop the chat: the
    // model answers without memories, knowledgeState says why, and so does every answer.
    Q_INVOKABLE void connectKnowledgeServer(const QString& url, const QString& tokenFileOrUrl, const QString& caFileOrUrl);
    // Reloads the model without memories (no server, no folder).
    Q_INVOKABLE void disconnectKnowledge();
    // Reloads the model as it is (the context length and threads apply at a load).
    Q_INVOKABLE void reloadModel();
    // Each returns false (and says why in status) when it cannot start.
    Q_INVOKABLE bool send(const QString& text);
    Q_INVOKABLE void stop();
    Q_INVOKABLE bool regenerate();
    Q_INVOKABLE bool editMessage(int row, const QString& text);

    Q_INVOKABLE void newConversation();
    Q_INVOKABLE bool openConversation(const QString& id);
    Q_INVOKABLE bool deleteConversation(const QString& id);
    Q_INVOKABLE bool renameConversation(const QString& id, const QString& title);
    // Shows a message in the status line as an error (the program's own, e.g. no default model).
    void showError(const QString& message) { setStatus(message, true); }
    // Opens the newest saved conversation, if any (at start).
    void restoreLatest();
    // Writes the open conversation to a path or file: URL as "markdown" or "json".
    Q_INVOKABLE bool exportConversation(const QString& pathOrUrl, const QString& format);
    Q_INVOKABLE void copyToClipboard(const QString& text);
    // The fenced code blocks of a message, for its "Copy code" buttons.
    Q_INVOKABLE QStringList codeBlocks(const QString& markdown) const;

Q_SIGNALS:
    void requestLoad(quint64 id, mnemo::gui::LoadRequest request);
    void requestGenerate(quint64 id, QList<mnemo::gui::ChatTurn> turns, mnemo::gui::SamplingSettings settings);

    void busyChanged();
    void loadingChanged();
    void modelInfoChanged();
    void statusChanged();
    void conversationChanged();
    void samplingChanged();
    void performanceChanged();
    void recentModelsChanged();
    void knowledgeChanged();
    // An answer has ended (finished, stopped or failed); for tests and the view.
    void answerEnded(int row);

private:
    void onLoaded(quint64 id, const ModelInfo& info);
    void onLoadFailed(quint64 id, const QString& reason, bool previousKept);
    void onToken(quint64 id, const QString& piece);
    void onFinished(quint64 id, const GenerationResult& result);
    void onFailed(quint64 id, const QString& reason);
    void takeStoppedMeasurements(const GenerationResult& r);
    void onKnowledgeWarning(const QString& message);
    void chooseAuto();
    void onAutoMeasured(const AutoChoice& choice);
    void onAutoFailed(const QString& reason);
    void applyAuto(const AutoChoice& choice);
    QString autoCacheKey() const;  // the model folder and the devices Auto chooses from
    void setKnowledge(const KnowledgeStatus& k);

    bool startAnswer();  // answers the conversation as it stands
    void stopCurrent();
    void setStatus(const QString& s, bool error);
    void saveCurrent();
    void requestLoadOf(const LoadRequest& r);
    // Sampling settings are kept per model folder: read when a model loads, written on a change.
    void readModelSettings(const QString& modelDir);
    void writeModelSettings();
    void rememberRecent(const QString& modelDir);

    ConversationModel conversation_;
    ConversationStore store_;
    DeviceModel devices_;
    CompareController compare_;  // the compare view, on a thread of its own
    Conversation current_;  // the open conversation's fields; its messages are conversation_'s

    ModelInfo info_;
    bool loaded_ = false;
    LoadRequest lastLoad_;
    quint64 nextId_ = 0;
    quint64 pendingLoad_ = 0;
    quint64 generation_ = 0;
    int answerRow_ = -1;
    // The answer stopped last, until its result arrives with its measurements.
    struct Stopped {
        quint64 generation = 0;
        int row = -1;
        QString conversation;
    } stopped_;
    QString status_;
    bool statusIsError_ = false;

    // The settings of the next answers; a model's saved ones replace them when it loads.
    double temperature_ = ModelSettings{}.temperature;
    int topK_ = ModelSettings{}.topK;
    double topP_ = ModelSettings{}.topP;
    double minP_ = ModelSettings{}.minP;
    double repeatPenalty_ = ModelSettings{}.repeatPenalty;
    int maxTokens_ = ModelSettings{}.maxTokens;
    QString retrieval_ = ModelSettings{}.retrieval;
    int contextLength_ = ModelSettings{}.contextLength;
    int threads_ = ModelSettings{}.threads;

    KnowledgeStatus knowledge_;
    KnowledgeServerSettings kb_;  // the server last asked for (the panel's fields)
    int kbTimeoutMs_ = 2000;

    AutoDeviceBenchmark autoBench_;
    bool autoDevice_ = false;  // the device in use was chosen by Auto
    AutoChoice autoChoice_;
    int autoBenchmarkRuns_ = 0;

    AppSettings settings_;
    bool readingSettings_ = false;

    double lastTokensPerSecond_ = 0.0;
    double lastFirstTokenMs_ = 0.0;
    int contextUsed_ = 0;

    // Last, so that it is destroyed first: the worker thread stops before what it reports to.
    std::unique_ptr<WorkerThread> thread_;
};

}  // namespace mnemo::gui
