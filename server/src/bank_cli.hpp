// What the commands that edit or list a bank share (cmd_delete.cpp, cmd_compact.cpp,
// cmd_documents.cpp): BANK and the document ids from the command line.
#pragma once

#include <string>
#include <vector>

namespace mnemo::kb {

// argv[first..] up to the first option: BANK, then document ids; `first` moves past them.
inline std::vector<std::string> leading_positionals(int argc, char** argv, int& first) {
    std::vector<std::string> out;
    while (first < argc && argv[first][0] != '-') out.emplace_back(argv[first++]);
    return out;
}

}  // namespace mnemo::kb
