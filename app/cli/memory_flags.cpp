#include "memory_flags.hpp"

#include "mnemo/error.hpp"

namespace mnemo::cli {

void add_memory_flags(app::ArgParser& p, MemoryFlags& f) {
    p.string_opt("--memories", "FOLDER", "explicit memories made by `mnemo memorize` (models that read memories, e.g. memory3)",
                 &f.folder)
        .string_opt("--retrieval", "MODE", "how chunks find memories: vector (the model's hidden state, cosine) or bm25 "
                                           "(lexical, over tokens) (default: vector)",
                    &f.retrieval);
}

std::shared_ptr<FolderMemorySource> attach_memories(Session& session, const MemoryFlags& f) {
    const RetrievalMode mode = retrieval_mode_from_name(f.retrieval);
    if (f.folder.empty()) return nullptr;
    if (!session.reads_memories())
        throw Error("--memories: model '" + session.summary().model_dir + "' (" + session.summary().model_type +
                    ") does not read explicit memories");
    auto source = std::make_shared<FolderMemorySource>(f.folder, memory_folder_model(session), mode);
    session.set_memory_source(source);
    return source;
}

}  // namespace mnemo::cli
