// `mnemo-kb token new --name NAME --scope read|admin|shard --tokens FILE`: makes an access token for
// `mnemo-kb serve`, stores only its SHA-256 in the token file and prints the token once.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "app/args.hpp"
#include "commands.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"
#include "serve/access_tokens.hpp"

namespace mnemo::kb {
namespace {

// Writes `text` to stdout and makes sure it got there: flushed, and on a regular file fsynced (a
// full disk may only say so then). Throws mnemo::Error otherwise.
void print_or_throw(const std::string& text) {
    const bool written = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
    const bool flushed = std::fflush(stdout) == 0;
    if (!written || !flushed || std::ferror(stdout))
        throw Error(std::string("cannot write the token to stdout: ") + std::strerror(errno) + "; nothing was added to the tokens file");
    struct stat st {};
    if (::fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode) && ::fsync(STDOUT_FILENO) != 0)
        throw Error(std::string("cannot save the token written to stdout: ") + std::strerror(errno) +
                    "; nothing was added to the tokens file");
}

}  // namespace

int cmd_token(int argc, char** argv) {
    if (argc < 3 || std::string(argv[2]) != "new") {
        if (argc >= 3 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) {
            std::printf("usage: mnemo-kb token new --name NAME --scope read|admin|shard --tokens FILE\n");
            return 0;
        }
        throw app::UsageError("expected 'mnemo-kb token new --name NAME --scope read|admin|shard --tokens FILE'");
    }
    std::string name, scope, file;
    app::ArgParser p("token", "mnemo-kb token new --name NAME --scope read|admin|shard --tokens FILE",
                     "Generate a random access token (32 bytes), add 'NAME SCOPE sha256:HEX' to the token file (an "
                     "atomic rewrite; created with mode 0600 when missing) and print the token on stdout. The token itself "
                     "is stored nowhere: keep it. A running server reads the file when it starts.");
    p.string_opt("--name", "NAME", "the client's name in logs and limits ([A-Za-z0-9._-])", &name)
        .string_opt("--scope", "SCOPE", "read (every call but Reload), admin (also Reload) or shard (what one node of a "
                                        "sharded index asks the others with: serve --shard-peer-token-file)", &scope)
        .string_opt("--tokens", "FILE", "the token file of `mnemo-kb serve --tokens`", &file);
    if (!p.parse(argc, argv, 3)) return 0;
    if (name.empty()) throw app::UsageError("missing --name NAME");
    if (file.empty()) throw app::UsageError("missing --tokens FILE");
    if (scope != "read" && scope != "admin" && scope != "shard") throw app::UsageError("--scope must be read, admin or shard");
    if (!valid_token_name(name)) throw app::UsageError("--name must be 1..64 characters of [A-Za-z0-9._-]");
    const PreparedToken t = prepare_token(file, name, scope == "admin" ? TokenScope::Admin : scope == "shard" ? TokenScope::Shard : TokenScope::Read);
    // The token is shown first and stored only once it has surely left: a token nobody saw
    // (stdout on a full disk or a closed pipe) must never become valid.
    print_or_throw(t.token + "\n");
    try {
        commit_token(t);
    } catch (const std::exception& e) {
        throw Error(std::string(e.what()) + "; the token printed above was NOT added and will not work");
    }
    std::fprintf(stderr, "mnemo-kb token: added '%s' (%s) to '%s'; the token above is shown only now\n", name.c_str(), scope.c_str(),
                 printable(file).c_str());
    return 0;
}

}  // namespace mnemo::kb
