#include "engine/worker_types.hpp"

namespace mnemo::gui {

QString finishReasonText(FinishReason r) {
    switch (r) {
        case FinishReason::EndOfTurn: return QStringLiteral("end of turn");
        case FinishReason::Limit: return QStringLiteral("token limit");
        case FinishReason::ContextFull: return QStringLiteral("context full");
        case FinishReason::Stopped: return QStringLiteral("stopped");
    }
    return {};
}

QString ModelInfo::deviceText() const {
    return QStringLiteral("%1:%2 %3").arg(backend).arg(device).arg(deviceName).trimmed();
}

void registerWorkerTypes() {
    qRegisterMetaType<LoadRequest>();
    qRegisterMetaType<ModelInfo>();
    qRegisterMetaType<SamplingSettings>();
    qRegisterMetaType<ChatTurn>();
    qRegisterMetaType<QList<ChatTurn>>();
    qRegisterMetaType<GenerationResult>();
    qRegisterMetaType<KbStatus>();
}

}  // namespace mnemo::gui
