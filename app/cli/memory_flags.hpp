// --memories FOLDER and --retrieval MODE: explicit memories for the commands that generate.
#pragma once

#include <memory>
#include <string>

#include "app/args.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/session/session.hpp"

namespace mnemo::cli {

struct MemoryFlags {
    std::string folder;              // empty: no memories (a memory model still reads its reference BOS)
    std::string retrieval = "vector";
};

void add_memory_flags(app::ArgParser& p, MemoryFlags& f);

// Open the folder against the session's model and make it the session's memory source. Returns
// the source (nullptr without --memories). Errors: the model reads no memories, or the folder
// does not fit the model.
std::shared_ptr<FolderMemorySource> attach_memories(Session& session, const MemoryFlags& f);

}  // namespace mnemo::cli
