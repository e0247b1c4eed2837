#include "app/dispatch.hpp"

#include <cstdio>
#include <exception>
#include <string>

#include "app/args.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::app {

namespace {

void print_help(FILE* out, const char* program, const char* blurb, std::span<const Command> commands) {
    std::fprintf(out, "usage: %s <command> [options]\n       %s --version\n\n", program, program);
    if (blurb && *blurb) std::fprintf(out, "%s\n\n", blurb);
    std::fprintf(out, "commands:\n");
    for (const Command& c : commands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
    std::fprintf(out, "\nRun '%s <command> --help' for the options of a command.\n", program);
}

}  // namespace

int dispatch(const char* program, const char* version, const char* blurb, std::span<const Command> commands, int argc,
             char** argv) {
    if (argc < 2) {
        print_help(stderr, program, blurb, commands);
        return 2;
    }
    const std::string first = argv[1];
    if (first == "-h" || first == "--help" || first == "help") {
        print_help(stdout, program, blurb, commands);
        return 0;
    }
    if (first == "--version" || first == "-V") {
        std::printf("%s %s\n", program, version);
        return 0;
    }
    for (const Command& c : commands) {
        if (first != c.name) continue;
        try {
            return c.run(argc, argv);
        } catch (const UsageError& e) {
            std::fprintf(stderr, "%s %s: %s\nsee %s %s --help\n", program, c.name, printable(e.what()).c_str(), program, c.name);
            return 2;
        } catch (const std::exception& e) {
            // Messages quote what they refuse (a file's field, a server's reply, a vocabulary's
            // token): escaped, so that text cannot drive the terminal or forge another line.
            std::fflush(stdout);
            std::fprintf(stderr, "%s: error: %s\n", program, printable(e.what()).c_str());
            return 1;
        }
    }
    std::fprintf(stderr, "%s: unknown command '%s'\nsee %s --help\n", program, printable(first).c_str(), program);
    return 2;
}

}  // namespace mnemo::app
