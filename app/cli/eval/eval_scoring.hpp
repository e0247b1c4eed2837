// How `mnemo eval` scores an output against the accepted answers. Both sides are normalized the
// same way: surrounding whitespace trimmed, ASCII letters lower-cased, runs of whitespace made
// one space, and trailing sentence punctuation (. ! ?) dropped, so "Paris." matches "paris".
// Bytes beyond ASCII are compared as they are (no Unicode case folding).
#pragma once

#include <string>
#include <vector>

namespace mnemo::cli {

std::string normalize_answer(const std::string& text);

struct ItemScore {
    bool exact = false;     // the normalized output equals a normalized accepted answer
    bool contains = false;  // a normalized accepted answer occurs in the normalized output
};

ItemScore score_output(const std::string& output, const std::vector<std::string>& accepted);

}  // namespace mnemo::cli
