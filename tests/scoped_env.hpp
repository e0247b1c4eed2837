// An environment variable set (or unset, value nullptr) for a scope, restored on exit: tests that
// take another path of a module by its switches (MNEMO_VK_FORCE_STAGING, MNEMO_CPU_ISA, ...).
#pragma once

#include <cstdlib>
#include <string>

namespace mnemo::test {

struct ScopedEnv {
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) had_ = true, old_ = old;
        if (value) setenv(name, value, 1);
        else unsetenv(name);
    }
    ~ScopedEnv() {
        if (had_) setenv(name_, old_.c_str(), 1);
        else unsetenv(name_);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    bool had_ = false;
    std::string old_;
};

}  // namespace mnemo::test
