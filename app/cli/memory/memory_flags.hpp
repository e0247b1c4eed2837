// Explicit memories for the commands that generate: --memories FOLDER (in process) or --kb URL
// (the knowledge server, `mnemo-kb serve`; repeated for several servers over one bank), and
// --retrieval MODE for either.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/args.hpp"
#include "mnemo/kb/kb_source.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/memory/retrieval_recorder.hpp"
#include "mnemo/session/session.hpp"

namespace mnemo::cli {

struct MemoryFlags {
    std::string folder;              // empty: no memories (a memory model still reads its reference BOS)
    // Empty: what the model's generation_config.json recommends ("mnemo_retrieval"), else BM25: lexical
    // retrieval works with any model; vector retrieval needs trained retrieval vectors, which the
    // default model does not have (mnemo-chat has the same default).
    std::string retrieval;
    // --min-relative-score; negative: the model's recommendation, else 0 (no cut).
    double min_relative_score = -1;
    // --min-references (the cut's floor); negative: the model's recommendation, else 0 (none).
    int32_t min_references = -1;
    // --kb, once per server: grpcs://HOST:PORT or grpc://HOST:PORT (loopback), one scheme for all.
    std::vector<std::string> kb_urls;
    std::string kb_token_file;
    std::string kb_ca;
    int32_t kb_timeout_ms = 2000;
};

void add_memory_flags(app::ArgParser& p, MemoryFlags& f);

// A --kb list that mixes schemes, names a server twice or holds a malformed URL: a mnemo::Error
// naming the URLs (attach_memories checks it too; a command says it before loading a model).
void check_kb_flags(const MemoryFlags& f);

// --grounded (`ask`, `chat`, `eval`; app/grounding.hpp): answers that only quote the references
// read. check_grounded_flag (also `serve`'s, whose flag says what it means there): a usage error
// when it is given without --memories or --kb (nothing to quote), said before the model loads.
void add_grounded_flag(app::ArgParser& p, bool* grounded);
void check_grounded_flag(const MemoryFlags& f, bool grounded);

// The --kb URLs as one string, ", " between them (for a report: where the memories came from).
std::string kb_location(const MemoryFlags& f);

// The session's memory source, as attached.
struct AttachedMemories {
    std::shared_ptr<MemorySource> source;        // nullptr without --memories or --kb
    std::shared_ptr<KbSource> kb;                // --kb: its status for the summary lines
    std::string retrieval;                       // the mode used, after the model's advice
    double min_relative_score = 0;               // the cut used, after the model's advice
    uint32_t min_references = 0;                 // its floor, after the model's advice
    explicit operator bool() const { return source != nullptr; }
};

// Open the folder, or connect to the knowledge servers, against the session's model and make it
// the session's memory source. Errors: both flags, a --kb list that mixes schemes or names a
// server twice, the model reads no memories, the folder or bank does not fit the
// model, no server can be reached.
AttachedMemories attach_memories(Session& session, const MemoryFlags& f);

// Puts a RetrievalRecorder in front of the attached source and makes it the session's source, so
// a command can say which references each sequence read (`mnemo ask`, `mnemo eval`); nullptr
// without memories.
std::shared_ptr<RetrievalRecorder> record_retrieval(Session& session, const AttachedMemories& attached);

// "kb grpcs://h:p: bank 3, 12 chunks, 40 records fetched (1.2 MiB, 100 KiB/chunk), cache hits
// 70%, prefetched 12, 0 failures" (stderr, after a run); with several servers, then each one's
// chunks and failures and the chunks that failed over.
std::string kb_summary(const KbSourceStatus& s);

}  // namespace mnemo::cli
