// The messages of the open conversation, for the chat view. ChatController changes it (a prompt,
// tokens arriving, an answer's result); QML only reads it.
#pragma once

#include <QAbstractListModel>
#include <QList>

#include "conversation/conversation.hpp"

namespace mnemo::gui {

class ConversationModel : public QAbstractListModel {
    Q_OBJECT
    Q_PROPERTY(int count READ count NOTIFY countChanged)
public:
    enum Roles {
        RoleRole = Qt::UserRole + 1,  // "user" or "assistant"
        TextRole,
        StreamingRole,
        FinishRole,
        ErrorRole,
        DeviceRole,
        TokensRole,
        TokensPerSecondRole,
        FirstTokenMsRole,
        ReferencesRole,       // a list of {chunk, id, text, title, source, score}
        ReferenceCountRole,
        NoticeRole,           // why memories were missing (Message::notice)
        HtmlRole,             // the text's Markdown as HTML, without raw HTML or images (markdown_html.hpp)
        SeedRole,             // the answer's sampler seed; -1 when not known
        VersionRole,          // which version of the message is shown (0-based; branches.hpp)
        VersionCountRole,     // how many it has (1: never regenerated or edited)
        DroppedMessagesRole,  // oldest messages left out to fit the context
        BlocksRole,           // the text as prose and code blocks for the view (message_blocks.hpp)
    };

    explicit ConversationModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;
    int count() const { return static_cast<int>(messages_.size()); }

    const QList<Message>& messages() const { return messages_; }
    const Message& at(int row) const { return messages_.at(row); }
    void setMessages(const QList<Message>& messages);
    int append(const Message& m);  // returns its row
    void appendText(int row, const QString& piece);
    void replace(int row, const Message& m);
    void truncate(int rows);  // keeps the first `rows` messages

Q_SIGNALS:
    void countChanged();

private:
    QList<Message> messages_;
};

}  // namespace mnemo::gui
