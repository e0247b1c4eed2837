// What each chunk retrieved, noted on the way through (mnemo/memory/retrieval_recorder.hpp).
#include "mnemo/memory/retrieval_recorder.hpp"

#include <algorithm>
#include <unordered_set>

#include "mnemo/kb/kb_source.hpp"
#include "mnemo/memory/memory_folder.hpp"

namespace mnemo {

RetrievalRecorder::RetrievalRecorder(std::shared_ptr<MemorySource> inner)
    : ForwardingMemorySource(std::move(inner)),
      kb_(std::dynamic_pointer_cast<KbSource>(inner_)),
      folder_(std::dynamic_pointer_cast<FolderMemorySource>(inner_)) {}

RetrievalRecorder::~RetrievalRecorder() = default;

std::vector<std::shared_ptr<const ExplicitMemory>> RetrievalRecorder::retrieve(const ChunkQuery& query, int32_t k) {
    std::vector<std::shared_ptr<const ExplicitMemory>> got = inner_->retrieve(query, k);
    Sequence& seq = sequences_[query.seq];
    const int32_t chunk = ++seq.chunks;
    // A knowledge server has just kept this chunk's references (text, title, source, score) for
    // the sequence; the memories given are the ones described, in the same order.
    const std::vector<RetrievedReference> described = kb_ ? kb_->last_references(query.seq) : std::vector<RetrievedReference>{};
    for (const auto& memory : got) {
        if (!memory) continue;
        RetrievedReference r;
        const auto d = std::find_if(described.begin(), described.end(),
                                    [&](const RetrievedReference& x) { return x.id == memory->id; });
        if (d != described.end()) r = *d;
        r.id = memory->id;
        r.chunk = chunk;
        if (folder_ && memory->id < folder_->size()) {
            const MemoryReference& ref = folder_->reference(memory->id);
            r.text = ref.text;
            r.doc_id = ref.doc_id;
            r.title = ref.title;
            r.source = ref.source;
        }
        seq.references.push_back(std::move(r));
    }
    return got;
}

std::vector<RetrievedReference> RetrievalRecorder::take(int32_t seq) {
    const auto it = sequences_.find(seq);
    if (it == sequences_.end()) return {};
    std::vector<RetrievedReference> out = std::move(it->second.references);
    sequences_.erase(it);
    return out;
}

const std::vector<RetrievedReference>& RetrievalRecorder::peek(int32_t seq) const {
    static const std::vector<RetrievedReference> none;
    const auto it = sequences_.find(seq);
    return it == sequences_.end() ? none : it->second.references;
}

std::vector<RetrievedReference> distinct_references(const std::vector<RetrievedReference>& references) {
    std::vector<RetrievedReference> out;
    std::unordered_set<uint32_t> seen;
    for (const RetrievedReference& r : references)
        if (seen.insert(r.id).second) out.push_back(r);
    return out;
}

}  // namespace mnemo
