// The documents of a memory folder (mnemo/memory/memory_folder.hpp): listed from its
// references.jsonl (the records are not read), and removed by rewriting the folder without them
// (atomically, as every folder write). mnemo-chat's document list uses both; a folder written
// before document ids has one entry with an empty id for its references without one.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mnemo::app {

struct FolderDocument {
    std::string doc_id;
    std::string title;   // of its first reference; empty when the folder keeps none
    std::string source;
    size_t references = 0;
    size_t tokens = 0;
};

// In the order of each document's first reference. Errors name the folder, the file and the line.
std::vector<FolderDocument> list_folder_documents(const std::string& folder);

struct RemovedDocuments {
    size_t documents = 0;   // removed
    size_t references = 0;  // removed with them
    size_t remaining = 0;   // references left in the folder
};

// Rewrites `folder` without the references of `doc_ids` (compressed folders too: their codes and
// codebooks are kept as they are). An id the folder does not hold is an error naming it, and
// nothing is changed.
RemovedDocuments remove_folder_documents(const std::string& folder, const std::vector<std::string>& doc_ids);

}  // namespace mnemo::app
