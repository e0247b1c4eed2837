#include "app/args.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <stdexcept>

namespace mnemo::app {

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        const size_t at = text.find(sep, start);
        parts.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
        if (at == std::string::npos) break;
        start = at + 1;
    }
    return parts;
}

int64_t parse_int(const std::string& text, const std::string& what, int64_t min, int64_t max) {
    const std::string range = " (" + std::to_string(min) + ".." + std::to_string(max) + ")";
    if (text.empty()) throw UsageError(what + " expects an integer" + range + ", got an empty value");
    // strtoll accepts leading spaces and '+'; reject them so "1 " or " 1" is not silently read.
    if (text.front() == ' ' || text.front() == '+') {
        throw UsageError(what + " expects an integer" + range + ", got '" + text + "'");
    }
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (end != text.c_str() + text.size()) {
        throw UsageError(what + " expects an integer" + range + ", got '" + text + "'");
    }
    if (errno == ERANGE || v < min || v > max) {
        throw UsageError(what + " expects an integer" + range + ", got " + text);
    }
    return v;
}

double parse_double(const std::string& text, const std::string& what) {
    if (text.empty() || text.front() == ' ') {
        throw UsageError(what + " expects a number, got '" + text + "'");
    }
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) {
        throw UsageError(what + " expects a finite number, got '" + text + "'");
    }
    return v;
}

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& what, int64_t min,
                                    int64_t max) {
    std::vector<int64_t> out;
    for (const std::string& item : split(text, ',')) {
        out.push_back(parse_int(item, what + " item", min, max));
    }
    return out;
}

ArgParser::ArgParser(std::string command, std::string usage, std::string description)
    : command_(std::move(command)), usage_(std::move(usage)), description_(std::move(description)) {}

ArgParser& ArgParser::add(const std::string& names, const std::string& metavar, const std::string& help,
                          std::function<void(const std::string&, const std::string&)> apply) {
    Option o;
    o.names = split(names, ',');
    o.metavar = metavar;
    o.help = help;
    o.apply = std::move(apply);
    options_.push_back(std::move(o));
    return *this;
}

ArgParser& ArgParser::string_opt(const std::string& names, const std::string& metavar,
                                 const std::string& help, std::string* out) {
    return add(names, metavar, help, [out](const std::string&, const std::string& v) { *out = v; });
}

ArgParser& ArgParser::int_opt(const std::string& names, const std::string& metavar, const std::string& help,
                              int32_t* out, int32_t min, int32_t max) {
    return add(names, metavar, help, [=](const std::string& flag, const std::string& v) {
        *out = static_cast<int32_t>(parse_int(v, flag, min, max));
    });
}

ArgParser& ArgParser::u64_opt(const std::string& names, const std::string& metavar, const std::string& help,
                              uint64_t* out) {
    return add(names, metavar, help, [=](const std::string& flag, const std::string& v) {
        if (v.empty() || v.front() < '0' || v.front() > '9') {
            throw UsageError(flag + " expects a non-negative integer, got '" + v + "'");
        }
        errno = 0;
        char* end = nullptr;
        const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
        if (end != v.c_str() + v.size() || errno == ERANGE) {
            throw UsageError(flag + " expects a non-negative integer below 2^64, got '" + v + "'");
        }
        *out = x;
    });
}

namespace {

// A number in [min, max], or a UsageError naming the flag and the range.
double parse_in_range(const std::string& flag, const std::string& v, double min, double max) {
    const double x = parse_double(v, flag);
    if (x < min || x > max) {
        char buf[128];
        std::snprintf(buf, sizeof buf, " expects a number in [%g, %g], got ", min, max);
        throw UsageError(flag + buf + v);
    }
    return x;
}

}  // namespace

ArgParser& ArgParser::float_opt(const std::string& names, const std::string& metavar,
                                const std::string& help, float* out, float min, float max) {
    return add(names, metavar, help, [=](const std::string& flag, const std::string& v) {
        *out = static_cast<float>(parse_in_range(flag, v, min, max));
    });
}

