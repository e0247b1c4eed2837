// Runs a command line as a separate process (through the shell) and collects its exit code and
// its stdout and stderr together; used by the tests that drive the `mnemo` program.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

namespace mnemo::testing {

struct ProcessResult {
    int code = -1;       // exit status, or 128 + signal
    std::string output;  // stdout and stderr together
};

inline std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// `env` is a prefix such as "MNEMO_VK_VISIBLE_DEVICES=99 " (empty for none). coreutils timeout
// turns a hang into a failure (exit 124) instead of a stuck test run.
// `program` is an executable of the build (mnemo, mnemo-kb); `seconds` bounds its run.
inline ProcessResult run_program(const std::string& program, const std::string& args, int seconds = 120,
                                 const std::string& stdin_file = "/dev/null", const std::string& env = "") {
    ProcessResult r;
    const std::string cmd = env + "timeout -k 5 " + std::to_string(seconds) + " " +
                            shell_quote(std::string(MNEMO_BUILD_BIN) + "/" + program) + " " + args + " <" +
                            shell_quote(stdin_file) + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

inline ProcessResult run_mnemo(const std::string& args, const std::string& stdin_file = "/dev/null",
                               const std::string& env = "") {
    return run_program("mnemo", args, 120, stdin_file, env);
}

// The run ended with exit code `code` and its output mentions every part; a failure names each
// difference and shows the whole output.
inline ::testing::AssertionResult exited_with(const ProcessResult& r, int code,
                                              const std::vector<std::string>& mentions = {}) {
    std::string wrong;
    if (r.code != code) wrong += "exit code " + std::to_string(r.code) + ", expected " + std::to_string(code) + "\n";
    for (const std::string& part : mentions)
        if (r.output.find(part) == std::string::npos) wrong += "output does not mention \"" + part + "\"\n";
    if (wrong.empty()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << wrong << "output:\n" << r.output;
}

}  // namespace mnemo::testing
