// RetrievalRecorder: a MemorySource in front of the session's real one (a memory folder or a
// knowledge server) that notes, per sequence and per chunk, which references were retrieved, so a
// program can say what an answer read: `mnemo ask` and `mnemo eval` list them, mnemo-chat shows
// them beside each answer. The engine keeps no such record itself: a memory folder reports
// nothing, and a knowledge server only its last chunk's references (KbSource::last_references).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "mnemo/api.hpp"
#include "mnemo/memory/explicit_memory.hpp"

namespace mnemo {

class FolderMemorySource;
class KbSource;

class MNEMO_API RetrievalRecorder : public ForwardingMemorySource {
public:
    // `inner` is the session's source. From a knowledge server (a KbSource) each reference comes
    // with the text, title, source and score the server sent; from a memory folder (a
    // FolderMemorySource) with the folder's text; from any other source with its id alone.
    explicit RetrievalRecorder(std::shared_ptr<MemorySource> inner);
    ~RetrievalRecorder() override;

    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& query, int32_t k) override;

    // The references sequence `seq` retrieved since the last take(seq), chunk after chunk (chunks
    // numbered from 1 in that span), each chunk's best first; forgets them. A chunk that got no
    // memories (a knowledge server that did not answer) adds none but still counts as a chunk.
    std::vector<RetrievedReference> take(int32_t seq);
    // The same without forgetting them: what an answer about to be generated has read
    // (app::AnswerGrounding quotes from these).
    const std::vector<RetrievedReference>& peek(int32_t seq) const;
    // The knowledge server when that is the source (for its status), else nullptr.
    KbSource* kb() const { return kb_.get(); }

private:
    struct Sequence {
        int32_t chunks = 0;
        std::vector<RetrievedReference> references;
    };
    std::shared_ptr<KbSource> kb_;                   // inner_, when it is a knowledge server
    std::shared_ptr<FolderMemorySource> folder_;     // inner_, when it is a memory folder
    std::map<int32_t, Sequence> sequences_;
};

// Each reference once, at its first retrieval, in order: what a program lists as "the references
// read" (`mnemo ask`, `mnemo eval`'s reports).
MNEMO_API std::vector<RetrievedReference> distinct_references(const std::vector<RetrievedReference>& references);

}  // namespace mnemo
