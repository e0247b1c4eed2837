// The saved conversations: one JSON file per conversation (<id>.json in the store's folder),
// written atomically (QSaveFile: a temporary file renamed over the old one), read at start, and
// listed for the conversation list (newest first, filtered by a search text).
//
// A file that cannot be read — not JSON, not a conversation, or a newer format version — is
// never overwritten or deleted: it is renamed aside (<id>.json.corrupt, <id>.json.newer-version)
// and a notice says why and where it went, so nothing a user wrote is lost. A deleted one can be
// taken back for a while (moveToDeleted).
#pragma once

#include <QAbstractListModel>
#include <QList>
#include <QStringList>
#include <optional>

#include "conversation/conversation.hpp"

namespace mnemo::gui {

class ConversationStore : public QAbstractListModel {
    Q_OBJECT
    Q_PROPERTY(QString filter READ filter WRITE setFilter NOTIFY filterChanged)
    Q_PROPERTY(QStringList notices READ notices NOTIFY noticesChanged)
public:
    enum Roles { IdRole = Qt::UserRole + 1, TitleRole, UpdatedRole, MessageCountRole };

    explicit ConversationStore(const QString& folder, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    QString folder() const { return folder_; }
    // Reads every <id>.json of the folder (the folder is made when missing).
    void reload();
    QStringList notices() const { return notices_; }
    void clearNotices();

    std::optional<Conversation> find(const QString& id) const;
    // Saves (adds or replaces) a conversation; returns the reason on failure, else "".
    QString save(const Conversation& c);

    Q_INVOKABLE QString idAt(int row) const;
    // Deletes at once, for good.
    Q_INVOKABLE bool remove(const QString& id);
    // Deletion that can be undone (ChatController's Undo): the file is renamed to
    // <id>.json.deleted — not listed, but nothing is gone — and the conversation leaves the list.
    // restoreDeleted() renames it back; purgeDeleted() removes it for good. A .deleted file left
    // by an app that ended inside the undo window is removed by the next reload(): the user asked
    // for the deletion and did not take it back. Each returns the reason on failure, else "".
    QString moveToDeleted(const QString& id);
    QString restoreDeleted(const QString& id);
    QString purgeDeleted(const QString& id);
    // A title typed by the user: it stays when the first prompt is edited (titleByUser).
    Q_INVOKABLE QString rename(const QString& id, const QString& title);
    // Writes conversation `id` to `path` as "markdown" or "json"; returns the reason on failure.
    Q_INVOKABLE QString exportTo(const QString& id, const QString& path, const QString& format) const;

    QString filter() const { return filter_; }
    void setFilter(const QString& f);

Q_SIGNALS:
    void filterChanged();
    void noticesChanged();

private:
    QString pathOf(const QString& id) const;
    QString deletedPathOf(const QString& id) const { return pathOf(id) + QStringLiteral(".deleted"); }
    void keepAside(const QString& path, const QString& suffix, const QString& why);
    void rebuildRows();  // sorts, applies the filter

    QString folder_;
    QList<Conversation> all_;
    QList<int> rows_;  // indices into all_ shown, newest first
    QString filter_;
    QStringList notices_;
};

}  // namespace mnemo::gui
