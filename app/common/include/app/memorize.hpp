// Documents memorized into a memory folder in this process (mnemo/memory/memory_folder.hpp): what
// `mnemo memorize` does from the command line and mnemo-chat's *Add documents…* from its window,
// one implementation for both. The documents are cut into the model's references
// (app/corpus.hpp), encoded in batches (Session::write_memories on slices, so that progress can be
// reported and a cancel honoured between batches as well as inside one), and the folder is written
// whole and atomically at the end: a cancel or an error leaves the folder as it was.
//
// Updating a folder groups its references by document (MemoryReference::doc_id): memorizing a
// document again replaces what the folder held for it instead of adding a second copy beside it.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "app/corpus.hpp"
#include "mnemo/memory/memory_folder.hpp"

namespace mnemo {
class Session;
class Tokenizer;
}  // namespace mnemo

namespace mnemo::app {

// What the user points at, as documents: a .txt or .md file (or any file that is not .jsonl) is
// one document, its id the file's name, its title the first non-blank line, its source the file's
// absolute path; a .jsonl file or a folder is read by read_corpus (a folder's documents get their
// absolute path as source, their id stays the path inside the folder). Every text must be UTF-8.
// Two documents with one id are an error naming both.
std::vector<CorpusDocument> read_documents(const std::vector<std::string>& paths, const CorpusOptions& options = {});

struct MemorizeProgress {
    size_t documents = 0;         // being memorized
    size_t references_done = 0;   // encoded so far
    size_t references_total = 0;
    double seconds = 0;           // since encoding began
    double references_per_second() const { return seconds > 0 ? static_cast<double>(references_done) / seconds : 0.0; }
    // Seconds left at the rate so far; negative until a batch has been timed.
    double eta_seconds() const {
        const double rate = references_per_second();
        return rate > 0 ? static_cast<double>(references_total - references_done) / rate : -1.0;
    }
};

enum class FolderWrite {
    Create,   // a new folder; an existing one is an error
    Replace,  // the folder's old contents are dropped (`--force`)
    Update,   // added to the existing f32 folder of the same model; a doc_id it holds is replaced
};

struct MemorizeOptions {
    FolderWrite write = FolderWrite::Create;
    // References per Session::write_memories call; 0: four times the model's encode_sequences
    // (at least 16), small enough for a progress bar to move and a cancel to land within a second
    // or two on a CPU, large enough to keep the batches the model encodes full.
    size_t batch = 0;
    std::function<void(const MemorizeProgress&)> progress;  // after each batch, on the calling thread
    // Set from another thread to stop: checked between batches and, through the session, inside
    // one (it becomes the session's cancel flag: Session::set_cancel_flag); memorize_documents()
    // then throws mnemo::Cancelled and writes nothing.
    const std::atomic<bool>* cancel = nullptr;
};

struct MemorizeResult {
    size_t documents = 0;   // memorized now
    size_t references = 0;  // written for them
    size_t tokens = 0;
    double seconds = 0;     // encoding time
    // Update: what the folder held before.
    size_t replaced_documents = 0;  // of the documents memorized, those the folder held
    size_t dropped = 0;             // their old references
    size_t kept = 0;                // old references of other documents
    size_t without_id = 0;          // old references with no doc_id (written before ids): kept
    size_t total = 0;               // references in the folder now
};

// Memorizes `documents` with `session` (a model that reads memories; its tokenizer `tok`) into
// memory folder `folder`. Everything is checked before anything is encoded: a model that reads no
// memories, a folder that exists (Create) or not (Update), a compressed (vq) folder or one written
// by another model (Update), documents with no text. Errors name the folder or the document.
MemorizeResult memorize_documents(Session& session, const Tokenizer& tok, const std::vector<CorpusDocument>& documents,
                                  const std::string& folder, const MemorizeOptions& options = {});

// The merge behind FolderWrite::Update: the old folder's memories whose document is not among the
// fresh ones', then the fresh ones, in order. `old` must be an f32 folder for the same model.
struct MemoryFolderUpdate {
    std::vector<WrittenMemory> memories;
    std::vector<MemoryReference> references;
    size_t kept = 0, dropped = 0, replaced_documents = 0, without_id = 0;  // as in MemorizeResult
};
MemoryFolderUpdate update_memory_folder(MemoryFolderContents old, std::vector<WrittenMemory> fresh,
                                        std::vector<MemoryReference> fresh_references);

}  // namespace mnemo::app
