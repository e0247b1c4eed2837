// ChatController's conversations (chat.*): new, open, save, delete with Undo, rename, the newest at
// start, export, and the clipboard. The chat itself (send, stop, regenerate, edit, versions, the
// answer streaming in) is in chat_controller.cpp.
#include <QClipboard>
#include <QDir>
#include <QGuiApplication>
#include <QUuid>

#include "chat_controller.hpp"
#include "conversation/code_blocks.hpp"
#include "conversation/conversation_export.hpp"
#include "conversation/export_file_name.hpp"
#include "local_path.hpp"

namespace mnemo::gui {

void ChatController::saveCurrent() {
    if (conversation_.count() == 0) return;  // an empty conversation is not worth a file
    current_.messages = conversation_.messages();
    for (Message& m : current_.messages) m.streaming = false;
    current_.updated = QDateTime::currentDateTimeUtc();
    const QString why = store_.save(current_);
    if (!why.isEmpty()) setStatus(QStringLiteral("The conversation could not be saved: %1").arg(why), true);
}

void ChatController::newConversation() {
    stopCurrent();
    current_ = Conversation{};
    current_.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    current_.created = current_.updated = QDateTime::currentDateTimeUtc();
    current_.model = model_.info().modelDir;
    conversation_.setMessages({});
    clearError();
    Q_EMIT conversationChanged();
}

bool ChatController::openConversation(const QString& id) {
    const std::optional<Conversation> c = store_.find(id);
    if (!c) {
        setStatus(QStringLiteral("There is no saved conversation %1").arg(id), true);
        return false;
    }
    stopCurrent();
    current_ = *c;
    conversation_.setMessages(c->messages);
    clearError();
    Q_EMIT conversationChanged();
    return true;
}

bool ChatController::deleteConversation(const QString& id) {
    const bool open = id == current_.id;
    if (open && conversation_.count() == 0) {  // never saved: nothing to delete or undo
        newConversation();
        return true;
    }
    const QString why = deletion_.remove(id);
    if (!why.isEmpty()) {
        setStatus(QStringLiteral("The conversation could not be deleted: %1").arg(why), true);
        return false;
    }
    deletedWasOpen_ = open;
    if (open) newConversation();
    return true;
}

bool ChatController::undoDelete() {
    const bool wasOpen = deletedWasOpen_;
    const QString id = deletion_.undo();
    if (id.isEmpty()) return false;
    if (wasOpen && conversation_.count() == 0) openConversation(id);  // unless a new one was begun meanwhile
    return true;
}

bool ChatController::renameConversation(const QString& id, const QString& title) {
    if (title.simplified().isEmpty()) {
        setStatus(QStringLiteral("A title cannot be empty"), true);
        return false;
    }
    if (id == current_.id) {
        current_.title = title.simplified();
        current_.titleByUser = true;  // it no longer follows the first prompt
        Q_EMIT conversationChanged();
        if (conversation_.count() == 0) return true;  // saved with its first message
    }
    const QString why = store_.rename(id, title);
    if (!why.isEmpty()) setStatus(why, true);
    return why.isEmpty();
}

void ChatController::restoreLatest() {
    const QString id = store_.idAt(0);
    if (!id.isEmpty()) openConversation(id);
    if (!notices().isEmpty()) setStatus(notices().join(QLatin1Char('\n')), true);
}

QString ChatController::exportSuggestion(const QString& folder, const QString& format) const {
    return QDir(folder.isEmpty() ? QDir::homePath() : folder).filePath(mnemo::gui::exportFileName(title(), format));
}

bool ChatController::exportConversation(const QString& pathOrUrl, const QString& format) {
    // Not saved first: an export changes nothing, so the conversation keeps its place in the list
    // (it is saved whenever it changes anyway).
    Conversation c = current_;
    c.messages = conversation_.messages();
    const QString path = localPath(pathOrUrl);
    const QString why = mnemo::gui::exportConversation(c, path, format);
    if (why.isEmpty()) setStatus(QStringLiteral("Exported to %1").arg(path), false);
    else setStatus(why, true);
    return why.isEmpty();
}

QStringList ChatController::codeBlocks(const QString& markdown) const { return fencedCodeBlocks(markdown); }

void ChatController::copyToClipboard(const QString& text) {
    if (QClipboard* c = QGuiApplication::clipboard()) c->setText(text);
}

}  // namespace mnemo::gui
