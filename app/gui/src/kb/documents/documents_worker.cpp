#include "kb/documents/documents_worker.hpp"

#include <filesystem>

#include "app/folder_documents.hpp"
#include "app/memorize.hpp"
#include "mnemo/error.hpp"
#include "mnemo/kb/kb_admin.hpp"
#include "mnemo/kb/kb_source.hpp"
#include "mnemo/session/session.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::gui {

namespace {

std::string utf8(const QString& s) { return s.toUtf8().toStdString(); }
QString qs(const std::string& s) { return QString::fromStdString(s); }

std::vector<std::string> utf8List(const QStringList& l) {
    std::vector<std::string> out;
    for (const QString& s : l) out.push_back(utf8(s));
    return out;
}

// Documents read from `paths`; with `replaceDocId` the one document they give takes that id.
std::vector<app::CorpusDocument> readDocuments(const QStringList& paths, const QString& replaceDocId) {
    std::vector<app::CorpusDocument> docs = app::read_documents(utf8List(paths));
    if (!replaceDocId.isEmpty()) {
        if (docs.size() != 1)
            throw Error("replacing document '" + utf8(replaceDocId) + "' needs one document, and " + utf8(paths.join(QStringLiteral(", "))) +
                        " holds " + std::to_string(docs.size()));
        docs[0].doc_id = utf8(replaceDocId);
    }
    return docs;
}

KbAdminConnection connectionOf(const DocumentsTarget& t) {
    KbAdminConnection c;
    c.url = utf8(t.url);
    if (!t.tokenFile.isEmpty()) c.token = read_kb_token(utf8(t.tokenFile));
    c.ca_file = utf8(t.caFile);
    c.timeout_ms = t.timeoutMs;
    return c;
}

// A server's refusal of a token without the admin scope, said in the words of the panel.
[[noreturn]] void rethrowServerError(const std::exception& e, const DocumentsTarget& t) {
    const std::string what = e.what();
    if (what.find("PERMISSION_DENIED") != std::string::npos)
        throw Error(what + " — adding or deleting documents needs a token with the admin scope (mnemo-kb token new --scope admin); " +
                    (t.tokenFile.isEmpty() ? std::string("no token file is set") : "the token in " + utf8(t.tokenFile) + " has not"));
    throw Error(what);
}

// A server's documents listed at most (pages of 1024): a list for a person to scroll, not an export.
constexpr size_t kMaxListed = 20000;

QString plural(qint64 n, const char* one, const char* many) {
    return QStringLiteral("%1 %2").arg(n).arg(QString::fromLatin1(n == 1 ? one : many));
}

}  // namespace

DocumentsWorker::DocumentsWorker() { registerDocumentsTypes(); }

QList<DocumentRow> DocumentsWorker::documentsOf(const DocumentsTarget& t) const {
    QList<DocumentRow> rows;
    if (t.server) {
        for (const KbDocumentInfo& d : kb_list_documents(connectionOf(t), kMaxListed))
            rows.push_back({qs(d.doc_id), qs(d.title), qs(d.source), static_cast<qint64>(d.references), 0, d.version});
        return rows;
    }
    std::error_code ec;
    if (t.folder.isEmpty() || !std::filesystem::exists(utf8(t.folder), ec)) return rows;  // nothing added yet
    for (const app::FolderDocument& d : app::list_folder_documents(utf8(t.folder)))
        rows.push_back({qs(d.doc_id), qs(d.title), qs(d.source), static_cast<qint64>(d.references), static_cast<qint64>(d.tokens), 0});
    return rows;
}

DocumentsOutcome DocumentsWorker::addLocal(quint64 id, const DocumentsTarget& t, const QStringList& paths, const QString& replaceDocId) {
    Q_EMIT progress(id, {0, 0, 0, -1, QStringLiteral("reading")});
    const std::vector<app::CorpusDocument> docs = readDocuments(paths, replaceDocId);
    const std::string folder = utf8(t.folder);
    // The chat's model, on the chat's device, in a session of its own: the chat's session is busy
    // answering on its own thread, and memories must be written by the model that reads them.
    SessionOptions o;
    o.model_dir = utf8(t.modelDir);
    o.backend = utf8(t.backend);
    o.device = t.device;
    o.n_threads = t.threads;
    o.cache_dtype = MNEMO_DTYPE_F16;
    const std::unique_ptr<Session> session = Session::open(o);
    const std::unique_ptr<Tokenizer> tok = load_tokenizer(o.model_dir);
    std::error_code ec;
    app::MemorizeOptions m;
    m.write = std::filesystem::exists(folder, ec) ? app::FolderWrite::Update : app::FolderWrite::Create;
    m.cancel = cancellation_.flag();
    m.progress = [&](const app::MemorizeProgress& p) {
        Q_EMIT progress(id, {static_cast<qint64>(p.references_done), static_cast<qint64>(p.references_total), p.references_per_second(),
                             p.eta_seconds(), p.references_done == p.references_total ? QStringLiteral("writing") : QStringLiteral("memorizing")});
    };
    if (m.write == app::FolderWrite::Create) std::filesystem::create_directories(std::filesystem::path(folder).parent_path(), ec);
    const app::MemorizeResult r = app::memorize_documents(*session, *tok, docs, folder, m);
    DocumentsOutcome out;
    out.changed = true;
    out.message = QStringLiteral("Memorized %1 (%2, %3 references/s) into %4")
                      .arg(plural(static_cast<qint64>(r.documents), "document", "documents"),
                           plural(static_cast<qint64>(r.references), "reference", "references"))
                      .arg(r.seconds > 0 ? static_cast<double>(r.references) / r.seconds : 0.0, 0, 'f', 1)
                      .arg(t.folder);
    if (r.replaced_documents > 0) out.message += QStringLiteral("; %1 replaced").arg(plural(static_cast<qint64>(r.replaced_documents), "document", "documents"));
    out.documents = documentsOf(t);
    return out;
}

