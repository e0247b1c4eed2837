// The subcommand dispatcher of Mnemo's programs (`mnemo`, `mnemo-kb`): help, version, picking the
// subcommand, and mapping errors to exit codes (0 ok, 1 runtime error, 2 usage error).
#pragma once

#include <span>

namespace mnemo::app {

struct Command {
    const char* name;
    int (*run)(int, char**);
    const char* summary;
};

// `blurb` is printed under the usage line of --help (may be empty).
int dispatch(const char* program, const char* version, const char* blurb, std::span<const Command> commands, int argc,
             char** argv);

}  // namespace mnemo::app
