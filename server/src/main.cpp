// `mnemo-kb` dispatcher: picks the subcommand and maps errors to exit codes (0 ok, 1 runtime
// error, 2 usage error), like `mnemo` itself.
#include <cstdio>
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
    {"compress", mnemo::kb::cmd_compress, "train a VQ codec on a memory folder and write its memories as codes"},
};

void print_help(FILE* out) {
    std::fprintf(out,
                 "usage: mnemo-kb <command> [options]\n       mnemo-kb --version\n\n"
                 "The Mnemo knowledge server's tools (server/README.md).\n\ncommands:\n");
    for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
    std::fprintf(out, "\nRun 'mnemo-kb <command> --help' for the options of a command.\n");
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
        std::printf("mnemo-kb %s\n", MNEMO_VERSION);
        return 0;
    }
    for (const Command& c : kCommands) {
        if (first != c.name) continue;
        try {
            return c.run(argc, argv);
        } catch (const mnemo::cli::UsageError& e) {
            std::fprintf(stderr, "mnemo-kb %s: %s\nsee mnemo-kb %s --help\n", c.name, e.what(), c.name);
            return 2;
        } catch (const std::exception& e) {
            std::fflush(stdout);
            std::fprintf(stderr, "mnemo-kb: error: %s\n", e.what());
            return 1;
        }
    }
    std::fprintf(stderr, "mnemo-kb: unknown command '%s'\nsee mnemo-kb --help\n", first.c_str());
    return 2;
}
