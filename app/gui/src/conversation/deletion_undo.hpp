// Deleting a conversation that can be taken back (chat.deletion): the QML asks first, then the
// conversation leaves the list at once and "Deleted “…” · Undo" shows for kUndoSeconds. Its file
// is only renamed aside meanwhile (ConversationStore::moveToDeleted), so Undo brings back exactly
// what was there; when the time is up, or another conversation is deleted, or the app quits, the
// file is removed for good (an app that crashes leaves <id>.json.deleted, which the next start
// removes: the user asked for the deletion). Nothing but the one deleted file is ever touched.
#pragma once

#include <QObject>
#include <QTimer>

#include "conversation/conversation_store.hpp"

namespace mnemo::gui {

class DeletionUndo : public QObject {
    Q_OBJECT
    Q_PROPERTY(bool pending READ pending NOTIFY changed)
    Q_PROPERTY(QString title READ title NOTIFY changed)  // of the conversation that can be brought back
public:
    static constexpr int kUndoSeconds = 10;

    explicit DeletionUndo(ConversationStore& store, QObject* parent = nullptr);
    ~DeletionUndo() override;  // a deletion still pending is done

    bool pending() const { return !id_.isEmpty(); }
    QString title() const { return title_; }

    // Removes `id` from the list, undoably; returns the reason on failure, else "".
    QString remove(const QString& id);
    // Brings the last deleted conversation back; returns its id ("" when it could not: `why`).
    Q_INVOKABLE QString undo();
    // Ends the undo window now: the file is removed for good.
    void commit();
    void setUndoMilliseconds(int ms) { timer_.setInterval(ms); }  // tests

Q_SIGNALS:
    void changed();
    void failed(const QString& why);  // for the status line

private:
    ConversationStore& store_;
    QTimer timer_;
    QString id_;
    QString title_;
};

}  // namespace mnemo::gui
