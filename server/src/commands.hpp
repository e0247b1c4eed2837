// mnemo-kb subcommands: each parses its own arguments (argv[2..]) and returns the exit code; a
// mnemo::app::UsageError means exit code 2, any other exception exit code 1 (main.cpp).
#pragma once

namespace mnemo::kb {

int cmd_compress(int argc, char** argv);
int cmd_build(int argc, char** argv);
int cmd_add(int argc, char** argv);
int cmd_export(int argc, char** argv);
int cmd_delete(int argc, char** argv);
int cmd_compact(int argc, char** argv);
int cmd_documents(int argc, char** argv);
int cmd_copy(int argc, char** argv);    // the published version to another store (folder <-> RADOS)
int cmd_verify(int argc, char** argv);  // reads a whole bank and reports damage (bank/bank_verify.hpp)
int cmd_push(int argc, char** argv);  // the admin client of a running serve (AddDocuments)
#ifdef MNEMO_KB_SERVE
int cmd_serve(int argc, char** argv);  // src/serve/cmd_serve.cpp
int cmd_token(int argc, char** argv);  // src/serve/cmd_token.cpp
#endif

}  // namespace mnemo::kb
