// `mnemo memorize --update`: a memory folder's references grouped by document (the corpus file a
// reference came from, MemoryReference::doc_id), so that memorizing a changed file again replaces
// what the folder held for it instead of adding a second copy beside it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "mnemo/memory/memory_folder.hpp"

namespace mnemo::cli {

struct MemoryFolderUpdate {
    std::vector<WrittenMemory> memories;
    std::vector<MemoryReference> references;
    size_t kept = 0;                // old references kept
    size_t dropped = 0;             // old references of the documents memorized again
    size_t replaced_documents = 0;  // documents of the folder memorized again
    size_t without_id = 0;          // old references with no doc_id (a folder written before ids): kept
};

// The folder's memories whose document is not among the fresh ones', then the fresh ones, in
// order. `old` must be an f32 folder for the same model (checked by the caller).
MemoryFolderUpdate update_memory_folder(MemoryFolderContents old, std::vector<WrittenMemory> fresh,
                                        std::vector<MemoryReference> fresh_references);

}  // namespace mnemo::cli
