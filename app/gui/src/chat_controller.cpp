#include "chat_controller.hpp"

#include <QClipboard>
#include <QGuiApplication>
#include <QUuid>

#include "app/measure.hpp"
#include "conversation/code_blocks.hpp"
#include "conversation/conversation_export.hpp"
#include "local_path.hpp"

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
        if (id == generation_) setStatus(QStringLiteral("The server is reading the conversation: %1 / %2 tokens").arg(done).arg(total), false);
    });
    // The other controllers speak through the one status line.
    connect(&model_, &ModelController::statusMessage, this, &ChatController::setStatus);
    connect(&kb_, &KbController::statusMessage, this, &ChatController::setStatus);
    connect(&server_, &ServerController::statusMessage, this, &ChatController::setStatus);
    connect(&fastestDevice_, &FastestDeviceController::statusMessage, this, &ChatController::setStatus);
    connect(&model_, &ModelController::stopAnswer, this, &ChatController::stopCurrent);
    connect(&model_, &ModelController::modelReplaced, this, [this](const ModelInfo& info) { current_.model = info.modelDir; });
    connect(&model_, &ModelController::infoChanged, this, &ChatController::performanceChanged);
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

QString ChatController::performance() const {
    if (lastTokensPerSecond_ <= 0 && contextUsed_ == 0) return QStringLiteral("No answer yet");
    if (lastFromServer_)  // the server's decode rate; the first token as this app saw it, network included
        return QStringLiteral("%1 tokens/s on the server · first token %2 ms · %3 tokens in the conversation")
            .arg(lastTokensPerSecond_, 0, 'f', 1)
            .arg(lastFirstTokenMs_, 0, 'f', 0)
            .arg(contextUsed_);
    return QStringLiteral("%1 tokens/s · first token %2 ms · context %3 / %4 tokens · %5 in memory")
        .arg(lastTokensPerSecond_, 0, 'f', 1)
        .arg(lastFirstTokenMs_, 0, 'f', 0)
        .arg(contextUsed_)
        .arg(model_.info().contextLength)
        .arg(QString::fromStdString(app::format_bytes(model_.info().memoryBytes)));
}

void ChatController::setSystemPrompt(const QString& s) {
    if (s == current_.systemPrompt) return;
    current_.systemPrompt = s;
    Q_EMIT conversationChanged();
    saveCurrent();
}

void ChatController::setStatus(const QString& s, bool error) {
    status_ = s;
    statusIsError_ = error;
    Q_EMIT statusChanged();
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
    if (current_.title.isEmpty()) {
        current_.title = titleFrom(prompt);
        Q_EMIT conversationChanged();
    }
    saveCurrent();  // the prompt is kept even if the app ends before the answer does
    return startAnswer();
}

bool ChatController::regenerate() {
    const QList<Message>& ms = conversation_.messages();
    const int last = static_cast<int>(ms.size()) - 1;
    if (last < 0) {
        setStatus(QStringLiteral("There is no answer to regenerate"), true);
        return false;
    }
    stopCurrent();
    if (ms.at(last).role == QLatin1String("assistant")) conversation_.truncate(last);
    return startAnswer();
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
    Message m = conversation_.at(row);
    m.text = text.trimmed();
    conversation_.replace(row, m);
    conversation_.truncate(row + 1);  // the conversation continues from the edited message
    return startAnswer();
}

bool ChatController::startAnswer() {
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
    Message answer;
    answer.role = QStringLiteral("assistant");
    answer.streaming = true;
    answerRow_ = conversation_.append(answer);
    generation_ = ++nextId_;
    Q_EMIT busyChanged();
    if (model_.remote()) Q_EMIT requestRemoteGenerate(generation_, turns, settings_.sampling());
    else Q_EMIT requestGenerate(generation_, turns, settings_.sampling());
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
    generation_ = 0;
    answerRow_ = -1;
    Q_EMIT busyChanged();
    saveCurrent();
    Q_EMIT answerEnded(row);
}

void ChatController::onToken(quint64 id, const QString& piece) {
    if (id != generation_) return;
    conversation_.appendText(answerRow_, piece);
}

void ChatController::takeMeasurements(Message& m, const GenerationResult& r) {
    m.device = r.device;
    m.tokens = r.tokens;
    m.tokensPerSecond = r.tokensPerSecond;
    m.firstTokenSeconds = r.firstTokenSeconds;
    m.references = r.references;
    m.notice = r.kbNotice;
    if (!r.remote) kb_.update(r.kb);  // the local model's memory source; a server's are its own
    lastFromServer_ = r.remote;
    lastTokensPerSecond_ = r.tokensPerSecond;
    lastFirstTokenMs_ = r.firstTokenSeconds * 1000.0;
    contextUsed_ = r.contextUsed;
    Q_EMIT performanceChanged();
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
    endAnswer(answerRow_);
}

void ChatController::saveCurrent() {
    if (conversation_.count() == 0) return;  // an empty conversation is not worth a file
    current_.messages = conversation_.messages();
    for (Message& m : current_.messages) m.streaming = false;
    current_.updated = QDateTime::currentDateTimeUtc();
    const QString why = store_.save(current_);
    if (!why.isEmpty()) setStatus(QStringLiteral("The conversation could not be saved: %1").arg(why), true);
}

void ChatController::newConversation() {
    stopCurrent();
    current_ = Conversation{};
    current_.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    current_.created = current_.updated = QDateTime::currentDateTimeUtc();
    current_.model = model_.info().modelDir;
    conversation_.setMessages({});
    Q_EMIT conversationChanged();
}

bool ChatController::openConversation(const QString& id) {
    const std::optional<Conversation> c = store_.find(id);
    if (!c) {
        setStatus(QStringLiteral("There is no saved conversation %1").arg(id), true);
        return false;
    }
    stopCurrent();
    current_ = *c;
    conversation_.setMessages(c->messages);
    Q_EMIT conversationChanged();
    return true;
}

bool ChatController::deleteConversation(const QString& id) {
    if (!store_.remove(id)) {
        setStatus(QStringLiteral("The conversation could not be deleted"), true);
        return false;
    }
    if (id == current_.id) newConversation();
    return true;
}

bool ChatController::renameConversation(const QString& id, const QString& title) {
    if (id == current_.id) {
        current_.title = title.simplified();
        Q_EMIT conversationChanged();
        if (conversation_.count() == 0) return true;  // saved with its first message
    }
    const QString why = store_.rename(id, title);
    if (!why.isEmpty()) setStatus(why, true);
    return why.isEmpty();
}

void ChatController::restoreLatest() {
    const QString id = store_.idAt(0);
    if (!id.isEmpty()) openConversation(id);
    if (!notices().isEmpty()) setStatus(notices().join(QLatin1Char('\n')), true);
}

bool ChatController::exportConversation(const QString& pathOrUrl, const QString& format) {
    saveCurrent();
    Conversation c = current_;
    c.messages = conversation_.messages();
    const QString path = localPath(pathOrUrl);
    const QString why = mnemo::gui::exportConversation(c, path, format);
    if (why.isEmpty()) setStatus(QStringLiteral("Exported to %1").arg(path), false);
    else setStatus(why, true);
    return why.isEmpty();
}

QStringList ChatController::codeBlocks(const QString& markdown) const { return fencedCodeBlocks(markdown); }

void ChatController::copyToClipboard(const QString& text) {
    if (QClipboard* c = QGuiApplication::clipboard()) c->setText(text);
}

}  // namespace mnemo::gui
