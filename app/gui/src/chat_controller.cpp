// ChatController (chat_controller.hpp): the chat itself — send, stop, regenerate, edit, versions,
// the answer streaming in, the status line. Its conversations (new, open, delete, export) are in
// chat_conversations.cpp.
#include "chat_controller.hpp"

#include <utility>

#include "conversation/branches.hpp"
#include "engine/context_fit.hpp"
#include "plural.hpp"

namespace mnemo::gui {

ChatController::ChatController(const QString& conversationsFolder, const QString& settingsFile, QObject* parent)
    : QObject(parent),
      appSettings_(settingsFile),
      store_(conversationsFolder),
      settings_(appSettings_),
      fastestDevice_(devices_, appSettings_),
      model_(devices_, appSettings_, settings_, fastestDevice_),
      kb_(model_, appSettings_),
      server_(model_, appSettings_),
      deletion_(store_),
      settingsNotice_(appSettings_.problem()) {
    ModelWorker* w = model_.worker();
    // The worker lives on its own thread: requests are queued to it, its reports are queued back.
    connect(this, &ChatController::requestGenerate, w, &ModelWorker::generate, Qt::QueuedConnection);
    connect(w, &ModelWorker::token, this, &ChatController::onToken, Qt::QueuedConnection);
    connect(w, &ModelWorker::generationFinished, this, &ChatController::onFinished, Qt::QueuedConnection);
    connect(w, &ModelWorker::generationFailed, this, &ChatController::onFailed, Qt::QueuedConnection);
    // The server's answers come the same way, queued too, though its worker lives on this thread
    // (remote_worker.hpp): nothing it reports arrives inside the call that asked for it.
    RemoteWorker* remote = server_.worker();
    connect(this, &ChatController::requestRemoteGenerate, remote, &RemoteWorker::generate, Qt::QueuedConnection);
    connect(remote, &RemoteWorker::token, this, &ChatController::onToken, Qt::QueuedConnection);
    connect(remote, &RemoteWorker::generationFinished, this, &ChatController::onFinished, Qt::QueuedConnection);
    connect(remote, &RemoteWorker::generationFailed, this, &ChatController::onFailed, Qt::QueuedConnection);
    connect(remote, &RemoteWorker::promptProgress, this, [this](quint64 id, int done, int total) {
        if (id == generation_)
            setStatus(QStringLiteral("The server is reading the conversation: %1 / %2").arg(done).arg(countText(total, QStringLiteral("token"))), false);
    });
    // The other controllers speak through the one status line.
    connect(&model_, &ModelController::statusMessage, this, &ChatController::setStatus);
    connect(&kb_, &KbController::statusMessage, this, &ChatController::setStatus);
    connect(&kb_, &KbController::statusNotice, this, &ChatController::setNotice);
    // Documents added to (or deleted from) a memory folder: the model reloads with it, but not
    // under an answer in progress (a reload would stop it): then when that answer ends.
    connect(kb_.documents(), &DocumentsController::memoryFolderChanged, this, [this](const QString& folder) {
        if (busy())
            pendingMemoryFolder_ = folder;
        else
            kb_.useMemoryFolder(folder);
    });
    connect(&server_, &ServerController::statusMessage, this, &ChatController::setStatus);
    connect(&fastestDevice_, &FastestDeviceController::statusMessage, this, &ChatController::setStatus);
    connect(&model_, &ModelController::stopAnswer, this, &ChatController::stopCurrent);
    connect(&model_, &ModelController::modelReplaced, this, [this](const ModelInfo& info) { current_.model = info.modelDir; });
    // The compare view reads the memories the chat's model reads, so that it answers as the chat does.
    connect(&model_, &ModelController::modelReplaced, this, [this](const ModelInfo& info) {
        compare_.setMemories({info.memoryFolder, info.kbUrl, info.kbTokenFile, info.kbCaFile, model_.lastLoad().kbTimeoutMs, info.retrieval});
    });
    // The strip's figures belong to what answered them: another model, device, context or server
    // starts it again (AnswerFigures).
    connect(&model_, &ModelController::infoChanged, this, [this] {
        const ModelInfo& i = model_.info();
        const auto& srv = model_.server();
        figures_.setAnswerer(srv ? QStringLiteral("server %1 %2").arg(srv->url, srv->modelId)
                                 : model_.loaded() ? QStringLiteral("%1 %2:%3 %4").arg(i.modelDir, i.backend).arg(i.device).arg(i.contextLength)
                                                   : QString());
        Q_EMIT performanceChanged();
    });
    connect(&deletion_, &DeletionUndo::failed, this, [this](const QString& why) { setStatus(why, true); });
    connect(&settings_, &SettingsController::changed, this, [this] { compare_.setThreads(settings_.threads()); });
    connect(&store_, &ConversationStore::noticesChanged, this, &ChatController::noticesChanged);
    store_.reload();
    newConversation();
}

ChatController::~ChatController() {
    stopCurrent();
    model_.stopWorker();  // waits for the worker thread (at most one token, or a load in progress)
}

QStringList ChatController::notices() const {
    QStringList all = store_.notices();
    if (!settingsNotice_.isEmpty()) all.prepend(settingsNotice_);
    return all;
}

void ChatController::dismissNotices() {
    const bool settingsHad = !settingsNotice_.isEmpty();
    settingsNotice_.clear();
    if (!store_.notices().isEmpty()) store_.clearNotices();  // its noticesChanged is ours too
    else if (settingsHad) Q_EMIT noticesChanged();
}

QString ChatController::performance() const { return figures_.text(model_.info().contextLength, model_.info().memoryBytes); }

void ChatController::setSystemPrompt(const QString& s) {
    if (s == current_.systemPrompt) return;
    current_.systemPrompt = s;
    Q_EMIT conversationChanged();
    saveCurrent();
}

void ChatController::setStatus(const QString& s, bool error) {
    setNotice({s, QString(), error ? StatusSeverity::Error : StatusSeverity::Info});
}

void ChatController::setNotice(const StatusNotice& n) {
    status_ = n.text;
    statusIsError_ = n.severity == StatusSeverity::Error;
    statusSeverity_ = n.severity;
    statusDetails_ = n.details;
    contextOverflow_ = false;  // set again by onFailed when that is what the status says
    Q_EMIT statusChanged();
}

void ChatController::clearError() {
    if (statusIsError_) setStatus({}, false);
}

void ChatController::followFirstPrompt() {
    if (current_.titleByUser || conversation_.count() == 0 || conversation_.at(0).role != QLatin1String("user")) return;
    const QString title = titleFrom(conversation_.at(0).text);
    if (title == current_.title) return;
    current_.title = title;
    Q_EMIT conversationChanged();
}

bool ChatController::send(const QString& text) {
    const QString prompt = text.trimmed();
    if (prompt.isEmpty()) return false;
    if (!model_.canAnswer() && !model_.loading()) {
        setStatus(QStringLiteral("No model is loaded: open a model folder first"), true);
        return false;
    }
    stopCurrent();
    Message m;
    m.role = QStringLiteral("user");
    m.text = prompt;
    conversation_.append(m);
    if (current_.title.isEmpty()) followFirstPrompt();
    saveCurrent();  // the prompt is kept even if the app ends before the answer does
    return startAnswer();
}

bool ChatController::regenerate() {
    const int last = conversation_.count() - 1;
    if (last < 0) {
        setStatus(QStringLiteral("There is no answer to regenerate"), true);
        return false;
    }
    stopCurrent();
    Message answer;
    if (conversation_.at(last).role == QLatin1String("assistant")) {
        // The answer it replaces stays as another version of this one (‹ k/n ›).
        answer.role = QStringLiteral("assistant");
        QList<Message> forked = forkAt(conversation_.messages(), last, {answer});
        answer = forked.takeLast();
        conversation_.truncate(last);
    }
    return startAnswer(answer);
}

bool ChatController::editMessage(int row, const QString& text) {
    if (row < 0 || row >= conversation_.count() || conversation_.at(row).role != QLatin1String("user")) {
        setStatus(QStringLiteral("Only your own messages can be edited"), true);
        return false;
    }
    if (text.trimmed().isEmpty()) {
        setStatus(QStringLiteral("A message cannot be empty"), true);
        return false;
    }
    stopCurrent();
    Message m;
    m.role = QStringLiteral("user");
    m.text = text.trimmed();
    // The conversation continues from the edited message; the prompt as it was, with everything
    // that followed it, stays as another version.
    conversation_.setMessages(forkAt(conversation_.messages(), row, {m}));
    if (row == 0) followFirstPrompt();
    return startAnswer();
}

bool ChatController::showVersion(int row, int version) {
    if (busy()) {
        setStatus(QStringLiteral("Stop the answer first (Esc): versions cannot be switched while one is written"), true);
        return false;
    }
    if (row < 0 || row >= conversation_.count() || version < 0 || version >= versionCount(conversation_.at(row))) {
        setStatus(QStringLiteral("Message %1 has no version %2").arg(row + 1).arg(version + 1), true);
        return false;
    }
    if (version == conversation_.at(row).version) return true;
    stopped_ = {};  // a stopped answer's late measurements must not land on another version's row
    conversation_.setMessages(mnemo::gui::showVersion(conversation_.messages(), row, version));
    if (row == 0) followFirstPrompt();
    saveCurrent();  // the model re-reads the conversation shown at the next answer
    return true;
}

bool ChatController::dropOldestAndContinue() {
    settings_.setProperty("dropOldestTurns", true);
    clearError();  // the offer is taken: the status no longer says the answer failed
    contextOverflow_ = false;
    return regenerate();
}

bool ChatController::startAnswer(Message answer) {
    QList<ChatTurn> turns;
    if (!current_.systemPrompt.trimmed().isEmpty()) turns.push_back({QStringLiteral("system"), current_.systemPrompt});
    for (const Message& m : conversation_.messages()) {
        if (m.role == QLatin1String("assistant") && !m.error.isEmpty()) continue;  // a failed answer is not context
        turns.push_back({m.role, m.historyText.isEmpty() ? m.text : m.historyText});
    }
    if (turns.isEmpty() || turns.back().role != QLatin1String("user")) {
        setStatus(QStringLiteral("Nothing to answer: the last message is not yours"), true);
        return false;
    }
    const SamplingSettings sampling = settings_.sampling();  // with this answer's own seed
    answer.role = QStringLiteral("assistant");
    answer.streaming = true;
    answer.seed = static_cast<qint64>(sampling.seed);
    answerRow_ = conversation_.append(answer);
    generation_ = ++nextId_;
    figures_.answerStarted();
    Q_EMIT performanceChanged();
    Q_EMIT busyChanged();
    if (model_.remote()) Q_EMIT requestRemoteGenerate(generation_, turns, sampling);
    else Q_EMIT requestGenerate(generation_, turns, sampling);
    return true;
}

void ChatController::stop() { stopCurrent(); }

void ChatController::stopCurrent() {
    if (generation_ == 0) return;
    // Directly, not queued: the worker is busy in its token loop and checks the flag per token.
    // Both are told: the answer may have gone to either, and each ignores ids it never ran.
    model_.worker()->requestStop(generation_);
    server_.worker()->requestStop(generation_);  // aborts the HTTP request: the server frees its slot
    // The stopped answer keeps the text that arrived; tokens still in flight are ignored (by id).
    // Its result, which follows at once, still gives it its measurements (onFinished).
    if (answerRow_ >= 0 && answerRow_ < conversation_.count()) {
        Message m = conversation_.at(answerRow_);
        m.streaming = false;
        m.finish = finishReasonText(FinishReason::Stopped);
        conversation_.replace(answerRow_, m);
        stopped_ = {generation_, answerRow_, current_.id};
    }
    endAnswer(answerRow_);
}

void ChatController::endAnswer(int row) {
    // After a result this changes nothing; after a stop or a failure the strip says so.
    const bool failed = row >= 0 && row < conversation_.count() && !conversation_.at(row).error.isEmpty();
    figures_.answerAbandoned(failed ? QStringLiteral("The answer failed") : QStringLiteral("Stopped"));
    Q_EMIT performanceChanged();
    generation_ = 0;
    answerRow_ = -1;
    Q_EMIT busyChanged();
    saveCurrent();
    Q_EMIT answerEnded(row);
    if (!pendingMemoryFolder_.isEmpty()) kb_.useMemoryFolder(std::exchange(pendingMemoryFolder_, QString()));
}

void ChatController::onToken(quint64 id, const QString& piece) {
    if (id != generation_) return;
    conversation_.appendText(answerRow_, piece);
    figures_.pieceArrived();
    Q_EMIT performanceChanged();
}

void ChatController::takeMeasurements(Message& m, const GenerationResult& r) {
    m.device = r.device;
    m.tokens = r.tokens;
    m.tokensPerSecond = r.tokensPerSecond;
    m.firstTokenSeconds = r.firstTokenSeconds;
    m.references = r.references;
    m.notice = r.kbNotice;
    m.droppedMessages = r.droppedMessages;
    if (!r.remote) kb_.update(r.kb);  // the local model's memory source; a server's are its own
}

void ChatController::onFinished(quint64 id, const GenerationResult& r) {
    if (id == stopped_.generation) {
        takeStoppedMeasurements(r);
        return;
    }
    if (id != generation_) return;
    Message m = conversation_.at(answerRow_);
    m.text = r.text;  // the same as the pieces, which were streamed through the same decoder
    m.historyText = r.historyText;
    m.streaming = false;
    m.finish = finishReasonText(r.reason);
    takeMeasurements(m, r);
    conversation_.replace(answerRow_, m);
    figures_.answerEnded(r);
    endAnswer(answerRow_);
}

void ChatController::takeStoppedMeasurements(const GenerationResult& r) {
    const Stopped s = stopped_;
    stopped_ = {};
    // Only while the same conversation is open and the answer is still where it was.
    if (s.conversation != current_.id || s.row >= conversation_.count()) return;
    Message m = conversation_.at(s.row);
    if (m.role != QLatin1String("assistant") || m.finish != finishReasonText(FinishReason::Stopped)) return;
    takeMeasurements(m, r);
    conversation_.replace(s.row, m);
    if (!busy()) {  // the strip too, unless the next answer is already on its way
        figures_.answerEnded(r);
        Q_EMIT performanceChanged();
    }
    saveCurrent();
}

void ChatController::onFailed(quint64 id, const QString& reason) {
    if (id != generation_) return;
    Message m = conversation_.at(answerRow_);
    m.streaming = false;
    m.error = reason;
    m.finish = QStringLiteral("failed");
    conversation_.replace(answerRow_, m);
    setStatus(QStringLiteral("The answer failed: %1").arg(reason), true);
    if (isContextOverflow(reason)) {
        contextOverflow_ = true;
        Q_EMIT statusChanged();
    }
    endAnswer(answerRow_);
}

}  // namespace mnemo::gui
