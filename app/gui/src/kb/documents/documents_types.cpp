#include "kb/documents/documents_types.hpp"

namespace mnemo::gui {

QString DocumentsTarget::describe() const {
    return server ? QStringLiteral("knowledge server %1").arg(url) : QStringLiteral("memory folder %1").arg(folder);
}

void registerDocumentsTypes() {
    qRegisterMetaType<DocumentsTarget>();
    qRegisterMetaType<DocumentRow>();
    qRegisterMetaType<DocumentsProgress>();
    qRegisterMetaType<DocumentsOutcome>();
}

}  // namespace mnemo::gui
