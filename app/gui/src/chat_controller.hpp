// The app's root object, `chat` in QML: the chat itself (send, stop, regenerate, edit; the answer
// streaming in; the performance strip; the status line) and the conversations (new, open,
// rename, delete, export; each saved as it changes). What is not the chat has its own controller,
// reached through a property: the model and its device (model), the settings of the next answers
// and loads (settings), where memories come from (kb: a memory folder or a knowledge server), the
// measured Fastest device (fastestDevice), the compare view (compare) and a `mnemo serve` that
// answers instead of the local model (server: the device picker's server entry). It lives on the GUI
// thread and never waits for the engine: answers go to the ModelWorker (or the RemoteWorker of the
// server) by queued signals and come back as queued signals. Each answer carries an id, so what a stopped or replaced one still sends
// is ignored.
#pragma once

#include <QObject>

#include "compare/compare_controller.hpp"
#include "conversation/conversation.hpp"
#include "conversation/conversation_model.hpp"
#include "conversation/conversation_store.hpp"
#include "devices/device_model.hpp"
#include "fastest_device/fastest_device_controller.hpp"
#include "kb/kb_controller.hpp"
#include "model/model_controller.hpp"
#include "remote/server_controller.hpp"
#include "settings/app_settings.hpp"
#include "settings/settings_controller.hpp"

namespace mnemo::gui {

class ChatController : public QObject {
    Q_OBJECT
    Q_PROPERTY(mnemo::gui::ConversationModel* conversation READ conversation CONSTANT)
    Q_PROPERTY(mnemo::gui::ConversationStore* conversations READ conversations CONSTANT)
    Q_PROPERTY(mnemo::gui::DeviceModel* devices READ devices CONSTANT)
    Q_PROPERTY(mnemo::gui::ModelController* model READ model CONSTANT)
    Q_PROPERTY(mnemo::gui::SettingsController* settings READ settings CONSTANT)
    Q_PROPERTY(mnemo::gui::KbController* kb READ kb CONSTANT)
    Q_PROPERTY(mnemo::gui::FastestDeviceController* fastestDevice READ fastestDevice CONSTANT)
    Q_PROPERTY(mnemo::gui::CompareController* compare READ compare CONSTANT)
    Q_PROPERTY(mnemo::gui::ServerController* server READ server CONSTANT)
    Q_PROPERTY(bool busy READ busy NOTIFY busyChanged)
    Q_PROPERTY(QString status READ status NOTIFY statusChanged)
    Q_PROPERTY(bool statusIsError READ statusIsError NOTIFY statusChanged)
    // Files the app could not use (conversations, the settings file), each named with the reason,
    // until dismissed: they outlast the status line, which the first model load overwrites.
    Q_PROPERTY(QStringList notices READ notices NOTIFY noticesChanged)
    Q_PROPERTY(QString conversationId READ conversationId NOTIFY conversationChanged)
    Q_PROPERTY(QString title READ title NOTIFY conversationChanged)
    Q_PROPERTY(QString systemPrompt READ systemPrompt WRITE setSystemPrompt NOTIFY conversationChanged)
    Q_PROPERTY(QString performance READ performance NOTIFY performanceChanged)

public:
    // Conversations are kept in `conversationsFolder`; the settings of each model, the recent
    // model folders and the last knowledge server in the INI file `settingsFile` (none kept when
    // it is empty or cannot be used, which notices() then says).
    explicit ChatController(const QString& conversationsFolder, const QString& settingsFile = {}, QObject* parent = nullptr);
    ~ChatController() override;

    ConversationModel* conversation() { return &conversation_; }
    ConversationStore* conversations() { return &store_; }
    DeviceModel* devices() { return &devices_; }
    ModelController* model() { return &model_; }
    SettingsController* settings() { return &settings_; }
    KbController* kb() { return &kb_; }
    FastestDeviceController* fastestDevice() { return &fastestDevice_; }
    CompareController* compare() { return &compare_; }
    ServerController* server() { return &server_; }

    bool busy() const { return generation_ != 0; }
    QString status() const { return status_; }
    bool statusIsError() const { return statusIsError_; }
    QStringList notices() const;
    QString conversationId() const { return current_.id; }
    QString title() const { return current_.title; }
    QString systemPrompt() const { return current_.systemPrompt; }
    void setSystemPrompt(const QString& s);
    QString performance() const;

    // Each returns false (and says why in status) when it cannot start.
    Q_INVOKABLE bool send(const QString& text);
    Q_INVOKABLE void stop();
    Q_INVOKABLE bool regenerate();
    Q_INVOKABLE bool editMessage(int row, const QString& text);

    Q_INVOKABLE void newConversation();
    Q_INVOKABLE bool openConversation(const QString& id);
    Q_INVOKABLE bool deleteConversation(const QString& id);
    Q_INVOKABLE bool renameConversation(const QString& id, const QString& title);
    Q_INVOKABLE void dismissNotices();
    // Shows a message in the status line as an error (the program's own, e.g. no default model).
    void showError(const QString& message) { setStatus(message, true); }
    // Opens the newest saved conversation, if any, and says which files could not be used (at start).
    void restoreLatest();
    // Writes the open conversation to a path or file: URL as "markdown" or "json".
    Q_INVOKABLE bool exportConversation(const QString& pathOrUrl, const QString& format);
    Q_INVOKABLE void copyToClipboard(const QString& text);
    // The fenced code blocks of a message, for its "Copy code" buttons.
    Q_INVOKABLE QStringList codeBlocks(const QString& markdown) const;

Q_SIGNALS:
    void requestGenerate(quint64 id, QList<mnemo::gui::ChatTurn> turns, mnemo::gui::SamplingSettings settings);
    void requestRemoteGenerate(quint64 id, QList<mnemo::gui::ChatTurn> turns, mnemo::gui::SamplingSettings settings);

    void busyChanged();
    void statusChanged();
    void noticesChanged();
    void conversationChanged();
    void performanceChanged();
    // An answer has ended (finished, stopped or failed); for tests and the view.
    void answerEnded(int row);

private:
    void onToken(quint64 id, const QString& piece);
    void onFinished(quint64 id, const GenerationResult& result);
    void onFailed(quint64 id, const QString& reason);
    void takeStoppedMeasurements(const GenerationResult& r);
    void takeMeasurements(Message& m, const GenerationResult& r);  // into the answer and the strip

    bool startAnswer();  // answers the conversation as it stands
    void stopCurrent();
    void endAnswer(int row);
    void setStatus(const QString& s, bool error);
    void saveCurrent();

    // Declared in the order they are made: each gets only what is above it.
    AppSettings appSettings_;
    DeviceModel devices_;
    ConversationModel conversation_;
    ConversationStore store_;
    SettingsController settings_;
    FastestDeviceController fastestDevice_;
    ModelController model_;  // owns the worker thread (stopped first, in the destructor)
    KbController kb_;
    CompareController compare_;  // the compare view, on a thread of its own
    ServerController server_;    // answers from a mnemo serve, when the picker's server entry is in use

    Conversation current_;  // the open conversation's fields; its messages are conversation_'s
    quint64 nextId_ = 0;
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
    QString settingsNotice_;  // the settings file's problem, until dismissed

    double lastTokensPerSecond_ = 0.0;
    double lastFirstTokenMs_ = 0.0;
    int contextUsed_ = 0;
    bool lastFromServer_ = false;  // the strip's figures are the server's
};

}  // namespace mnemo::gui
