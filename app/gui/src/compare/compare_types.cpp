#include "compare/compare_types.hpp"

#include "engine/kb_status.hpp"

namespace mnemo::gui {

QString CompareMemories::text() const {
    if (!kbUrl.isEmpty()) return QStringLiteral("knowledge server %1").arg(kbServerName(kbUrl));
    if (!folder.isEmpty()) return QStringLiteral("memory folder %1").arg(folder);
    return QStringLiteral("no memories");
}

double CompareColumn::opTotalMs() const {
    double t = 0.0;
    for (const OpTime& o : opTimes) t += o.ms;
    return t;
}

int CompareReport::ran() const {
    int n = 0;
    for (const CompareColumn& c : columns) n += c.ok() ? 1 : 0;
    return n;
}

void registerCompareTypes() {
    qRegisterMetaType<CompareRequest>();
    qRegisterMetaType<CompareReport>();
}

}  // namespace mnemo::gui
