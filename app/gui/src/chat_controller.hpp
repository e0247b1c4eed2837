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

#include "answer_figures.hpp"
#include "compare/compare_controller.hpp"
#include "conversation/conversation.hpp"
#include "conversation/conversation_model.hpp"
#include "conversation/conversation_store.hpp"
#include "conversation/deletion_undo.hpp"
#include "devices/device_model.hpp"
#include "fastest_device/fastest_device_controller.hpp"
#include "kb/kb_controller.hpp"
#include "model/model_controller.hpp"
#include "remote/server_controller.hpp"
#include "settings/app_settings.hpp"
#include "settings/settings_controller.hpp"
#include "status_severity.hpp"

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
    // The conversation deleted last, while it can be brought back (Undo).
    Q_PROPERTY(mnemo::gui::DeletionUndo* deletion READ deletion CONSTANT)
    Q_PROPERTY(bool busy READ busy NOTIFY busyChanged)
    Q_PROPERTY(QString status READ status NOTIFY statusChanged)
    Q_PROPERTY(bool statusIsError READ statusIsError NOTIFY statusChanged)
    // "info", "warning" (the chat goes on, with less) or "error"; and the technical detail behind
    // the line (a server's own error text), for its tooltip.
    Q_PROPERTY(QString statusSeverity READ statusSeverity NOTIFY statusChanged)
    Q_PROPERTY(QString statusDetails READ statusDetails NOTIFY statusChanged)
    // Files the app could not use (conversations, the settings file), each named with the reason,
    // until dismissed: they outlast the status line, which the first model load overwrites.
    Q_PROPERTY(QStringList notices READ notices NOTIFY noticesChanged)
    Q_PROPERTY(QString conversationId READ conversationId NOTIFY conversationChanged)
    Q_PROPERTY(QString title READ title NOTIFY conversationChanged)
    Q_PROPERTY(QString systemPrompt READ systemPrompt WRITE setSystemPrompt NOTIFY conversationChanged)
    Q_PROPERTY(QString performance READ performance NOTIFY performanceChanged)
    // The last answer failed because the conversation is longer than the context: the status line
    // offers dropOldestAndContinue().
    Q_PROPERTY(bool contextOverflow READ contextOverflow NOTIFY statusChanged)

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
    DeletionUndo* deletion() { return &deletion_; }

    bool busy() const { return generation_ != 0; }
    QString status() const { return status_; }
    bool statusIsError() const { return statusIsError_; }
    QString statusSeverity() const { return statusSeverityName(statusSeverity_); }
    QString statusDetails() const { return statusDetails_; }
    QStringList notices() const;
    QString conversationId() const { return current_.id; }
    QString title() const { return current_.title; }
    QString systemPrompt() const { return current_.systemPrompt; }
    void setSystemPrompt(const QString& s);
    QString performance() const;
    bool contextOverflow() const { return contextOverflow_; }

    // Each returns false (and says why in status) when it cannot start.
    Q_INVOKABLE bool send(const QString& text);
    Q_INVOKABLE void stop();
    Q_INVOKABLE bool regenerate();
    // An edit keeps the earlier prompt and what followed it as another version (branches.hpp),
    // and a regeneration the earlier answer; showVersion() steps between them (‹ k/n ›): the
    // conversation shown from `row` on becomes that version's. Not while an answer streams.
    Q_INVOKABLE bool editMessage(int row, const QString& text);
    Q_INVOKABLE bool showVersion(int row, int version);
    // From now on the oldest messages are dropped when the conversation is longer than the
    // context (the setting), and the last prompt is answered again.
    Q_INVOKABLE bool dropOldestAndContinue();

    Q_INVOKABLE void newConversation();
    Q_INVOKABLE bool openConversation(const QString& id);
    // Undoable for DeletionUndo::kUndoSeconds (chat.deletion.undo(), which opens it again if it was open).
    Q_INVOKABLE bool deleteConversation(const QString& id);
    Q_INVOKABLE bool undoDelete();
    Q_INVOKABLE bool renameConversation(const QString& id, const QString& title);
    Q_INVOKABLE void dismissNotices();
    // Shows a message in the status line as an error (the program's own, e.g. no default model).
    void showError(const QString& message) { setStatus(message, true); }
    // Opens the newest saved conversation, if any, and says which files could not be used (at start).
    void restoreLatest();
    // Writes the open conversation to a path or file: URL as "markdown" or "json". Exporting
    // changes nothing in it (not its place in the list).
    Q_INVOKABLE bool exportConversation(const QString& pathOrUrl, const QString& format);
    // The file the export dialog suggests: the open conversation's title as a file name
    // (export_file_name.hpp), in `folder` (the home folder when empty).
    Q_INVOKABLE QString exportSuggestion(const QString& folder, const QString& format) const;
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

    // Answers the conversation as it stands with `answer` (the new answer's message, which may
    // already hold the versions it replaces) appended.
    bool startAnswer(Message answer = {});
    void followFirstPrompt();  // the title follows the first prompt, unless the user typed one
    void clearError();         // a conversation's error does not outlive it
    void stopCurrent();
    void endAnswer(int row);
    void setStatus(const QString& s, bool error);
    void setNotice(const StatusNotice& n);  // a status line with its severity and details
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
    DeletionUndo deletion_;

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
    StatusSeverity statusSeverity_ = StatusSeverity::Info;
    QString statusDetails_;
    QString pendingMemoryFolder_;  // documents changed it during an answer: reloaded when it ends
    QString settingsNotice_;  // the settings file's problem, until dismissed
    bool contextOverflow_ = false;
    bool deletedWasOpen_ = false;  // the pending deletion was the open conversation

    AnswerFigures figures_;  // the performance strip
};

}  // namespace mnemo::gui
