#include "kb/documents/documents_controller.hpp"

#include <QCryptographicHash>
#include <cmath>
#include <QDesktopServices>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <QUrl>

#include "engine/kb_status.hpp"
#include "kb/kb_controller.hpp"
#include "local_path.hpp"
#include "model/model_controller.hpp"

namespace mnemo::gui {

namespace {

// What a target is, to notice that the chat's memories moved elsewhere.
QString keyOf(const std::optional<DocumentsTarget>& t) {
    if (!t) return {};
    return t->server ? QStringLiteral("server:") + t->url : QStringLiteral("folder:") + t->folder;
}

QString seconds(double s) {
    if (s < 90) return QStringLiteral("%1 s").arg(qRound(s));
    if (s < 5400) return QStringLiteral("%1 min").arg(qRound(s / 60));
    return QStringLiteral("%1 h %2 min").arg(static_cast<int>(s / 3600)).arg(qRound(std::fmod(s, 3600) / 60));
}

}  // namespace

DocumentsController::DocumentsController(ModelController& model, KbController& kb, QObject* parent)
    : QObject(parent),
      model_(model),
      kb_(kb),
      memoriesRoot_(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/memories")),
      thread_(std::make_unique<DocumentsThread>()) {
    registerDocumentsTypes();
    DocumentsWorker* w = thread_->worker();
    connect(this, &DocumentsController::requestAdd, w, &DocumentsWorker::add, Qt::QueuedConnection);
    connect(this, &DocumentsController::requestRemove, w, &DocumentsWorker::remove, Qt::QueuedConnection);
    connect(this, &DocumentsController::requestList, w, &DocumentsWorker::list, Qt::QueuedConnection);
    connect(w, &DocumentsWorker::progress, this, &DocumentsController::onProgress, Qt::QueuedConnection);
    connect(w, &DocumentsWorker::finished, this, &DocumentsController::onFinished, Qt::QueuedConnection);
    connect(w, &DocumentsWorker::failed, this, &DocumentsController::onFailed, Qt::QueuedConnection);
    connect(this, &DocumentsController::statusNotice, &kb_, &KbController::statusNotice);
    // Another model, device or memory source: the list is of what the chat reads now.
    connect(&model_, &ModelController::infoChanged, this, [this] {
        Q_EMIT whereChanged();
        const QString key = keyOf(target());
        if (key != lastTargetKey_) {
            list_.setRows({});
            refresh();
        }
    });
}

DocumentsController::~DocumentsController() = default;

void DocumentsController::setMemoriesRoot(const QString& root) {
    if (root == memoriesRoot_) return;
    memoriesRoot_ = root;
    Q_EMIT whereChanged();
}

QString DocumentsController::newFolderFor(const QString& modelDir) const {
    // The model's name, and a hash of its full path: two models with one folder name (two
    // checkpoints called "model") get folders of their own.
    const QFileInfo info(QDir::cleanPath(QFileInfo(modelDir).absoluteFilePath()));
    const QByteArray hash = QCryptographicHash::hash(info.absoluteFilePath().toUtf8(), QCryptographicHash::Sha256).toHex().left(8);
    return QDir(memoriesRoot_).filePath(info.completeBaseName() + QLatin1Char('-') + QString::fromLatin1(hash));
}

std::optional<DocumentsTarget> DocumentsController::target() const {
    if (!model_.loaded() || model_.remote()) return std::nullopt;
    const ModelInfo& info = model_.info();
    const LoadRequest& l = model_.lastLoad();
    DocumentsTarget t;
    t.modelDir = l.modelDir;
    t.backend = l.backend;
    t.device = l.device;
    t.threads = l.threads;
    if (!info.kbUrl.isEmpty()) {
        t.server = true;
        t.url = info.kbUrl;
        t.tokenFile = info.kbTokenFile;
        t.caFile = info.kbCaFile;
    } else {
        t.folder = info.memoryFolder.isEmpty() ? newFolderFor(l.modelDir) : info.memoryFolder;
    }
    return t;
}

QString DocumentsController::where() const {
    const std::optional<DocumentsTarget> t = target();
    if (!t) return model_.remote() ? QStringLiteral("The chat answers from a server (mnemo serve): choose a device of this machine to add documents")
                                   : QStringLiteral("Open a model before adding documents");
    if (t->server)
        return QStringLiteral("Into the knowledge server %1, which memorizes them with its model (the token file needs the admin scope)").arg(t->url);
    if (model_.info().memoryFolder.isEmpty())
        return QStringLiteral("Into a new memory folder for this model, %1, used from then on").arg(t->folder);
    return QStringLiteral("Into the memory folder %1, memorized here with this model").arg(t->folder);
}

bool DocumentsController::server() const {
    const std::optional<DocumentsTarget> t = target();
    return t && t->server;
}

double DocumentsController::progress() const {
    if (progress_.total <= 0) return -1;
    return static_cast<double>(progress_.done) / static_cast<double>(progress_.total);
}

QString DocumentsController::progressText() const {
    if (!adding()) return {};
    if (progress_.total <= 0)
        return progress_.stage == QLatin1String("reading") ? QStringLiteral("Reading the documents…")
                                                           : QStringLiteral("%1…").arg(progress_.stage);
    QString s = QStringLiteral("%1 / %2 references").arg(progress_.done).arg(progress_.total);
    if (progress_.rate > 0) s += QStringLiteral(" · %1 references/s").arg(progress_.rate, 0, 'f', 1);
    if (progress_.etaSeconds >= 0 && progress_.done < progress_.total) s += QStringLiteral(" · %1 left").arg(seconds(progress_.etaSeconds));
    if (!progress_.stage.isEmpty() && progress_.stage != QLatin1String("memorizing")) s += QStringLiteral(" · ") + progress_.stage;
    return s;
}

void DocumentsController::say(const QString& message, bool error) {
    message_ = message;
    messageIsError_ = error;
    Q_EMIT messageChanged();
    if (!message.isEmpty()) Q_EMIT statusNotice({message, {}, error ? StatusSeverity::Error : StatusSeverity::Info});
}

void DocumentsController::sayServerFailure(const DocumentsTarget& t, const QString& what, const QString& reason, StatusSeverity severity) {
    message_ = QStringLiteral("Knowledge server %1: %2 (%3)").arg(kbServerName(t.url), what, kbProblemOrError(reason));
    messageIsError_ = severity == StatusSeverity::Error;
    Q_EMIT messageChanged();
    Q_EMIT statusNotice({message_, reason, severity});
}

bool DocumentsController::start(bool isAdd, const QString& starting) {
    if (busy()) {
        say(QStringLiteral("Wait for the job in progress to end (or cancel it)"), true);
        return false;
    }
    const std::optional<DocumentsTarget> t = target();
    if (!t) {
        say(where(), true);
        return false;
    }
    jobTarget_ = *t;
    job_ = ++nextId_;
    jobIsAdd_ = isAdd;
    progress_ = {};
    if (!starting.isEmpty()) say(starting, false);  // a listing keeps the last job's message
    Q_EMIT busyChanged();
    Q_EMIT progressChanged();
    Q_EMIT whereChanged();
    return true;
}

void DocumentsController::add(const QVariantList& pathsOrUrls) {
    QStringList paths;
    for (const QVariant& v : pathsOrUrls) {
        const QString p = localPath(v.toUrl().isLocalFile() ? v.toUrl().toString() : v.toString()).trimmed();
        if (!p.isEmpty()) paths << p;
    }
    if (paths.isEmpty()) {
        say(QStringLiteral("Choose .txt or .md files, a folder of them, or a .jsonl file"), true);
        return;
    }
    if (!start(true, QStringLiteral("Adding %1…").arg(paths.join(QStringLiteral(", "))))) return;
    Q_EMIT requestAdd(job_, jobTarget_, paths, QString());
}

void DocumentsController::replace(const QString& docId, const QString& pathOrUrl) {
    const QString path = localPath(pathOrUrl).trimmed();
    if (docId.isEmpty() || path.isEmpty()) {
        say(QStringLiteral("Choose the file that replaces the document"), true);
        return;
    }
    if (!start(true, QStringLiteral("Replacing %1 with %2…").arg(docId, path))) return;
    Q_EMIT requestAdd(job_, jobTarget_, {path}, docId);
}

void DocumentsController::remove(const QString& docId) {
    if (!start(false, QStringLiteral("Deleting %1…").arg(docId))) return;
    Q_EMIT requestRemove(job_, jobTarget_, {docId});
}

void DocumentsController::refresh() {
    // A listing is no job: it does not block adding (the worker takes requests in order, so an
    // add asked for meanwhile runs after it and its own list is the newer one).
    const std::optional<DocumentsTarget> t = target();
    lastTargetKey_ = keyOf(t);
    if (!t) {
        list_.setRows({});
        return;
    }
    // A server the chat already knows is not answering has no list to give: the panel says why,
    // and the status line keeps the chat's own word on the server (no second warning).
    if (t->server && kb_.state() == QLatin1String("unreachable")) {
        list_.setRows({});
        message_ = kb_.text();
        messageIsError_ = false;
        Q_EMIT messageChanged();
        return;
    }
    listJob_ = ++nextId_;
    Q_EMIT requestList(listJob_, *t);
}

void DocumentsController::cancel() {
    if (job_ != 0) thread_->worker()->requestStop(job_);
}

void DocumentsController::onProgress(quint64 id, const DocumentsProgress& p) {
    if (id != job_) return;
    progress_ = p;
    Q_EMIT progressChanged();
}

void DocumentsController::onFinished(quint64 id, const DocumentsOutcome& outcome) {
    if (id == listJob_) {
        listJob_ = 0;
        list_.setRows(outcome.documents);
        setHighlightedRow(list_.highlight(list_.highlighted()));
        return;
    }
    if (id != job_) return;
    const DocumentsTarget t = jobTarget_;
    lastTargetKey_ = keyOf(t);
    list_.setRows(outcome.documents);
    setHighlightedRow(list_.highlight(list_.highlighted()));
    endJob(outcome.message, false);
    // The chat reads a changed folder from the next answer on: the model is reloaded with it (and
    // a folder made just now is attached) once no answer is in progress (the chat decides when:
    // memoryFolderChanged). A server serves its new bank by itself.
    if (outcome.changed && !t.server) Q_EMIT memoryFolderChanged(t.folder);
}

void DocumentsController::onFailed(quint64 id, const QString& reason, bool cancelled) {
    if (id == listJob_) {
        listJob_ = 0;
        list_.setRows({});
        // A server that does not answer is the knowledge server's state (a warning the chat
        // already shows in words), not an error of something the user asked for.
        const std::optional<DocumentsTarget> t = target();
        if (t && t->server)
            sayServerFailure(*t, QStringLiteral("the documents could not be listed"), reason, StatusSeverity::Warning);
        else
            say(reason, true);
        return;
    }
    if (id != job_) return;
    // The worker's own words for a token without the admin scope say what to do; any other
    // failure of the server is said in words, its text kept as the details.
    if (jobTarget_.server && !cancelled && !reason.contains(QLatin1String("admin scope"))) {
        endJob({}, true);
        sayServerFailure(jobTarget_, QStringLiteral("the documents were not changed"), reason, StatusSeverity::Error);
        return;
    }
    endJob(reason, !cancelled);
}

void DocumentsController::endJob(const QString& message, bool error) {
    job_ = 0;
    progress_ = {};
    Q_EMIT progressChanged();
    Q_EMIT busyChanged();
    Q_EMIT whereChanged();
    if (!message.isEmpty()) say(message, error);  // a listing keeps the last job's message
    Q_EMIT jobEnded();
}

void DocumentsController::setHighlightedRow(int row) {
    if (row == highlightedRow_) return;
    highlightedRow_ = row;
    Q_EMIT highlightedRowChanged();
}

void DocumentsController::showDocument(const QString& docId) {
    setHighlightedRow(list_.highlight(docId));
    // The list may not be read yet: it is read now, and the mark kept for it.
    if (list_.count() == 0 && listJob_ == 0) refresh();
    Q_EMIT showRequested(docId);
}

bool DocumentsController::isLocalFile(const QString& source) const {
    if (source.isEmpty()) return false;
    const QFileInfo f(localPath(source));
    return f.isAbsolute() && f.isFile();
}

bool DocumentsController::openSource(const QString& source) const {
    if (!isLocalFile(source)) return false;
    return QDesktopServices::openUrl(QUrl::fromLocalFile(localPath(source)));
}

}  // namespace mnemo::gui
