#include "conversation/conversation_store.hpp"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <algorithm>

#include "conversation/atomic_write.hpp"
#include "conversation/conversation_export.hpp"
#include "conversation/conversation_json.hpp"
#include "mnemo/io/file_read.hpp"

namespace mnemo::gui {

ConversationStore::ConversationStore(const QString& folder, QObject* parent)
    : QAbstractListModel(parent), folder_(folder) {}

int ConversationStore::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }

QVariant ConversationStore::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rows_.size()) return {};
    const Conversation& c = all_.at(rows_.at(index.row()));
    switch (role) {
        case Qt::DisplayRole:
        case TitleRole: return c.title;
        case IdRole: return c.id;
        case UpdatedRole: return c.updated.toLocalTime().toString(QStringLiteral("yyyy-MM-dd hh:mm"));
        case MessageCountRole: return static_cast<int>(c.messages.size());
        default: return {};
    }
}

QHash<int, QByteArray> ConversationStore::roleNames() const {
    return {{IdRole, "conversationId"}, {TitleRole, "title"}, {UpdatedRole, "updated"}, {MessageCountRole, "messageCount"}};
}

QString ConversationStore::pathOf(const QString& id) const { return QDir(folder_).filePath(id + QStringLiteral(".json")); }

void ConversationStore::keepAside(const QString& path, const QString& suffix, const QString& why) {
    // Never over another kept-aside file: .corrupt, .corrupt-2, ...
    QString target = path + suffix;
    for (int n = 2; QFile::exists(target); ++n) target = path + suffix + QLatin1Char('-') + QString::number(n);
    if (QFile::rename(path, target))
        notices_ << QStringLiteral("%1: %2; kept aside as %3").arg(path, why, QFileInfo(target).fileName());
    else
        notices_ << QStringLiteral("%1: %2; it could not be renamed aside either, so it is left as it is and not listed")
                        .arg(path, why);
}

void ConversationStore::reload() {
    beginResetModel();
    all_.clear();
    const int noticesBefore = static_cast<int>(notices_.size());
    QDir dir(folder_);
    if (!dir.exists() && !QDir().mkpath(folder_)) notices_ << QStringLiteral("cannot create the folder %1").arg(folder_);
    // Deletions not undone before the app ended (moveToDeleted): the user's choice, done now.
    for (const QString& name : dir.entryList({QStringLiteral("*.json.deleted")}, QDir::Files, QDir::Name))
        if (!QFile::remove(dir.filePath(name))) notices_ << QStringLiteral("%1: a deleted conversation could not be removed").arg(dir.filePath(name));
    // QDir::System too: a FIFO, a device node or a dangling symlink named *.json is reported, not
    // silently skipped.
    for (const QString& name : dir.entryList({QStringLiteral("*.json")}, QDir::Files | QDir::System, QDir::Name)) {
        const QString path = dir.filePath(name);
        QByteArray bytes;
        try {
            // Through the engine's capped reader: a symlink to /dev/zero or a FIFO never blocks or
            // fills memory, and a file over the cap is refused before a byte is buffered.
            const std::string text = read_file_capped(QFile::encodeName(path).toStdString(), kMaxDocumentFileBytes, "conversation");
            bytes = QByteArray(text.data(), static_cast<qsizetype>(text.size()));
        } catch (const std::exception& e) {
            // Not renamed aside: it is not a conversation that went wrong, and a FIFO or a link
            // someone made on purpose stays theirs.
            notices_ << QStringLiteral("%1; left as it is and not listed").arg(QString::fromLocal8Bit(e.what()));
            continue;
        }
        ReadProblem problem;
        std::optional<Conversation> c = conversationFromBytes(bytes, &problem);
        if (c && pathOf(c->id) != path) {
            c.reset();
            problem.reason = QStringLiteral("its id does not match its file name");
        }
        if (!c) {
            keepAside(path, problem.newerVersion ? QStringLiteral(".newer-version") : QStringLiteral(".corrupt"),
                      problem.reason);
            continue;
        }
        all_.push_back(std::move(*c));
    }
    rebuildRows();
    endResetModel();
    if (notices_.size() != noticesBefore) Q_EMIT noticesChanged();
}

void ConversationStore::clearNotices() {
    if (notices_.isEmpty()) return;
    notices_.clear();
    Q_EMIT noticesChanged();
}

std::optional<Conversation> ConversationStore::find(const QString& id) const {
    for (const Conversation& c : all_)
        if (c.id == id) return c;
    return std::nullopt;
}

