// The command line shared by `mnemo-kb build` and `mnemo-kb add` (cmd_build.cpp, cmd_add.cpp):
// both open a session on the model, call build_bank (bank/bank_build.hpp), show progress and
// print a summary (text or --json).
#pragma once

namespace mnemo::kb {

// argv[2..] of `build` (add = false) or `add` (add = true); returns the exit code.
int run_bank_command(int argc, char** argv, bool add);

}  // namespace mnemo::kb
