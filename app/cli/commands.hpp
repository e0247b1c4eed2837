// Entry points of the subcommands: argv[0] is "mnemo", argv[1] the subcommand; options start at 2.
// Each returns the process exit code and throws app::UsageError (exit 2) or mnemo::Error (exit 1).
#pragma once

namespace mnemo::cli {

int cmd_run(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_logits(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_compare(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_devices(int argc, char** argv);
int cmd_plugins(int argc, char** argv);
int cmd_memorize(int argc, char** argv);
int cmd_eval(int argc, char** argv);
int cmd_ask(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);
int cmd_serve(int argc, char** argv);

}  // namespace mnemo::cli
