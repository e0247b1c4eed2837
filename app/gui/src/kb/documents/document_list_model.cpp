#include "kb/documents/document_list_model.hpp"

namespace mnemo::gui {

namespace {

QString sizeText(const DocumentRow& r) {
    QString s = r.references == 1 ? QStringLiteral("1 reference") : QStringLiteral("%1 references").arg(r.references);
    if (r.tokens > 0) s += QStringLiteral(" · %1 tokens").arg(r.tokens);
    if (r.version > 0) s = QStringLiteral("v%1 · ").arg(r.version) + s;
    return s;
}

}  // namespace

QVariant DocumentListModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rows_.size()) return {};
    const DocumentRow& r = rows_[index.row()];
    switch (role) {
        case DocIdRole: return r.docId;
        case TitleRole: return r.title;
        case SourceRole: return r.source;
        case ReferencesRole: return r.references;
        case VersionRole: return r.version;
        case SizeTextRole: return sizeText(r);
        case HighlightedRole: return !highlighted_.isEmpty() && r.docId == highlighted_;
        default: return {};
    }
}

QHash<int, QByteArray> DocumentListModel::roleNames() const {
    return {{DocIdRole, "docId"},         {TitleRole, "title"},      {SourceRole, "source"},          {ReferencesRole, "references"},
            {VersionRole, "version"},     {SizeTextRole, "sizeText"}, {HighlightedRole, "marked"}};
}

void DocumentListModel::setRows(const QList<DocumentRow>& rows) {
    const bool countChanges = rows.size() != rows_.size();
    beginResetModel();
    rows_ = rows;
    endResetModel();
    if (countChanges) Q_EMIT countChanged();
}

int DocumentListModel::highlight(const QString& docId) {
    highlighted_ = docId;
    if (!rows_.isEmpty()) Q_EMIT dataChanged(index(0), index(static_cast<int>(rows_.size()) - 1), {HighlightedRole});
    for (int i = 0; i < rows_.size(); ++i)
        if (rows_[i].docId == docId) return i;
    return -1;
}

}  // namespace mnemo::gui
