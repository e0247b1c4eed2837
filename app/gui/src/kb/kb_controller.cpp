#include "kb/kb_controller.hpp"

#include "local_path.hpp"

namespace mnemo::gui {

KbController::KbController(ModelController& model, AppSettings& settings, QObject* parent)
    : QObject(parent), model_(model), settings_(settings), server_(settings.kbServer()),
      documents_(new DocumentsController(model, *this, this)) {
    connect(&model_, &ModelController::modelReplaced, this, &KbController::onModelReplaced);
    connect(&model_, &ModelController::folderOpened, this, &KbController::readRetrieval);
    // The worker words the client's warnings (kbEventNotice); they are passed on as they are.
    connect(model_.worker(), &ModelWorker::kbNotice, this, &KbController::statusNotice, Qt::QueuedConnection);
    model_.setMemoryChoice([this](LoadRequest& r) { chooseFor(r); });
}

void KbController::onModelReplaced(const ModelInfo& info) {
    set(info.kb);
    // The newest load (an overtaken one is followed by it) went on without the memories asked for.
    if (info.kb.missing() && !model_.loading())
        Q_EMIT statusNotice({QStringLiteral("Loaded %1 on %2 without memories: %3.").arg(info.modelDir, info.deviceText(), kbMissingReason(info.kb)),
                             kbStatusDetails(info.kb), StatusSeverity::Warning});
}

void KbController::chooseFor(LoadRequest& r) const {
    // A bank is made for one model: only the folder the server was in use with gets it again.
    if (server_.url.isEmpty() || server_.modelDir.isEmpty() || server_.modelDir != r.modelDir) return;
    r.memoryFolder.clear();
    r.kbUrl = server_.url;
    r.kbTokenFile = server_.tokenFile;
    r.kbCaFile = server_.caFile;
    r.kbTimeoutMs = timeoutMs_;
    r.retrieval = server_.retrieval.isEmpty() ? retrieval_ : server_.retrieval;
}

void KbController::saveServer() {
    settings_.setKbServer(server_);
    Q_EMIT changed();
}

void KbController::set(const KbStatus& k) {
    status_ = k;
    Q_EMIT changed();
}

void KbController::update(const KbStatus& k) {
    if (k.state != status_.state || k.message != status_.message || k.failedChunks != status_.failedChunks) set(k);
}

void KbController::readRetrieval(const QString& modelDir) {
    const std::optional<QString> saved = settings_.retrieval(modelDir);
    if (!saved || *saved == retrieval_) return;  // a model seen for the first time keeps the current choice
    retrieval_ = *saved;
    Q_EMIT retrievalChanged();
}

void KbController::setRetrieval(const QString& retrieval) {
    if (retrieval == retrieval_) return;
    retrieval_ = retrieval;
    if (model_.loaded()) settings_.setRetrieval(model_.dir(), retrieval_);
    Q_EMIT retrievalChanged();
}

void KbController::useMemoryFolder(const QString& folderOrUrl) {
    if (model_.lastLoad().modelDir.isEmpty()) {
        Q_EMIT statusMessage(QStringLiteral("Open a model before its memories"), true);
        return;
    }
    LoadRequest r = model_.lastLoad();
    r.memoryFolder = localPath(folderOrUrl);
    r.kbUrl.clear();
    server_.modelDir.clear();  // the server is no longer in use: a restart does not connect it
    saveServer();
    r.retrieval = retrieval_;
    model_.reload(r, r.memoryFolder.isEmpty() ? QStringLiteral("Reloading the model without memories…")
                                              : QStringLiteral("Reloading the model with the memories of %1…").arg(r.memoryFolder));
}

void KbController::connectServer(const QString& url, const QString& tokenFileOrUrl, const QString& caFileOrUrl) {
    // In use with the loaded folder from now on, even when it does not answer yet: the next start
    // tries it again (and loads without memories, saying so, if it still does not answer).
    server_ = {url.trimmed(), localPath(tokenFileOrUrl.trimmed()), localPath(caFileOrUrl.trimmed()), model_.lastLoad().modelDir,
               retrieval_};
    if (server_.url.isEmpty()) server_.modelDir.clear();
    saveServer();
    if (server_.url.isEmpty()) {
        Q_EMIT statusMessage(QStringLiteral("Give the knowledge server's address (grpcs://HOST:PORT, or grpc://HOST:PORT on loopback)"), true);
        return;
    }
    if (model_.lastLoad().modelDir.isEmpty()) {
        Q_EMIT statusMessage(QStringLiteral("Open a model before connecting to its knowledge server"), true);
        return;
    }
    LoadRequest r = model_.lastLoad();
    r.memoryFolder.clear();
    r.kbUrl = server_.url;
    r.kbTokenFile = server_.tokenFile;
    r.kbCaFile = server_.caFile;
    r.kbTimeoutMs = timeoutMs_;
    r.retrieval = retrieval_;
    model_.reload(r, QStringLiteral("Connecting to %1 and reloading the model…").arg(server_.url));
}

void KbController::useNoMemories() {
    if (model_.lastLoad().modelDir.isEmpty()) return;
    server_.modelDir.clear();  // "none" is remembered: a restart does not connect the server
    saveServer();
    LoadRequest r = model_.lastLoad();
    r.memoryFolder.clear();
    r.kbUrl.clear();
    model_.reload(r, QStringLiteral("Reloading the model without memories…"));
}

}  // namespace mnemo::gui
