// A small declarative argument parser for the subcommands of Mnemo's programs. Each option is
// declared with its names, a value placeholder and help text, and writes straight into the
// caller's variable. Malformed input throws UsageError with a message naming the flag and what it
// expected; dispatch() (app/dispatch.hpp) turns that into exit code 2 and a
// "see <program> <cmd> --help" hint.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mnemo::app {

class UsageError : public std::runtime_error {
public:
    explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

// Strict number parsing for flag values (whole string, in range). Throw UsageError naming `what`.
int64_t parse_int(const std::string& text, const std::string& what, int64_t min, int64_t max);
double parse_double(const std::string& text, const std::string& what);
// "1,8,16" -> {1, 8, 16}; every item checked like parse_int.
std::vector<int64_t> parse_int_list(const std::string& text, const std::string& what, int64_t min,
                                    int64_t max);
std::vector<std::string> split(const std::string& text, char sep);

class ArgParser {
public:
    ArgParser(std::string command, std::string usage, std::string description);

    // `names` is "-m,--model" or "--seed". Values come as "--name V", "--name=V" or "-m V".
    ArgParser& string_opt(const std::string& names, const std::string& metavar, const std::string& help,
                          std::string* out);
    ArgParser& int_opt(const std::string& names, const std::string& metavar, const std::string& help,
                       int32_t* out, int32_t min, int32_t max);
    ArgParser& u64_opt(const std::string& names, const std::string& metavar, const std::string& help,
                       uint64_t* out);
    ArgParser& float_opt(const std::string& names, const std::string& metavar, const std::string& help,
                         float* out, float min, float max);
    // Where a value is compared with doubles (a float would turn 0.7 into 0.69999998).
    ArgParser& double_opt(const std::string& names, const std::string& metavar, const std::string& help,
                          double* out, double min, double max);
    // Repeatable: each occurrence appends.
    ArgParser& list_opt(const std::string& names, const std::string& metavar, const std::string& help,
                        std::vector<std::string>* out);
    ArgParser& flag(const std::string& names, const std::string& help, bool* out);
    // Generic: `apply` receives the value text and may throw UsageError.
    ArgParser& custom_opt(const std::string& names, const std::string& metavar, const std::string& help,
                          std::function<void(const std::string&)> apply);
    // An old name of the option `name` (declared before), kept so scripts using it still work:
    // not listed by --help, and each use prints one line on stderr naming the new one.
    ArgParser& deprecated_alias(const std::string& old_name, const std::string& name);

    // Parse argv[first..argc). Returns false when --help was given (help already printed to stdout).
    bool parse(int argc, char** argv, int first);
    // True when the option (any of its names) appeared on the command line.
    bool given(const std::string& name) const;
    std::string help() const;
    const std::string& command() const { return command_; }

private:
    struct Option {
        std::vector<std::string> names;
        std::vector<std::string> deprecated;  // old names (deprecated_alias), not in --help
        std::string metavar;  // empty: a boolean flag
        std::string help;
        // Receives the name the user typed (for messages) and the value.
        std::function<void(const std::string&, const std::string&)> apply;
        bool seen = false;
    };
    Option* find(const std::string& name);
    ArgParser& add(const std::string& names, const std::string& metavar, const std::string& help,
                   std::function<void(const std::string&, const std::string&)> apply);

    std::string command_;
    std::string usage_;
    std::string description_;
    std::vector<Option> options_;
};

}  // namespace mnemo::app
