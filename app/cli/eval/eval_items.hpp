// The items of `mnemo eval`, read from a JSONL file (one JSON object per line):
//   {"question": "...", "answer": "..."}     a question, rendered with the chat template
//   {"prompt": "...", "completion": "..."}   a raw prompt and the completion expected
// with optional "id" (string or integer; default: the line number), "set" (a group the report
// scores separately; default "default"), "answers" (more accepted answers) and, for a question,
// "history": the turns before it in a conversation, [{"question": "...", "answer": "..."}, ...],
// fed as `mnemo chat` feeds them (each answer as if the model had generated it). Blank lines are
// skipped; other fields are ignored (data sets carry their own metadata).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mnemo::cli {

struct EvalItem {
    int64_t line = 0;                   // 1-based line in the file (for messages)
    std::string id;
    std::string set;
    bool is_question = false;           // "question" (chat template, stops at a newline) or "prompt" (raw)
    std::string text;                   // the question or the prompt
    std::vector<std::string> expected;  // "answer"/"completion" first, then "answers"
    struct Turn {
        std::string question, answer;
    };
    std::vector<Turn> history;          // earlier turns of the conversation (questions only)
};

// Reads and checks every line before anything runs. Throws mnemo::Error naming the file, the
// line and the field: not JSON, not an object, both or neither of question/prompt, a field of
// the wrong type, no expected answer, an expected answer that is empty once normalized
// (eval_scoring.hpp: it would match every output), a duplicate id; and a file with no items.
std::vector<EvalItem> read_eval_items(const std::string& path);

}  // namespace mnemo::cli
