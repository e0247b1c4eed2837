// A MemorySource that passes every call through to the session's real source (a memory folder or
// the knowledge server) and notes which memories each sequence was given, so `mnemo eval` can say
// what an item's generation read. The engine reports no such thing itself: a remote source keeps
// only the last chunk's references (RemoteMemorySource::last_references), a folder none.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mnemo/memory/explicit_memory.hpp"
#include "memory_flags.hpp"
#include "mnemo/memory/remote_memory.hpp"

namespace mnemo::cli {

struct UsedReference {
    uint32_t id = 0;     // record id: the bank's, or the folder's line in references.jsonl
    std::string title;   // from the knowledge server; empty for a folder (it keeps no titles)
    std::string source;  // likewise
};

class ReferenceRecorder : public ForwardingMemorySource {
public:
    // `remote` is `inner` when it is the knowledge server's client (for titles), else nullptr.
    ReferenceRecorder(std::shared_ptr<MemorySource> inner, std::shared_ptr<RemoteMemorySource> remote);

    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& query, int32_t k) override;

    // The memories sequence `seq` was given since the last take(seq), each once, in the order
    // first given; forgets them.
    std::vector<UsedReference> take(int32_t seq);

private:
    std::shared_ptr<RemoteMemorySource> remote_;
    std::map<int32_t, std::vector<UsedReference>> used_;
};

// Wraps the session's attached memory source (if any) in a recorder and makes that the session's
// source; nullptr without memories. What `mnemo eval` and `mnemo ask` both need.
std::shared_ptr<ReferenceRecorder> record_references(Session& session, const AttachedMemories& attached);

}  // namespace mnemo::cli
