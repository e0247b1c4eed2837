// The saved conversations: one JSON file per conversation (<id>.json in the store's folder),
// written atomically (QSaveFile: a temporary file renamed over the old one), read at start, and
// listed for the conversation list (newest first, filtered by a search text).
//
// A file that cannot be read — not JSON, not a conversation, or a newer format version — is
// never overwritten or deleted: it is renamed aside (<id>.json.corrupt, <id>.json.newer-version)
// and a notice says why and where it went, so nothing a user wrote is lost.
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
    Q_INVOKABLE bool remove(const QString& id);
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
    void keepAside(const QString& path, const QString& suffix, const QString& why);
    void rebuildRows();  // sorts, applies the filter

    QString folder_;
    QList<Conversation> all_;
    QList<int> rows_;  // indices into all_ shown, newest first
    QString filter_;
    QStringList notices_;
};

}  // namespace mnemo::gui
