#include "engine/recall_recorder.hpp"

namespace mnemo::gui {

RecallRecorder::RecallRecorder(std::shared_ptr<FolderMemorySource> folder)
    : ForwardingMemorySource(folder), folder_(std::move(folder)) {}

std::vector<std::shared_ptr<const ExplicitMemory>> RecallRecorder::retrieve(const ChunkQuery& query, int32_t k) {
    std::vector<std::shared_ptr<const ExplicitMemory>> got = inner_->retrieve(query, k);
    ++chunks_;
    for (const auto& memory : got) {
        if (!memory) continue;
        Recall r;
        r.chunk = chunks_;
        r.id = memory->id;
        if (memory->id < folder_->size()) r.text = QString::fromStdString(folder_->reference(memory->id).text);
        r.source = QString::fromStdString(inner_->describe());
        recalls_.push_back(std::move(r));
    }
    return got;
}

QList<Recall> RecallRecorder::take() {
    QList<Recall> out;
    out.swap(recalls_);
    chunks_ = 0;
    return out;
}

}  // namespace mnemo::gui
