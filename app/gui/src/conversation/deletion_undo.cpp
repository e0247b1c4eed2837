#include "conversation/deletion_undo.hpp"

namespace mnemo::gui {

DeletionUndo::DeletionUndo(ConversationStore& store, QObject* parent) : QObject(parent), store_(store) {
    timer_.setSingleShot(true);
    timer_.setInterval(kUndoSeconds * 1000);
    connect(&timer_, &QTimer::timeout, this, &DeletionUndo::commit);
}

DeletionUndo::~DeletionUndo() {
    // Not commit(): no signals from a destructor. The file goes as the window would have let it.
    if (!id_.isEmpty()) store_.purgeDeleted(id_);
}

QString DeletionUndo::remove(const QString& id) {
    const std::optional<Conversation> c = store_.find(id);
    if (!c) return QStringLiteral("there is no saved conversation %1").arg(id);
    commit();  // one undo at a time: an earlier deletion is final now
    const QString why = store_.moveToDeleted(id);
    if (!why.isEmpty()) return why;
    id_ = id;
    title_ = c->title;
    timer_.start();
    Q_EMIT changed();
    return {};
}

QString DeletionUndo::undo() {
    if (id_.isEmpty()) return {};
    timer_.stop();
    const QString id = id_;
    id_.clear();
    title_.clear();
    Q_EMIT changed();
    const QString why = store_.restoreDeleted(id);
    if (!why.isEmpty()) {
        Q_EMIT failed(QStringLiteral("The conversation could not be restored: %1").arg(why));
        return {};
    }
    return id;
}

void DeletionUndo::commit() {
    if (id_.isEmpty()) return;
    timer_.stop();
    const QString why = store_.purgeDeleted(id_);
    id_.clear();
    title_.clear();
    Q_EMIT changed();
    if (!why.isEmpty()) Q_EMIT failed(QStringLiteral("The deleted conversation could not be removed: %1").arg(why));
}

}  // namespace mnemo::gui
