// A text corpus's references as `mnemo memorize` and `mnemo-kb build` cut them: paragraphs
// separated by blank lines (lines of spaces and tabs count as blank; "\r\n" endings are read as
// "\n"). Header-only, because the knowledge server's bank library uses it without linking the
// programs' common library (the tests hold the engine statically, the programs as libmnemo).
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace mnemo::app {

// The paragraphs of `text` in order, each its lines joined by "\n"; empty ones are dropped.
inline std::vector<std::string> split_paragraphs(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line, cur;
    auto flush = [&] {
        if (cur.find_first_not_of(" \t\r\n") != std::string::npos) out.push_back(cur);
        cur.clear();
    };
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) {
            flush();
            continue;
        }
        cur += (cur.empty() ? "" : "\n") + line;
    }
    flush();
    return out;
}

}  // namespace mnemo::app