DocumentsOutcome DocumentsWorker::addServer(quint64 id, const DocumentsTarget& t, const QStringList& paths, const QString& replaceDocId) {
    Q_EMIT progress(id, {0, 0, 0, -1, QStringLiteral("reading")});
    std::vector<KbAddDocument> docs;
    for (app::CorpusDocument& d : readDocuments(paths, replaceDocId))
        docs.push_back({std::move(d.doc_id), std::move(d.title), std::move(d.source), std::move(d.text), !d.title_given});
    const KbAdminConnection c = connectionOf(t);
    KbAddResult r;
    try {
        r = kb_add_documents(
            c, docs,
            [&](const KbAddProgress& p) {
                const double rate = p.references_per_second;
                const double eta = rate > 0 && p.references_total >= p.references_done
                                       ? static_cast<double>(p.references_total - p.references_done) / rate
                                       : -1;
                Q_EMIT progress(id, {static_cast<qint64>(p.references_done), static_cast<qint64>(p.references_total), rate, eta, qs(p.stage)});
            },
            cancellation_.flag());
    } catch (const std::exception& e) {
        if (cancellation_.flag()->load()) throw Cancelled();
        rethrowServerError(e, t);
    }
    DocumentsOutcome out;
    out.message = QStringLiteral("%1 added to %2 (%3); it now serves bank version %4")
                      .arg(plural(static_cast<qint64>(r.documents), "document", "documents"), t.url,
                           plural(static_cast<qint64>(r.references), "reference", "references"))
                      .arg(r.bank_version);
    if (r.replaced_documents > 0) out.message += QStringLiteral("; %1 replaced").arg(plural(static_cast<qint64>(r.replaced_documents), "document", "documents"));
    for (const std::string& n : r.notes) out.message += QStringLiteral(". Note: ") + qs(n);
    out.documents = documentsOf(t);
    return out;
}

void DocumentsWorker::add(quint64 id, DocumentsTarget target, QStringList paths, QString replaceDocId) {
    RunCancellation::Run run(cancellation_, id);
    if (run.stoppedBeforeStart()) {
        Q_EMIT failed(id, QStringLiteral("Cancelled before it began"), true);
        return;
    }
    try {
        Q_EMIT finished(id, target.server ? addServer(id, target, paths, replaceDocId) : addLocal(id, target, paths, replaceDocId));
    } catch (const Cancelled&) {
        Q_EMIT failed(id, QStringLiteral("Cancelled: %1 is as it was").arg(target.describe()), true);
    } catch (const std::exception& e) {
        Q_EMIT failed(id, QString::fromStdString(e.what()), false);
    }
}

void DocumentsWorker::remove(quint64 id, DocumentsTarget target, QStringList docIds) {
    RunCancellation::Run run(cancellation_, id);
    try {
        DocumentsOutcome out;
        out.changed = true;
        if (target.server) {
            uint64_t version = 0;
            try {
                version = kb_delete_documents(connectionOf(target), utf8List(docIds));
            } catch (const std::exception& e) {
                rethrowServerError(e, target);
            }
            out.message = QStringLiteral("Deleted %1 from %2; it now serves bank version %3")
                              .arg(docIds.join(QStringLiteral(", ")), target.url)
                              .arg(version);
        } else {
            const app::RemovedDocuments r = app::remove_folder_documents(utf8(target.folder), utf8List(docIds));
            out.message = QStringLiteral("Deleted %1 (%2) from %3")
                              .arg(docIds.join(QStringLiteral(", ")), plural(static_cast<qint64>(r.references), "reference", "references"), target.folder);
        }
        out.documents = documentsOf(target);
        Q_EMIT finished(id, out);
    } catch (const std::exception& e) {
        Q_EMIT failed(id, QString::fromStdString(e.what()), false);
    }
}

void DocumentsWorker::list(quint64 id, DocumentsTarget target) {
    RunCancellation::Run run(cancellation_, id);
    try {
        DocumentsOutcome out;
        out.documents = documentsOf(target);
        Q_EMIT finished(id, out);
    } catch (const std::exception& e) {
        Q_EMIT failed(id, QString::fromStdString(e.what()), false);
    }
}

}  // namespace mnemo::gui