QString ConversationStore::save(const Conversation& c) {
    if (c.id.isEmpty()) return QStringLiteral("a conversation without an id cannot be saved");
    if (!QDir().mkpath(folder_)) return QStringLiteral("cannot create the folder %1").arg(folder_);
    const QString why = writeFileAtomically(pathOf(c.id), conversationToBytes(c));
    if (!why.isEmpty()) return why;
    beginResetModel();
    auto it = std::find_if(all_.begin(), all_.end(), [&](const Conversation& x) { return x.id == c.id; });
    if (it != all_.end()) *it = c;
    else all_.push_back(c);
    rebuildRows();
    endResetModel();
    return {};
}

QString ConversationStore::idAt(int row) const {
    return row >= 0 && row < rows_.size() ? all_.at(rows_.at(row)).id : QString();
}

bool ConversationStore::remove(const QString& id) {
    auto it = std::find_if(all_.begin(), all_.end(), [&](const Conversation& x) { return x.id == id; });
    if (it == all_.end()) return false;
    if (QFile::exists(pathOf(id)) && !QFile::remove(pathOf(id))) return false;
    beginResetModel();
    all_.erase(it);
    rebuildRows();
    endResetModel();
    return true;
}

QString ConversationStore::moveToDeleted(const QString& id) {
    auto it = std::find_if(all_.begin(), all_.end(), [&](const Conversation& x) { return x.id == id; });
    if (it == all_.end()) return QStringLiteral("there is no conversation %1").arg(id);
    const QString path = pathOf(id), aside = deletedPathOf(id);
    if (QFile::exists(aside) && !QFile::remove(aside)) return QStringLiteral("%1 is in the way and cannot be removed").arg(aside);
    if (QFile::exists(path) && !QFile::rename(path, aside)) return QStringLiteral("%1 cannot be renamed to %2").arg(path, aside);
    beginResetModel();
    all_.erase(it);
    rebuildRows();
    endResetModel();
    return {};
}

QString ConversationStore::restoreDeleted(const QString& id) {
    const QString path = pathOf(id), aside = deletedPathOf(id);
    if (!QFile::exists(aside)) return QStringLiteral("%1 is gone: the conversation cannot be restored").arg(aside);
    if (QFile::exists(path)) return QStringLiteral("%1 exists: %2 is left as it is").arg(path, aside);
    if (!QFile::rename(aside, path)) return QStringLiteral("%1 cannot be renamed back to %2").arg(aside, path);
    QByteArray bytes;
    try {
        const std::string text = read_file_capped(QFile::encodeName(path).toStdString(), kMaxDocumentFileBytes, "conversation");
        bytes = QByteArray(text.data(), static_cast<qsizetype>(text.size()));
    } catch (const std::exception& e) {
        return QString::fromLocal8Bit(e.what());
    }
    ReadProblem problem;
    std::optional<Conversation> c = conversationFromBytes(bytes, &problem);
    if (!c) return QStringLiteral("%1: %2").arg(path, problem.reason);
    beginResetModel();
    all_.push_back(std::move(*c));
    rebuildRows();
    endResetModel();
    return {};
}

QString ConversationStore::purgeDeleted(const QString& id) {
    const QString aside = deletedPathOf(id);
    if (QFile::exists(aside) && !QFile::remove(aside)) return QStringLiteral("%1 cannot be removed").arg(aside);
    return {};
}

QString ConversationStore::rename(const QString& id, const QString& title) {
    std::optional<Conversation> c = find(id);
    if (!c) return QStringLiteral("no conversation %1").arg(id);
    if (title.simplified().isEmpty()) return QStringLiteral("a title cannot be empty");
    c->title = title.simplified();
    c->titleByUser = true;
    return save(*c);
}

QString ConversationStore::exportTo(const QString& id, const QString& path, const QString& format) const {
    const std::optional<Conversation> c = find(id);
    if (!c) return QStringLiteral("no conversation %1").arg(id);
    return exportConversation(*c, path, format);
}

void ConversationStore::setFilter(const QString& f) {
    if (f == filter_) return;
    beginResetModel();
    filter_ = f;
    rebuildRows();
    endResetModel();
    Q_EMIT filterChanged();
}

void ConversationStore::rebuildRows() {
    rows_.clear();
    const QString needle = filter_.trimmed();
    for (int i = 0; i < all_.size(); ++i) {
        const Conversation& c = all_.at(i);
        bool match = needle.isEmpty() || c.title.contains(needle, Qt::CaseInsensitive);
        for (const Message& m : c.messages) {
            if (match) break;
            match = m.text.contains(needle, Qt::CaseInsensitive);
        }
        if (match) rows_.push_back(i);
    }
    std::sort(rows_.begin(), rows_.end(), [&](int a, int b) { return all_.at(a).updated > all_.at(b).updated; });
}

}  // namespace mnemo::gui
