#include "memory/memory_update.hpp"

#include <set>

#include "mnemo/error.hpp"

namespace mnemo::cli {

MemoryFolderUpdate update_memory_folder(MemoryFolderContents old, std::vector<WrittenMemory> fresh,
                                        std::vector<MemoryReference> fresh_references) {
    if (old.memories.size() != old.references.size() || fresh.size() != fresh_references.size())
        throw Error("memorize --update: one reference per memory is needed");
    std::set<std::string> fresh_docs, replaced;
    for (const MemoryReference& r : fresh_references) fresh_docs.insert(r.doc_id);
    MemoryFolderUpdate u;
    for (size_t i = 0; i < old.memories.size(); ++i) {
        const std::string& doc = old.references[i].doc_id;
        if (doc.empty()) ++u.without_id;
        if (!doc.empty() && fresh_docs.count(doc)) {
            replaced.insert(doc);
            ++u.dropped;
            continue;
        }
        u.memories.push_back(std::move(old.memories[i]));
        u.references.push_back(std::move(old.references[i]));
        ++u.kept;
    }
    u.replaced_documents = replaced.size();
    for (size_t i = 0; i < fresh.size(); ++i) {
        u.memories.push_back(std::move(fresh[i]));
        u.references.push_back(std::move(fresh_references[i]));
    }
    return u;
}

}  // namespace mnemo::cli
