// A MemorySource in front of the session's real one that notes which explicit memories each
// chunk was given, so an answer can show the references it read. The engine itself keeps no such
// record for a folder (a folder source reports nothing), and the GUI wants more than `mnemo ask`
// prints: the text of each memory and the chunk that recalled it. A knowledge server reports the
// references of its last answer itself (with text, title, source and score): they are taken from it.
#pragma once

#include <QList>
#include <memory>

#include "engine/worker_types.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/memory/remote_memory.hpp"

namespace mnemo::gui {

class RecallRecorder : public ForwardingMemorySource {
public:
    explicit RecallRecorder(std::shared_ptr<FolderMemorySource> folder);
    explicit RecallRecorder(std::shared_ptr<RemoteMemorySource> remote);

    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& query, int32_t k) override;

    // What was recalled since the last take(), in order; chunks are numbered from 1 in that span.
    QList<Recall> take();
    // The knowledge server, when that is the source (its status); nullptr for a folder.
    RemoteMemorySource* remote() const { return remote_.get(); }

private:
    std::shared_ptr<FolderMemorySource> folder_;  // inner_, typed: each recalled memory's text
    std::shared_ptr<RemoteMemorySource> remote_;  // or this one: its last references
    QList<Recall> recalls_;
    int chunks_ = 0;
};

}  // namespace mnemo::gui
