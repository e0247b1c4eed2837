#include "reference_recorder.hpp"

#include <algorithm>

namespace mnemo::cli {

ReferenceRecorder::ReferenceRecorder(std::shared_ptr<MemorySource> inner, std::shared_ptr<RemoteMemorySource> remote)
    : ForwardingMemorySource(std::move(inner)), remote_(std::move(remote)) {}

std::vector<std::shared_ptr<const ExplicitMemory>> ReferenceRecorder::retrieve(const ChunkQuery& query, int32_t k) {
    std::vector<std::shared_ptr<const ExplicitMemory>> got = inner_->retrieve(query, k);
    // The remote source has just stored this chunk's references (titles) for the sequence.
    const std::vector<RecalledReference> recalled = remote_ ? remote_->last_references(query.seq)
                                                            : std::vector<RecalledReference>{};
    std::vector<UsedReference>& used = used_[query.seq];
    for (const auto& memory : got) {
        if (!memory) continue;
        const uint32_t id = memory->id;
        if (std::any_of(used.begin(), used.end(), [&](const UsedReference& u) { return u.id == id; })) continue;
        UsedReference u;
        u.id = id;
        const auto r = std::find_if(recalled.begin(), recalled.end(), [&](const RecalledReference& x) { return x.id == id; });
        if (r != recalled.end()) {
            u.title = r->title;
            u.source = r->source;
        }
        used.push_back(std::move(u));
    }
    return got;
}

std::vector<UsedReference> ReferenceRecorder::take(int32_t seq) {
    auto it = used_.find(seq);
    if (it == used_.end()) return {};
    std::vector<UsedReference> out = std::move(it->second);
    used_.erase(it);
    return out;
}

std::shared_ptr<ReferenceRecorder> record_references(Session& session, const AttachedMemories& attached) {
    if (!attached) return nullptr;
    auto recorder = std::make_shared<ReferenceRecorder>(attached.source, attached.remote);
    session.set_memory_source(recorder);
    return recorder;
}

}  // namespace mnemo::cli
