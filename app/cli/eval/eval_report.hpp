// What `mnemo eval` writes: the table on stdout, the JSON report (--report) and the per-item
// JSONL (--items), and the early check that those files can be written. Formats are described in docs/cli.md ("mnemo eval").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/eval_items.hpp"
#include "eval/eval_scoring.hpp"
#include "mnemo/memory/explicit_memory.hpp"

namespace mnemo::cli {

struct EvalOutcome {
    const EvalItem* item = nullptr;
    std::string output;                          // the generated text, stop string excluded
    ItemScore score;
    std::vector<RetrievedReference> references;  // what the item's generation read, each once
    std::string stop;                            // "eos", "newline" (or end of turn), "limit", "context"
    int32_t prompt_tokens = 0;
    int32_t generated_tokens = 0;
};

struct EvalRun {
    std::string questions;        // the JSONL file
    std::string model_dir;
    std::string model_type;
    std::string backend;
    std::string prompt_format;    // the chat template's name, or "plain" ("Question: ...\nAnswer:")
    std::string memory_kind;      // "kb", "folder" or "none"
    std::string memory_location;  // the URL or folder; empty for none
    std::string retrieval;        // empty without memories
    double min_relative_score = 0;  // the relative score cut (0: none; only with memories)
    uint32_t min_references = 0;    // its floor (0: none)
    bool grounded = false;          // --grounded: answers quote the references read
    int32_t max_tokens = 0;
    double seconds = 0;           // the whole evaluation, model loading excluded
    double generation_seconds = 0;
};

// Rows "set, items, exact %, contains %": one per set (in the order sets first appear), then
// "all" over every item.
std::string eval_table(const std::vector<EvalOutcome>& outcomes);
std::string eval_report_json(const EvalRun& run, const std::vector<EvalOutcome>& outcomes);
std::string eval_items_jsonl(const std::vector<EvalOutcome>& outcomes);

// Fails early, before a long run, when the report could not be written to `path` (`flag`:
// --report, --items): its folder is missing or not writable, or it names a folder. Writes
// nothing; the report itself is written with mnemo::write_file_atomically.
void check_writable(const std::string& path, const std::string& flag);

}  // namespace mnemo::cli
