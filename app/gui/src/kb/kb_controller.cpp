#include "kb/kb_controller.hpp"

#include "local_path.hpp"

namespace mnemo::gui {

KbController::KbController(ModelController& model, AppSettings& settings, QObject* parent)
    : QObject(parent), model_(model), settings_(settings), server_(settings.kbServer()) {
    connect(&model_, &ModelController::modelReplaced, this, [this](const ModelInfo& info) { set(info.kb); });
    connect(&model_, &ModelController::folderOpened, this, &KbController::readRetrieval);
    connect(
        model_.worker(), &ModelWorker::kbWarning, this,
        [this](const QString& message) { Q_EMIT statusMessage(QStringLiteral("Knowledge server: %1").arg(message), true); },
        Qt::QueuedConnection);
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
    r.retrieval = retrieval_;
    model_.reload(r, r.memoryFolder.isEmpty() ? QStringLiteral("Reloading the model without memories…")
                                              : QStringLiteral("Reloading the model with the memories of %1…").arg(r.memoryFolder));
}

void KbController::connectServer(const QString& url, const QString& tokenFileOrUrl, const QString& caFileOrUrl) {
    server_ = {url.trimmed(), localPath(tokenFileOrUrl.trimmed()), localPath(caFileOrUrl.trimmed())};
    settings_.setKbServer(server_);
    Q_EMIT changed();
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
    LoadRequest r = model_.lastLoad();
    r.memoryFolder.clear();
    r.kbUrl.clear();
    model_.reload(r, QStringLiteral("Reloading the model without memories…"));
}

}  // namespace mnemo::gui
