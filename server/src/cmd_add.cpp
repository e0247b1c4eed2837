// `mnemo-kb add BANK CORPUS -m MODEL_DIR`: a new version of BANK with CORPUS's references added,
// encoded with the bank's own codec (the command line is build's, cmd_build.cpp).
#include "build_cli.hpp"
#include "commands.hpp"

namespace mnemo::kb {

int cmd_add(int argc, char** argv) { return run_bank_command(argc, argv, true); }

}  // namespace mnemo::kb
