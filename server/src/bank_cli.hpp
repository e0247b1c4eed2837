// The leading positional arguments of a command (cmd_push.cpp; the commands that open a bank use
// StoreCli::parse, store_cli.hpp, which does the same and adds --store).
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
