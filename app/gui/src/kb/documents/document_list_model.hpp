// The documents panel's list: one row per document of the memory folder or knowledge server in
// use (id, title, source, size in references, the server's version), each figure also written as
// text here so that the QML only shows it.
#pragma once

#include <QAbstractListModel>

#include "kb/documents/documents_types.hpp"

namespace mnemo::gui {

class DocumentListModel : public QAbstractListModel {
    Q_OBJECT
    Q_PROPERTY(int count READ count NOTIFY countChanged)
public:
    enum Role {
        DocIdRole = Qt::UserRole + 1,
        TitleRole,
        SourceRole,
        ReferencesRole,
        VersionRole,
        SizeTextRole,     // "3 references · 41 tokens", "v4 · 3 references"
        HighlightedRole,  // the document a reference was clicked for
    };

    using QAbstractListModel::QAbstractListModel;
    int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    int count() const { return static_cast<int>(rows_.size()); }
    const QList<DocumentRow>& rows() const { return rows_; }
    void setRows(const QList<DocumentRow>& rows);
    // Marks the row of `docId` (none: empty); returns its row, or -1 when the list has none.
    int highlight(const QString& docId);
    QString highlighted() const { return highlighted_; }

Q_SIGNALS:
    void countChanged();

private:
    QList<DocumentRow> rows_;
    QString highlighted_;
};

}  // namespace mnemo::gui
