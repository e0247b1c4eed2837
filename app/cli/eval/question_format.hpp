// How a question is put to a model: through its chat template when it has one (a single user
// message and the assistant header), else as a plain "Question: ...\nAnswer:" completion. Shared
// by `mnemo eval` and `mnemo ask`, so that a question asked by hand is scored exactly as in an
// evaluation.
#pragma once

#include <string>
#include <vector>

#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::cli {

struct QuestionFormat {
    ChatTemplate tmpl;
    bool templated = false;

    std::string name() const { return templated ? tmpl.name : "plain"; }
    std::string prompt(const std::string& question) const;
    // A question wants a short answer: it ends at the first newline (and at the end of the turn).
    std::vector<std::string> stops() const;
};

QuestionFormat question_format(const std::string& model_dir);

}  // namespace mnemo::cli
