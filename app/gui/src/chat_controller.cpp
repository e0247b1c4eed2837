#include "chat_controller.hpp"

#include <QClipboard>
#include <QGuiApplication>
#include <QUrl>
#include <QUuid>

#include "app/measure.hpp"
#include "conversation/code_blocks.hpp"
#include "conversation/conversation_export.hpp"

namespace mnemo::gui {

namespace {

// A path from QML: FileDialog and FolderDialog give file: URLs.
QString localPath(const QString& pathOrUrl) {
    if (pathOrUrl.startsWith(QLatin1String("file:"))) return QUrl(pathOrUrl).toLocalFile();
    return pathOrUrl;
}

QString bytes(quint64 n) { return QString::fromStdString(app::format_bytes(n)); }

QString count(qint64 n) {
    if (n >= 1000000000) return QString::number(static_cast<double>(n) / 1e9, 'f', 2) + QStringLiteral(" B");
    if (n >= 1000000) return QString::number(static_cast<double>(n) / 1e6, 'f', 2) + QStringLiteral(" M");
    if (n >= 1000) return QString::number(static_cast<double>(n) / 1e3, 'f', 1) + QStringLiteral(" k");
    return QString::number(n);
}

}  // namespace

ChatController::ChatController(const QString& conversationsFolder, const QString& settingsFile, QObject* parent)
    : QObject(parent), store_(conversationsFolder), settings_(settingsFile), thread_(std::make_unique<WorkerThread>()) {
    connect(this, &ChatController::samplingChanged, this, &ChatController::writeModelSettings);
    connect(this, &ChatController::samplingChanged, this, [this] { compare_.setThreads(threads_); });
    kb_ = settings_.knowledgeServer();
    ModelWorker* w = thread_->worker();
    // The worker lives on its own thread: requests are queued to it, its reports are queued back.
    connect(this, &ChatController::requestLoad, w, &ModelWorker::load, Qt::QueuedConnection);
    connect(this, &ChatController::requestGenerate, w, &ModelWorker::generate, Qt::QueuedConnection);
    connect(w, &ModelWorker::loaded, this, &ChatController::onLoaded, Qt::QueuedConnection);
    connect(w, &ModelWorker::loadFailed, this, &ChatController::onLoadFailed, Qt::QueuedConnection);
    connect(w, &ModelWorker::token, this, &ChatController::onToken, Qt::QueuedConnection);
    connect(w, &ModelWorker::generationFinished, this, &ChatController::onFinished, Qt::QueuedConnection);
    connect(w, &ModelWorker::generationFailed, this, &ChatController::onFailed, Qt::QueuedConnection);
    connect(w, &ModelWorker::knowledgeWarning, this, &ChatController::onKnowledgeWarning, Qt::QueuedConnection);
    connect(&autoBench_, &AutoDeviceBenchmark::measured, this, &ChatController::onAutoMeasured);
    connect(&autoBench_, &AutoDeviceBenchmark::failed, this, &ChatController::onAutoFailed);
    connect(&autoBench_, &AutoDeviceBenchmark::progress, this, [this](const QString& text) { setStatus(text, false); });
    store_.reload();
    newConversation();
}

ChatController::~ChatController() {
    stopCurrent();
    thread_.reset();  // waits for the worker thread (at most one token, or a load in progress)
}

QString ChatController::modelLine() const {
    if (!loaded_) return loading() ? QStringLiteral("Loading the model…") : QStringLiteral("No model loaded");
    QString line = QStringLiteral("%1 · %2 parameters, %3 per token · %4 read per token · %5 in memory · %6 template · context %7 · %8")
                       .arg(info_.modelType, count(info_.totalParams), count(info_.activatedParams),
                            bytes(info_.bytesPerToken), bytes(info_.memoryBytes), info_.chatTemplate)
                       .arg(info_.contextLength)
                       .arg(info_.deviceText());
    if (!info_.memories.isEmpty()) line += QStringLiteral(" · memories: ") + info_.memories;
    return line;
}

QString ChatController::modelDetails() const {
    if (!loaded_) return modelLine();
    return QStringLiteral("%1\n%2\n%3").arg(info_.modelDir, info_.architecture, modelLine());
}

int ChatController::deviceRow() const {
    if (autoDevice_) return DeviceModel::kAutoRow;  // the model line names the device Auto chose
    return loaded_ ? devices_.rowOf(info_.backend, info_.device) : -1;
}

QString ChatController::autoText() const {
    if (!autoDevice_ || !autoChoice_.valid()) return {};
    return QStringLiteral("Auto chose %1:%2 (%3%4)")
        .arg(autoChoice_.backend)
        .arg(autoChoice_.device)
        .arg(autoChoice_.figuresText(), autoChoice_.fromCache ? QStringLiteral("; measured earlier, cached") : QString());
}

QString ChatController::autoCacheKey() const {
    QStringList parts{lastLoad_.modelDir};
    for (const DeviceRow& d : devices_.choosable()) parts << QStringLiteral("%1:%2 %3").arg(d.backend).arg(d.device).arg(d.label);
    return parts.join(QLatin1Char('\n'));
}

void ChatController::chooseAuto() {
    if (lastLoad_.modelDir.isEmpty()) {
        setStatus(QStringLiteral("Open a model first: Auto measures the loaded model on each device"), true);
        Q_EMIT modelInfoChanged();
        return;
    }
    const QList<DeviceMeasurement> cached = measurementsFromText(settings_.autoDeviceFigures(autoCacheKey()));
    if (!cached.isEmpty()) {
        AutoChoice c = pickFastest(cached);
        c.fromCache = true;
        applyAuto(c);
        return;
    }
    QList<DeviceMeasurement> devices;
    for (const DeviceRow& d : devices_.choosable()) devices << DeviceMeasurement{d.backend, d.device, d.label, 0.0, {}};
    stopCurrent();
    ++autoBenchmarkRuns_;
    setStatus(QStringLiteral("Auto: measuring the model on %1 devices…").arg(devices.size()), false);
    autoBench_.start(lastLoad_.modelDir, devices, threads_);
    Q_EMIT loadingChanged();
    Q_EMIT modelInfoChanged();
}

void ChatController::onAutoMeasured(const AutoChoice& choice) {
    Q_EMIT loadingChanged();
    if (!choice.valid()) {
        setStatus(QStringLiteral("Auto: no device could run the model (%1); the model stays where it was").arg(choice.figuresText()), true);
        Q_EMIT modelInfoChanged();
        return;
    }
    settings_.setAutoDeviceFigures(autoCacheKey(), measurementsToText(choice.measured));
    applyAuto(choice);
}

void ChatController::onAutoFailed(const QString& reason) {
    Q_EMIT loadingChanged();
    setStatus(QStringLiteral("Auto: the benchmark could not run: %1; the model stays where it was").arg(reason), true);
    Q_EMIT modelInfoChanged();
}

void ChatController::applyAuto(const AutoChoice& choice) {
    autoChoice_ = choice;
    autoDevice_ = true;
    devices_.setAutoDetail(autoText());
    if (loaded_ && info_.backend == choice.backend && info_.device == choice.device) {
        setStatus(QStringLiteral("%1; the model already runs there").arg(autoText()), false);
        Q_EMIT modelInfoChanged();
        return;
    }
    stopCurrent();
    LoadRequest r = lastLoad_;
    r.backend = choice.backend;
    r.device = choice.device;
    setStatus(QStringLiteral("%1; loading the model there…").arg(autoText()), false);
    requestLoadOf(r);
}

QString ChatController::performance() const {
    if (lastTokensPerSecond_ <= 0 && contextUsed_ == 0) return QStringLiteral("No answer yet");
    return QStringLiteral("%1 tokens/s · first token %2 ms · context %3 / %4 tokens · %5 in memory")
        .arg(lastTokensPerSecond_, 0, 'f', 1)
        .arg(lastFirstTokenMs_, 0, 'f', 0)
        .arg(contextUsed_)
        .arg(info_.contextLength)
        .arg(bytes(info_.memoryBytes));
}

SamplingSettings ChatController::sampling() const {
    SamplingSettings s;
    s.temperature = static_cast<float>(temperature_);
    s.topK = topK_;
    s.topP = static_cast<float>(topP_);
    s.minP = static_cast<float>(minP_);
    s.repeatPenalty = static_cast<float>(repeatPenalty_);
    s.maxTokens = maxTokens_;
    return s;
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

void ChatController::requestLoadOf(const LoadRequest& request) {
    LoadRequest r = request;
    r.threads = threads_;
    r.contextLength = contextLength_;
    r.kbTimeoutMs = kbTimeoutMs_;
    pendingLoad_ = ++nextId_;
    Q_EMIT loadingChanged();
    Q_EMIT modelInfoChanged();
    Q_EMIT requestLoad(pendingLoad_, r);
}

void ChatController::loadModel(const QString& dirOrUrl) {
    LoadRequest r = lastLoad_;  // the same device
    r.modelDir = localPath(dirOrUrl);
    if (r.modelDir != lastLoad_.modelDir && autoDevice_) {
        autoDevice_ = false;  // Auto measured another model: the device stays, chosen by hand now
        devices_.setAutoDetail({});
    }
    r.memoryFolder.clear();      // memories are made for one model
    r.kbUrl.clear();             // and so is a knowledge server's bank
    if (r.backend.isEmpty()) r.backend = QStringLiteral("cpu");
    readModelSettings(r.modelDir);  // its context length and threads apply to this load
    setStatus(QStringLiteral("Loading %1 on %2:%3…").arg(r.modelDir, r.backend).arg(r.device), false);
    requestLoadOf(r);
}

void ChatController::chooseDevice(int row) {
    if (row < 0 || row >= devices_.rowCount()) return;
    const DeviceRow& d = devices_.at(row);
    if (d.isAuto) {
        chooseAuto();
        return;
    }
    autoDevice_ = false;  // a device chosen by hand
    devices_.setAutoDetail({});
    if (!d.enabled) {
        setStatus(QStringLiteral("%1 cannot be chosen: %2").arg(d.label, d.detail), true);
        Q_EMIT modelInfoChanged();  // the picker goes back to the device in use
        return;
    }
    if (loaded_ && d.backend == info_.backend && d.device == info_.device) return;
    if (!loaded_ && lastLoad_.modelDir.isEmpty()) {
        lastLoad_.backend = d.backend;
        lastLoad_.device = d.device;
        return;
    }
    stopCurrent();  // an answer in progress ends here; the next one runs on the new device
    LoadRequest r = lastLoad_;
    r.backend = d.backend;
    r.device = d.device;
    setStatus(QStringLiteral("Loading the model on %1…").arg(d.label), false);
    requestLoadOf(r);
}

void ChatController::useMemoryFolder(const QString& folderOrUrl) {
    if (lastLoad_.modelDir.isEmpty()) {
        setStatus(QStringLiteral("Open a model before its memories"), true);
        return;
    }
    stopCurrent();
    LoadRequest r = lastLoad_;
    r.memoryFolder = localPath(folderOrUrl);
    r.kbUrl.clear();
    r.retrieval = retrieval_;
    setStatus(r.memoryFolder.isEmpty() ? QStringLiteral("Reloading the model without memories…")
                                       : QStringLiteral("Reloading the model with the memories of %1…").arg(r.memoryFolder),
              false);
    requestLoadOf(r);
}

void ChatController::connectKnowledgeServer(const QString& url, const QString& tokenFileOrUrl, const QString& caFileOrUrl) {
    kb_ = {url.trimmed(), localPath(tokenFileOrUrl.trimmed()), localPath(caFileOrUrl.trimmed())};
    settings_.setKnowledgeServer(kb_);
    Q_EMIT knowledgeChanged();
    if (kb_.url.isEmpty()) {
        setStatus(QStringLiteral("Give the knowledge server's address (grpcs://HOST:PORT, or grpc://HOST:PORT on loopback)"), true);
        return;
    }
    if (lastLoad_.modelDir.isEmpty()) {
        setStatus(QStringLiteral("Open a model before connecting to its knowledge server"), true);
        return;
    }
    stopCurrent();
    LoadRequest r = lastLoad_;
    r.memoryFolder.clear();
    r.kbUrl = kb_.url;
    r.kbTokenFile = kb_.tokenFile;
    r.kbCaFile = kb_.caFile;
    r.retrieval = retrieval_;
    setStatus(QStringLiteral("Connecting to %1 and reloading the model…").arg(kb_.url), false);
    requestLoadOf(r);
}

void ChatController::disconnectKnowledge() {
    if (lastLoad_.modelDir.isEmpty()) return;
    stopCurrent();
    LoadRequest r = lastLoad_;
    r.memoryFolder.clear();
    r.kbUrl.clear();
    setStatus(QStringLiteral("Reloading the model without memories…"), false);
    requestLoadOf(r);
}

void ChatController::reloadModel() {
    if (lastLoad_.modelDir.isEmpty()) {
        setStatus(QStringLiteral("No model is loaded"), true);
        return;
    }
    stopCurrent();
    setStatus(QStringLiteral("Reloading the model (context %1, threads %2)…")
                  .arg(contextLength_ > 0 ? QString::number(contextLength_) : QStringLiteral("default"),
                       threads_ > 0 ? QString::number(threads_) : QStringLiteral("default")),
              false);
    requestLoadOf(lastLoad_);
}

void ChatController::setKnowledge(const KnowledgeStatus& k) {
    knowledge_ = k;
    Q_EMIT knowledgeChanged();
}

void ChatController::onKnowledgeWarning(const QString& message) {
    setStatus(QStringLiteral("Knowledge server: %1").arg(message), true);
}

void ChatController::onLoaded(quint64 id, const ModelInfo& info) {
    // An earlier request that was overtaken by a newer one still replaced the worker's model:
    // the info is taken either way, but only the newest request ends the loading state.
    if (id != pendingLoad_) {
        info_ = info;
        loaded_ = true;
        setKnowledge(info.knowledge);
        Q_EMIT modelInfoChanged();
        return;
    }
    pendingLoad_ = 0;
    const bool switched = loaded_ && (info.backend != info_.backend || info.device != info_.device);
    info_ = info;
    loaded_ = true;
    lastLoad_.modelDir = info.modelDir;
    lastLoad_.backend = info.backend;
    lastLoad_.device = info.device;
    lastLoad_.memoryFolder = info.memoryFolder;
    lastLoad_.retrieval = info.retrieval;
    lastLoad_.kbUrl = info.kbUrl;
    lastLoad_.kbTokenFile = info.kbTokenFile;
    lastLoad_.kbCaFile = info.kbCaFile;
    setKnowledge(info.knowledge);
    if (!switched) readModelSettings(info.modelDir);
    rememberRecent(info.modelDir);
    current_.model = info.modelDir;
    setStatus(switched ? QStringLiteral("Now running on %1; the conversation goes on there%2")
                             .arg(info.deviceText(), autoDevice_ ? QStringLiteral(". ") + autoText() : QString())
                       : QStringLiteral("Loaded %1 on %2").arg(info.modelDir, info.deviceText()),
              false);
    // The chat goes on without the memories asked for, and says so (here, and under each answer).
    if (info.knowledge.missing())
        setStatus(QStringLiteral("Loaded %1 on %2, without memories. %3").arg(info.modelDir, info.deviceText(), knowledgeStatusText(info.knowledge)),
                  true);
    Q_EMIT loadingChanged();
    Q_EMIT modelInfoChanged();
    Q_EMIT performanceChanged();
}

void ChatController::onLoadFailed(quint64 id, const QString& reason, bool previousKept) {
    if (id != pendingLoad_) return;
    pendingLoad_ = 0;
    autoDevice_ = false;  // whatever Auto chose is not what runs
    setStatus(previousKept ? QStringLiteral("Could not load the model: %1. Still running on %2.").arg(reason, info_.deviceText())
                           : QStringLiteral("Could not load the model: %1").arg(reason),
              true);
    Q_EMIT loadingChanged();
    Q_EMIT modelInfoChanged();
}

bool ChatController::send(const QString& text) {
    const QString prompt = text.trimmed();
    if (prompt.isEmpty()) return false;
    if (!loaded_ && !loading()) {
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
    int last = static_cast<int>(ms.size()) - 1;
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
        turns.push_back({m.role, m.text});
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
    Q_EMIT requestGenerate(generation_, turns, sampling());
    return true;
}

void ChatController::stop() { stopCurrent(); }

void ChatController::stopCurrent() {
    if (generation_ == 0) return;
    // Directly, not queued: the worker is busy in its token loop and checks the flag per token.
    thread_->worker()->requestStop(generation_);
    // The stopped answer keeps the text that arrived; tokens still in flight are ignored (by id).
    // Its result, which follows at once, still gives it its measurements (onFinished).
    if (answerRow_ >= 0 && answerRow_ < conversation_.count()) {
        Message m = conversation_.at(answerRow_);
        m.streaming = false;
        m.finish = finishReasonText(FinishReason::Stopped);
        conversation_.replace(answerRow_, m);
        stopped_ = {generation_, answerRow_, current_.id};
    }
    const int row = answerRow_;
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

void ChatController::onFinished(quint64 id, const GenerationResult& r) {
    if (id == stopped_.generation) {
        takeStoppedMeasurements(r);
        return;
    }
    if (id != generation_) return;
    Message m = conversation_.at(answerRow_);
    m.text = r.text;  // the same as the pieces, which were streamed through the same decoder
    m.streaming = false;
    m.finish = finishReasonText(r.reason);
    m.device = r.device;
    m.tokens = r.tokens;
    m.tokensPerSecond = r.tokensPerSecond;
    m.firstTokenSeconds = r.firstTokenSeconds;
    m.recalls = r.recalls;
    m.notice = r.knowledgeNotice;
    conversation_.replace(answerRow_, m);
    if (r.knowledge.state != knowledge_.state || r.knowledge.message != knowledge_.message ||
        r.knowledge.failedChunks != knowledge_.failedChunks)
        setKnowledge(r.knowledge);
    lastTokensPerSecond_ = r.tokensPerSecond;
    lastFirstTokenMs_ = r.firstTokenSeconds * 1000.0;
    contextUsed_ = r.contextUsed;
    const int row = answerRow_;
    generation_ = 0;
    answerRow_ = -1;
    Q_EMIT busyChanged();
    Q_EMIT performanceChanged();
    saveCurrent();
    Q_EMIT answerEnded(row);
}

void ChatController::takeStoppedMeasurements(const GenerationResult& r) {
    const Stopped s = stopped_;
    stopped_ = {};
    // Only while the same conversation is open and the answer is still where it was.
    if (s.conversation != current_.id || s.row >= conversation_.count()) return;
    Message m = conversation_.at(s.row);
    if (m.role != QLatin1String("assistant") || m.finish != finishReasonText(FinishReason::Stopped)) return;
    m.device = r.device;
    m.tokens = r.tokens;
    m.tokensPerSecond = r.tokensPerSecond;
    m.firstTokenSeconds = r.firstTokenSeconds;
    m.recalls = r.recalls;
    m.notice = r.knowledgeNotice;
    conversation_.replace(s.row, m);
    setKnowledge(r.knowledge);
    lastTokensPerSecond_ = r.tokensPerSecond;
    lastFirstTokenMs_ = r.firstTokenSeconds * 1000.0;
    contextUsed_ = r.contextUsed;
    Q_EMIT performanceChanged();
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
    const int row = answerRow_;
    generation_ = 0;
    answerRow_ = -1;
    Q_EMIT busyChanged();
    saveCurrent();
    Q_EMIT answerEnded(row);
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
    current_.model = info_.modelDir;
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
    if (!store_.notices().isEmpty()) setStatus(store_.notices().join(QLatin1Char('\n')), true);
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

void ChatController::readModelSettings(const QString& modelDir) {
    const std::optional<ModelSettings> saved = settings_.model(modelDir);
    if (!saved) return;  // a model seen for the first time keeps the current settings
    readingSettings_ = true;  // not written back while being read
    temperature_ = saved->temperature;
    topK_ = saved->topK;
    topP_ = saved->topP;
    minP_ = saved->minP;
    repeatPenalty_ = saved->repeatPenalty;
    maxTokens_ = saved->maxTokens;
    retrieval_ = saved->retrieval;
    contextLength_ = saved->contextLength;
    threads_ = saved->threads;
    Q_EMIT samplingChanged();
    readingSettings_ = false;
}

void ChatController::writeModelSettings() {
    if (readingSettings_ || !loaded_) return;
    settings_.setModel(info_.modelDir, {temperature_, topK_, topP_, minP_, repeatPenalty_, maxTokens_, retrieval_, contextLength_, threads_});
}

void ChatController::rememberRecent(const QString& modelDir) {
    if (settings_.addRecent(modelDir)) Q_EMIT recentModelsChanged();
}

QStringList ChatController::codeBlocks(const QString& markdown) const { return fencedCodeBlocks(markdown); }

void ChatController::copyToClipboard(const QString& text) {
    if (QClipboard* c = QGuiApplication::clipboard()) c->setText(text);
}

}  // namespace mnemo::gui
