#include "conversation/conversation_model.hpp"

#include <QVariantMap>

#include "conversation/markdown_html.hpp"
#include "conversation/message_blocks.hpp"

namespace mnemo::gui {

ConversationModel::ConversationModel(QObject* parent) : QAbstractListModel(parent) {}

int ConversationModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : count(); }

QVariant ConversationModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= messages_.size()) return {};
    const Message& m = messages_.at(index.row());
    switch (role) {
        case Qt::DisplayRole:
        case TextRole: return m.text;
        case RoleRole: return m.role;
        case StreamingRole: return m.streaming;
        case FinishRole: return m.finish;
        case ErrorRole: return m.error;
        case DeviceRole: return m.device;
        case NoticeRole: return m.notice;
        case HtmlRole: return markdownToHtml(m.text);
        case SeedRole: return m.seed;
        case VersionRole: return m.version;
        case VersionCountRole: return static_cast<int>(m.alternatives.size()) + 1;
        case DroppedMessagesRole: return m.droppedMessages;
        case BlocksRole: return messageBlocksForView(m.text);
        case TokensRole: return m.tokens;
        case TokensPerSecondRole: return m.tokensPerSecond;
        case FirstTokenMsRole: return m.firstTokenSeconds * 1000.0;
        case ReferenceCountRole: return static_cast<int>(m.references.size());
        case ReferencesRole: {
            QVariantList list;
            for (const RetrievedReference& r : m.references)
                list.push_back(QVariantMap{{"chunk", r.chunk},
                                           {"id", r.id},
                                           {"text", QString::fromStdString(r.text)},
                                           {"title", QString::fromStdString(r.title)},
                                           {"source", QString::fromStdString(r.source)},
                                           {"docId", QString::fromStdString(r.doc_id)},
                                           {"docVersion", static_cast<qulonglong>(r.doc_version)},
                                           {"score", r.has_score ? QVariant(static_cast<double>(r.score)) : QVariant()}});
            return list;
        }
        default: return {};
    }
}

QHash<int, QByteArray> ConversationModel::roleNames() const {
    return {{RoleRole, "role"},           {TextRole, "text"},
            {StreamingRole, "streaming"}, {FinishRole, "finish"},
            {ErrorRole, "error"},         {DeviceRole, "device"}, {NoticeRole, "notice"},
            {TokensRole, "tokens"},       {TokensPerSecondRole, "tokensPerSecond"},
            {FirstTokenMsRole, "firstTokenMs"}, {ReferencesRole, "references"},
            {ReferenceCountRole, "referenceCount"}, {HtmlRole, "html"}, {BlocksRole, "blocks"},
            {SeedRole, "seed"}, {VersionRole, "version"}, {VersionCountRole, "versionCount"},
            {DroppedMessagesRole, "droppedMessages"}};
}

void ConversationModel::setMessages(const QList<Message>& messages) {
    beginResetModel();
    messages_ = messages;
    endResetModel();
    Q_EMIT countChanged();
}

int ConversationModel::append(const Message& m) {
    const int row = count();
    beginInsertRows({}, row, row);
    messages_.push_back(m);
    endInsertRows();
    Q_EMIT countChanged();
    return row;
}

void ConversationModel::appendText(int row, const QString& piece) {
    if (row < 0 || row >= count()) return;
    messages_[row].text += piece;
    const QModelIndex i = index(row);
    Q_EMIT dataChanged(i, i, {TextRole, HtmlRole, BlocksRole});
}

void ConversationModel::replace(int row, const Message& m) {
    if (row < 0 || row >= count()) return;
    messages_[row] = m;
    const QModelIndex i = index(row);
    Q_EMIT dataChanged(i, i);
}

void ConversationModel::truncate(int rows) {
    if (rows < 0 || rows >= count()) return;
    beginRemoveRows({}, rows, count() - 1);
    messages_.erase(messages_.begin() + rows, messages_.end());
    endRemoveRows();
    Q_EMIT countChanged();
}

}  // namespace mnemo::gui
