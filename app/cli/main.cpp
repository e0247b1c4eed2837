// `mnemo` dispatcher: picks the subcommand and maps errors to exit codes
// (0 ok, 1 runtime error, 2 usage error).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "args.hpp"
#include "commands.hpp"

namespace {

struct Command {
    const char* name;
    int (*run)(int, char**);
    const char* summary;
};

const Command kCommands[] = {
    {"run", mnemo::cli::cmd_run, "generate text from a prompt"},
    {"chat", mnemo::cli::cmd_chat, "interactive chat using the model's chat template"},
    {"memorize", mnemo::cli::cmd_memorize, "write explicit memories of a text corpus for a model that reads them (memory3)"},
    {"logits", mnemo::cli::cmd_logits, "write the logits of a token sequence to an .npy file"},
    {"bench", mnemo::cli::cmd_bench, "measure prompt and generation speed (llama-bench style)"},
    {"compare", mnemo::cli::cmd_compare, "run one prompt on several backends: speed, memory, logit differences"},
    {"info", mnemo::cli::cmd_info, "describe a model: architecture, sizes, tokenizer, template"},
    {"devices", mnemo::cli::cmd_devices, "list backend modules and their devices"},
    {"plugins", mnemo::cli::cmd_plugins, "list model plugins and the model types they load"},
};

void print_help(FILE* out) {
    std::fprintf(out, "usage: mnemo <command> [options]\n       mnemo --version\n\ncommands:\n");
    for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
    std::fprintf(out, "\nRun 'mnemo <command> --help' for the options of a command.\n");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        print_help(stderr);
        return 2;
    }
    const std::string first = argv[1];
    if (first == "-h" || first == "--help" || first == "help") {
        print_help(stdout);
        return 0;
    }
    if (first == "--version" || first == "-V") {
        std::printf("mnemo %s\n", MNEMO_VERSION);
        return 0;
    }
    for (const Command& c : kCommands) {
        if (first != c.name) continue;
        try {
            return c.run(argc, argv);
        } catch (const mnemo::cli::UsageError& e) {
            std::fprintf(stderr, "mnemo %s: %s\nsee mnemo %s --help\n", c.name, e.what(), c.name);
            return 2;
        } catch (const std::exception& e) {
            std::fflush(stdout);
            std::fprintf(stderr, "mnemo: error: %s\n", e.what());
            return 1;
        }
    }
    std::fprintf(stderr, "mnemo: unknown command '%s'\nsee mnemo --help\n", first.c_str());
    return 2;
}
