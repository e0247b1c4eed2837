#include "engine/recall_recorder.hpp"

namespace mnemo::gui {

RecallRecorder::RecallRecorder(std::shared_ptr<FolderMemorySource> folder)
    : ForwardingMemorySource(folder), folder_(std::move(folder)) {}

RecallRecorder::RecallRecorder(std::shared_ptr<RemoteMemorySource> remote)
    : ForwardingMemorySource(remote), remote_(std::move(remote)) {}

std::vector<std::shared_ptr<const ExplicitMemory>> RecallRecorder::retrieve(const ChunkQuery& query, int32_t k) {
    std::vector<std::shared_ptr<const ExplicitMemory>> got = inner_->retrieve(query, k);
    ++chunks_;
    if (remote_) {
        // A chunk that got no memories (the server did not answer) has no references either.
        if (got.empty()) return got;
        for (const RecalledReference& ref : remote_->last_references(query.seq)) {
            Recall r;
            r.chunk = chunks_;
            r.id = ref.id;
            r.text = QString::fromStdString(ref.text);
            r.title = QString::fromStdString(ref.title);
            r.source = QString::fromStdString(ref.source);
            r.score = ref.score;
            r.hasScore = true;
            recalls_.push_back(std::move(r));
        }
        return got;
    }
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