ArgParser& ArgParser::double_opt(const std::string& names, const std::string& metavar,
                                 const std::string& help, double* out, double min, double max) {
    return add(names, metavar, help,
               [=](const std::string& flag, const std::string& v) { *out = parse_in_range(flag, v, min, max); });
}

ArgParser& ArgParser::list_opt(const std::string& names, const std::string& metavar,
                               const std::string& help, std::vector<std::string>* out) {
    return add(names, metavar, help, [out](const std::string&, const std::string& v) { out->push_back(v); });
}

ArgParser& ArgParser::flag(const std::string& names, const std::string& help, bool* out) {
    return add(names, "", help, [out](const std::string&, const std::string&) { *out = true; });
}

ArgParser& ArgParser::custom_opt(const std::string& names, const std::string& metavar,
                                 const std::string& help, std::function<void(const std::string&)> apply) {
    return add(names, metavar, help,
               [apply = std::move(apply)](const std::string&, const std::string& v) { apply(v); });
}

ArgParser& ArgParser::deprecated_alias(const std::string& old_name, const std::string& name) {
    Option* o = find(name);
    if (o == nullptr) throw std::logic_error("deprecated_alias: no option " + name);
    o->deprecated.push_back(old_name);
    return *this;
}

ArgParser::Option* ArgParser::find(const std::string& name) {
    for (Option& o : options_) {
        for (const std::string& n : o.names) {
            if (n == name) return &o;
        }
        for (const std::string& n : o.deprecated) {
            if (n == name) return &o;
        }
    }
    return nullptr;
}

bool ArgParser::given(const std::string& name) const {
    for (const Option& o : options_) {
        for (const std::string& n : o.names) {
            if (n == name) return o.seen;
        }
    }
    return false;
}

bool ArgParser::parse(int argc, char** argv, int first) {
    for (int i = first; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            std::fputs(help().c_str(), stdout);
            return false;
        }
        if (arg.size() < 2 || arg[0] != '-') {
            throw UsageError("unexpected argument '" + arg + "' (" + command_ +
                             " takes no positional arguments)");
        }
        std::string value;
        bool inline_value = false;
        if (arg.rfind("--", 0) == 0) {
            const size_t eq = arg.find('=');
            if (eq != std::string::npos) {
                value = arg.substr(eq + 1);
                arg.resize(eq);
                inline_value = true;
            }
        }
        Option* o = find(arg);
        if (o == nullptr) throw UsageError("unknown option '" + arg + "'");
        if (std::find(o->deprecated.begin(), o->deprecated.end(), arg) != o->deprecated.end()) {
            const std::string program = std::filesystem::path(argc > 0 ? argv[0] : "").filename().string();
            std::fprintf(stderr, "%s %s: %s is deprecated; use %s\n", program.c_str(), command_.c_str(), arg.c_str(),
                         o->names.back().c_str());
        }
        if (o->metavar.empty()) {
            if (inline_value) throw UsageError(arg + " takes no value, got '" + value + "'");
            o->apply(arg, "");
        } else {
            if (!inline_value) {
                if (i + 1 >= argc) throw UsageError(arg + " expects a value (" + o->metavar + ")");
                value = argv[++i];
            }
            o->apply(arg, value);
        }
        o->seen = true;
    }
    return true;
}

std::string ArgParser::help() const {
    std::string out = "usage: " + usage_ + "\n\n" + description_ + "\n\noptions:\n";
    for (const Option& o : options_) {
        std::string left = "  ";
        for (size_t i = 0; i < o.names.size(); ++i) {
            if (i > 0) left += ", ";
            left += o.names[i];
        }
        if (!o.metavar.empty()) left += " " + o.metavar;
        if (left.size() < 28) {
            left.append(28 - left.size(), ' ');
        } else {
            left += "\n" + std::string(28, ' ');
        }
        out += left + o.help + "\n";
    }
    out += "  -h, --help                show this help\n";
    return out;
}

}  // namespace mnemo::app
